package consensus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/locklab/locklab/lockimpl"
)

// etcdVersion is the version of go.etcd.io/etcd/client/v3 in go.mod (the members run the
// server of the same release), whose behaviour the table below describes.
const etcdVersion = "v3.7.3"

// etcdLock adapts etcd's lock recipe, package go.etcd.io/etcd/client/v3/concurrency, as
// its users call it: a Session (a lease kept alive by the client) and a Mutex on it.
//
// How the library works (v3.7.3): NewSession grants a lease and keeps it alive in the
// background (Lease.KeepAlive: a refresh every TTL/3, the lease considered gone by the
// client once no refresh came back for TTL; Session.Done then closes). Mutex.TryLock
// puts the key <prefix>/<lease id> attached to the lease, in a transaction that also reads
// the key of the prefix created first: the lock is ours when that is our key, else
// TryLock deletes our key and returns ErrLocked. Unlock deletes our key. The lock is gone
// when its key is: at Unlock, or when the server expires the lease (a client that could
// not refresh it for TTL, e.g. a paused process).
//
// How the adapter calls it, and why:
//   - TTL → the session lease's TTL, which etcd counts in whole seconds: the plan's ttl
//     rounded up, at least 1 s (with the members' 50 ms heartbeat and 500 ms election
//     timeout etcd's own minimum is 1 s). The lease is granted by Lease.Grant bounded by
//     Config.Timeout, then handed to NewSession (WithLease): NewSession's own grant has no
//     timeout.
//   - One try per acquire: TryLock (Lock would wait in the queue of the prefix).
//   - Fence: the lock key's create revision (Mutex.Header().Revision, the revision of the
//     transaction that created it, since every acquire has a lease, so a key, of its own).
//     It grows strictly with every write to the cluster, so across grants.
//   - Granted: the lease's TTL as etcd granted it (LeaseGrant's answer), on the lease and,
//     for an error after the grant (the lock key may exist), in a GrantedError: the lock
//     may be held that long, longer than the TTL asked for below 1 s.
//   - Deadline: the call's start (Config.Clock) + the granted TTL, then, with every
//     keep-alive answer, its arrival + TTL: the deadline the library itself keeps (it
//     closes Session.Done when it passes). The server refreshed the lease before the
//     answer left it, so this is later than the server's expiry by up to the answer's
//     time in flight: the library's view, which a delayed answer stretches.
//   - Current reports false once Session.Done closed (the client gave the lease up, or a
//     refresh was refused: the server had expired it).
//   - Extend: ErrUnsupported, nothing sent (the session renews by itself).
//   - A crash at StepGranted stops the refreshes without revoking (Session.Orphan), as a
//     dead process would: the key lives until the server expires the lease.
//
// How its errors are classified:
//
//	operation  library result                       outcome  why
//	acquire    Grant error                          unknown  nothing was put, but nothing was refused either: a fail
//	                                                         would say the lock is someone else's (L1 reads it so)
//	acquire    TryLock: ErrLocked                   fail     another key of the prefix was created first; ours was deleted
//	acquire    TryLock: any other error             unknown  the put may have run; the lease is revoked (best effort)
//	release    Session.Done already closed          fail     the library had lost the lease before the release
//	release    Unlock: nil                          ok       our key is deleted (the result does not say whether it was still there)
//	release    Unlock: error                        unknown  the delete may have run; the lease is revoked (best effort)
//	extend     —                                    ErrUnsupported, nothing sent
type etcdLock struct {
	cli     *clientv3.Client
	watch   *leaseWatch
	timeout time.Duration
	clock   lockimpl.Clock
	step    lockimpl.StepFunc

	mu      sync.Mutex
	crashed bool
	leases  map[string]*etcdLease // live leases by Lease.Token
}

// etcdLease is one granted lock.
type etcdLease struct {
	session *concurrency.Session
	mutex   *concurrency.Mutex
}

var (
	_ lockimpl.Locker  = (*etcdLock)(nil)
	_ lockimpl.Renewer = (*etcdLock)(nil)
	_ lockimpl.Crasher = (*etcdLock)(nil)
)

// Etcd is the consensus baseline: etcd's own lock recipe on an etcd cluster (topology
// etcd). locks.All registers it after the Redis locks.
func Etcd() lockimpl.Impl {
	return lockimpl.Impl{
		Name: "etcd",
		Description: "go.etcd.io/etcd/client/v3/concurrency " + etcdVersion + " Mutex (TryLock) on a Session whose lease has the plan's ttl in whole seconds (≥ 1 s) and is kept alive by the client; " +
			"fence: the lock key's create revision",
		Fencing:  true,
		Topology: "etcd",
		Steps:    []string{lockimpl.StepGranted},
		NoExtend: true,
		Renews:   true,
		New:      newEtcdLock,
	}
}

func newEtcdLock(cfg lockimpl.Config) (lockimpl.Locker, error) {
	cfg = cfg.WithDefaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("etcd: no member addresses")
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Addrs,
		DialTimeout: cfg.Timeout,
		Logger:      zap.NewNop(),
		// Without keepalive probes of its own a client would find a dead connection only
		// when a request times out.
		DialKeepAliveTime:    cfg.Timeout,
		DialKeepAliveTimeout: cfg.Timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	w := &leaseWatch{Lease: cli.Lease, clock: cfg.Clock, deadlines: map[clientv3.LeaseID]time.Time{}}
	cli.Lease = w // the session's KeepAlive goes through it
	return &etcdLock{cli: cli, watch: w, timeout: cfg.Timeout, clock: cfg.Clock, step: cfg.Step, leases: map[string]*etcdLease{}}, nil
}

// leaseSeconds is ttl as etcd takes it: whole seconds, rounded up, at least 1.
func leaseSeconds(ttl time.Duration) int64 {
	return max(1, int64(math.Ceil(ttl.Seconds())))
}

// Acquire implements Locker.
func (l *etcdLock) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	ttl, err := lockimpl.CheckArgs(key, ttl)
	if err != nil {
		return lockimpl.Lease{}, err
	}
	start := l.clock.Now()
	opCtx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	grant, err := l.cli.Grant(opCtx, leaseSeconds(ttl))
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("etcd: grant a lease: %w", err)
	}
	granted := time.Duration(grant.TTL) * time.Second
	l.watch.started(grant.ID, start.Add(granted))
	s, err := concurrency.NewSession(l.cli, concurrency.WithLease(grant.ID), concurrency.WithTTL(int(grant.TTL)),
		concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		l.revoke(grant.ID)
		return lockimpl.Lease{}, fmt.Errorf("etcd session: %w", err)
	}
	// Past the grant, a lock key that may exist lives on the granted lease, not the TTL
	// asked for: errors say so (GrantedError), for the history and its L1 check.
	onGrant := func(err error) error { return &lockimpl.GrantedError{Granted: granted, Err: err} }
	m := concurrency.NewMutex(s, key)
	if err := m.TryLock(opCtx); err != nil {
		l.closeSession(s)
		if errors.Is(err, concurrency.ErrLocked) {
			return lockimpl.Lease{}, fmt.Errorf("%w: %v", lockimpl.ErrNotAcquired, err)
		}
		return lockimpl.Lease{}, onGrant(fmt.Errorf("etcd try-lock: %w", err))
	}
	lease := lockimpl.Lease{
		Key:      key,
		Token:    m.Key(),
		Fence:    m.Header().Revision,
		Deadline: l.watch.deadline(grant.ID),
		Granted:  granted,
	}
	lease.Validity = lease.Deadline.Sub(l.clock.Now())
	if err := lockimpl.CallStep(ctx, l.step, lockimpl.StepGranted); err != nil {
		s.Orphan() // a dead process refreshes nothing and revokes nothing
		return lockimpl.Lease{}, onGrant(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.crashed {
		s.Orphan()
		return lockimpl.Lease{}, onGrant(errors.New("etcd: client crashed"))
	}
	l.leases[lease.Token] = &etcdLease{session: s, mutex: m}
	return lease, nil
}

// Current implements Renewer.
func (l *etcdLock) Current(lease lockimpl.Lease) (lockimpl.Lease, bool) {
	l.mu.Lock()
	el := l.leases[lease.Token]
	l.mu.Unlock()
	if el == nil {
		return lease, false
	}
	select {
	case <-el.session.Done():
		return lease, false
	default:
	}
	lease.Deadline = l.watch.deadline(el.session.Lease())
	lease.Validity = lease.Deadline.Sub(l.clock.Now())
	return lease, true
}

// Release implements Locker.
func (l *etcdLock) Release(ctx context.Context, lease lockimpl.Lease) error {
	l.mu.Lock()
	el := l.leases[lease.Token]
	delete(l.leases, lease.Token)
	l.mu.Unlock()
	if el == nil {
		return fmt.Errorf("%w: no live session for %s", lockimpl.ErrNotHeld, lease.Token)
	}
	select {
	case <-el.session.Done():
		l.closeSession(el.session)
		return fmt.Errorf("%w: the session's lease was lost before the release", lockimpl.ErrNotHeld)
	default:
	}
	opCtx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	err := el.mutex.Unlock(opCtx)
	l.closeSession(el.session)
	if err != nil {
		return fmt.Errorf("etcd unlock: %w", err)
	}
	return nil
}

// Extend implements Locker: the session renews the lease by itself.
func (l *etcdLock) Extend(context.Context, lockimpl.Lease, time.Duration) (lockimpl.Lease, error) {
	return lockimpl.Lease{}, lockimpl.ErrUnsupported
}

// closeSession ends a session's refreshes and revokes its lease, bounded by the timeout.
func (l *etcdLock) closeSession(s *concurrency.Session) {
	s.Orphan()
	l.revoke(s.Lease())
}

func (l *etcdLock) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	_, _ = l.cli.Revoke(ctx, id)
	l.watch.forget(id)
}

// Crash implements Crasher: every session stops refreshing, nothing is revoked or
// deleted, and the client's connections close, as when its process dies.
func (l *etcdLock) Crash() {
	l.mu.Lock()
	l.crashed = true
	leases := l.leases
	l.leases = map[string]*etcdLease{}
	l.mu.Unlock()
	for _, el := range leases {
		el.session.Orphan()
	}
	_ = l.cli.Close()
}

// Close implements Locker: live leases are revoked (their keys go with them), then the
// client closes. After a Crash nothing is left to revoke.
func (l *etcdLock) Close() error {
	l.mu.Lock()
	leases := l.leases
	l.leases = map[string]*etcdLease{}
	crashed := l.crashed
	l.mu.Unlock()
	for _, el := range leases {
		l.closeSession(el.session)
	}
	if crashed {
		return nil
	}
	return l.cli.Close()
}

// leaseWatch is the client's Lease with every keep-alive answer noted: the deadline of
// each lease as the library knows it (the answer's arrival + its TTL).
type leaseWatch struct {
	clientv3.Lease
	clock lockimpl.Clock

	mu        sync.Mutex
	deadlines map[clientv3.LeaseID]time.Time
}

func (w *leaseWatch) started(id clientv3.LeaseID, deadline time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deadlines[id] = deadline
}

func (w *leaseWatch) forget(id clientv3.LeaseID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.deadlines, id)
}

func (w *leaseWatch) deadline(id clientv3.LeaseID) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deadlines[id]
}

// KeepAlive passes the library's keep-alive answers on, noting each one's deadline. It
// never blocks the library: once ctx ends, answers are noted and dropped.
func (w *leaseWatch) KeepAlive(ctx context.Context, id clientv3.LeaseID) (<-chan *clientv3.LeaseKeepAliveResponse, error) {
	in, err := w.Lease.KeepAlive(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(chan *clientv3.LeaseKeepAliveResponse, 1)
	go func() {
		defer close(out)
		for r := range in {
			w.mu.Lock()
			if _, live := w.deadlines[id]; live {
				w.deadlines[id] = w.clock.Now().Add(time.Duration(r.TTL) * time.Second)
			}
			w.mu.Unlock()
			select {
			case out <- r:
			case <-ctx.Done():
			}
		}
	}()
	return out, nil
}
