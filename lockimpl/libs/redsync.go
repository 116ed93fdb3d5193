package libs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/lockimpl"
)

// redsyncVersion is the version of github.com/go-redsync/redsync/v4 in go.mod, whose
// behaviour the table below describes.
const redsyncVersion = "v4.18.1"

// The adapter is built in three variants, one per range of redsync's API (the build tag
// is chosen by releases.GoTags from the version a release is built against):
//
//	file                  tag              releases          what differs
//	redsync_current.go    (none)           v4.12.0 –         redsync's go-redis v9 pool, Until, the typed errors of the table below
//	redsync_v4pre12.go    redsync_v4pre12  v4.7.0 – v4.11.x  no ErrLockAlreadyExpired, no WithSetNXOnExtend (v4.12.0); ErrTaken and
//	                                                         ErrNodeTaken are values before v4.8.0
//	redsync_v4pre7.go     redsync_v4pre7   v4.2.0 – v4.6.x   no typed errors (v4.7.0): a failure is classified by its (ok, err) alone
//
// The two old variants share redsync_old.go: a redsync redis.Pool over go-redis v9 (redsync's
// own arrived with v4.6.0 on the pre-release module github.com/go-redis/redis/v9, and on
// github.com/redis/go-redis/v9 with v4.8.0), the lease's end computed as redsync computes
// its Until (start + ttl − ttl·0.01; Until itself arrived with v4.4.0), and set_nx_on_extend
// refused naming v4.12.0. Releases before v4.2.0 have no WithValue, by which the adapter acts
// on a lease from its token, and v4.0.0 – v4.0.2 pass a context to every redis.Conn
// command: no variant covers them, and releases.GoTags says so before building.

// redsyncLock adapts redsync, a Redlock implementation: one go-redis pool per server,
// quorum N/2+1, SET NX PX on every server in parallel, validity = expiry − elapsed −
// expiry·driftFactor (0.01). Library defaults are kept (drift factor, timeout factor
// 0.05, token generator), except WithTries(1): the workload retries by itself after a
// refusal, and a library retry loop would hide the refusals from the history. A plan may
// set tries, retry_delay and set_nx_on_extend as redsync's users do (redsyncOptions).
//
// How redsync's errors are classified (v4.18.1, mutex.go). redsync joins one error per
// server (errors.Join) unless a quorum answered "taken", then it returns only ErrTaken.
//
//	operation  library result                                      outcome  why
//	acquire    *ErrTaken                                           fail     a quorum holds another token: ours can be on a minority at most
//	acquire    join of *ErrNodeTaken only, successes < quorum      fail     every server answered; we never had a quorum (redsync deletes what it got)
//	acquire    join of *ErrNodeTaken only, successes ≥ quorum      unknown  a quorum granted but the validity was used up; redsync's clean-up result is discarded
//	acquire    ErrFailed                                           unknown  same: all servers granted, validity used up, clean-up unreported
//	acquire    any *RedisError (network, timeout, server error)    unknown  that server may have applied SET NX, and the clean-up result is discarded
//	release    (true, nil)                                         ok       deleted on a quorum
//	release    *ErrTaken, or ErrNodeTaken/ErrLockAlreadyExpired    fail     every server answered and fewer than a quorum held our token
//	release    any *RedisError                                     unknown  that server may have deleted the key
//	extend     (true, nil)                                         ok       PEXPIRE on a quorum within the validity
//	extend     *ErrTaken, or join of *ErrNodeTaken only            fail     every server answered and fewer than a quorum held our token
//	extend     ErrExtendFailed                                     unknown  a quorum DID reset the expiry, but the validity was used up: the lock is held
//	extend     any *RedisError                                     unknown  that server may have reset the expiry
//
// A connection refused is a *RedisError too and counts as unknown, like every network
// error here (nothing in redsync's error says whether the command left the client).
//
// Lease: Token is mutex.Value() (redsync's own base64 random value). redsync's Until is a
// system-clock instant; the adapter reads the validity left (Until − time.Now()) right
// after the call and counts it from Config.Clock's now, capped at the start of the call
// plus ttl. Release and extend build a mutex for the lease with WithValue(token) — the
// library's documented way to act on a lock from elsewhere — and, for extend,
// WithExpiry(ttl): redsync extends by the mutex's expiry, so a new mutex carries the new
// ttl. No fencing token.
type redsyncLock struct {
	name    string
	rs      *redsync.Redsync
	clients []redis.UniversalClient
	quorum  int // redsync's own: len(pools)/2 + 1
	clock   lockimpl.Clock
	step    lockimpl.StepFunc
	acquire []redsync.Option // the plan's options for a lock (tries, retry delay)
	extend  []redsync.Option // and for an extension (SET NX on extend)
}

var _ lockimpl.Locker = (*redsyncLock)(nil)

// redsync's options as its users set them (impl_options).
func redsyncTries() lockimpl.Option {
	return lockimpl.Option{
		Name: "tries", Kind: lockimpl.KindInt, Default: 1, Values: []any{3, 32}, Min: 1, Max: 64,
		Doc: "WithTries: attempts per acquire (the library's default is 32; locklab's 1 shows every refusal in the history)",
	}
}

func redsyncRetryDelay() lockimpl.Option {
	return lockimpl.Option{
		Name: "retry_delay", Kind: lockimpl.KindDuration, Default: time.Duration(0), Values: []any{10 * time.Millisecond}, Max: int64(time.Second),
		Neutral: true,
		Doc:     "WithRetryDelay between tries; 0: the library's random 50–250 ms",
	}
}

func redsyncSetNXOnExtend() lockimpl.Option {
	return lockimpl.Option{
		Name: "set_nx_on_extend", Kind: lockimpl.KindBool, Default: false, Values: []any{true},
		Doc: "WithSetNXOnExtend: an extension sets the key again where it is missing (a restarted server), instead of failing there",
	}
}

func redsyncOptions() []lockimpl.Option {
	return []lockimpl.Option{redsyncTries(), redsyncRetryDelay(), redsyncSetNXOnExtend()}
}

// newRedsync builds the adapter over one pool per cfg.Addrs: go-redis clients from
// Config.Client, so each command is sent once (redsync's goredis pool calls the client's
// commands directly: Get returns a wrapper around the *redis.Client). On a Redis Cluster
// (cfg.Cluster) one pool holds the cluster client, which redsync's goredis pool takes as
// it takes any go-redis client: a Redlock of one "node", the cluster.
func newRedsync(cfg lockimpl.Config) (lockimpl.Locker, error) {
	cfg = cfg.WithDefaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("redsync: no lock servers")
	}
	l := &redsyncLock{name: "redsync", clock: cfg.Clock, step: cfg.Step}
	if cfg.Cluster {
		cc, err := cfg.ClusterClient()
		if err != nil {
			return nil, fmt.Errorf("redsync: %w", err)
		}
		l.clients = []redis.UniversalClient{cc}
	} else {
		for _, addr := range cfg.Addrs {
			l.clients = append(l.clients, cfg.Client(addr))
		}
	}
	l.quorum = len(l.clients)/2 + 1
	pools := make([]redsyncredis.Pool, len(l.clients))
	for i, c := range l.clients {
		pools[i] = redsyncPool(c)
	}
	l.rs = redsync.New(pools...)
	l.acquire = []redsync.Option{redsync.WithTries(redsyncTries().Int(cfg.Options))}
	if d := redsyncRetryDelay().Duration(cfg.Options); d > 0 {
		l.acquire = append(l.acquire, redsync.WithRetryDelay(d))
	}
	if redsyncSetNXOnExtend().Bool(cfg.Options) {
		o, err := redsyncSetNXOnExtendOption()
		if err != nil {
			return nil, fmt.Errorf("redsync: option set_nx_on_extend: %w", err)
		}
		l.extend = append(l.extend, o)
	}
	l.warm(cfg.Timeout)
	return l, nil
}

// warm opens one connection to every node, as an application's pool is open before its
// first lock: redsync gives each acquire only 5% of the TTL, dial included, and a cold
// pool would turn the first acquires into timeouts that say nothing about the lock. A node
// that does not answer is left for the acquires to find.
func (l *redsyncLock) warm(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range l.clients {
		wg.Go(func() { _ = c.Ping(ctx).Err() })
	}
	wg.Wait()
}

// Acquire implements Locker.
func (l *redsyncLock) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	ttl, err := lockimpl.CheckArgs(key, ttl)
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire: %w", l.name, err)
	}
	m := l.rs.NewMutex(key, append([]redsync.Option{redsync.WithExpiry(ttl)}, l.acquire...)...)
	start, sys := l.clock.Now(), time.Now()
	if err := m.LockContext(ctx); err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, l.classify(err, lockimpl.ErrNotAcquired))
	}
	if err := lockimpl.CallStep(ctx, l.step, lockimpl.StepGranted); err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	return l.lease(key, m, start, redsyncUntil(m, sys, ttl), ttl), nil
}

// Release implements Locker.
func (l *redsyncLock) Release(ctx context.Context, lease lockimpl.Lease) error {
	m := l.rs.NewMutex(lease.Key, redsync.WithValue(lease.Token))
	ok, err := m.UnlockContext(ctx)
	if !ok {
		return fmt.Errorf("%s: release %q: %w", l.name, lease.Key, l.classify(err, lockimpl.ErrNotHeld))
	}
	return nil
}

// Extend implements Locker: a mutex with the lease's token and the new expiry.
func (l *redsyncLock) Extend(ctx context.Context, lease lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	ttl, err := lockimpl.CheckArgs(lease.Key, ttl)
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: extend: %w", l.name, err)
	}
	m := l.rs.NewMutex(lease.Key, append([]redsync.Option{redsync.WithExpiry(ttl), redsync.WithValue(lease.Token)}, l.extend...)...)
	start, sys := l.clock.Now(), time.Now()
	ok, err := m.ExtendContext(ctx)
	if !ok {
		return lockimpl.Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, l.classify(err, lockimpl.ErrNotHeld))
	}
	return l.lease(lease.Key, m, start, redsyncUntil(m, sys, ttl), ttl), nil
}

// Close implements Locker.
func (l *redsyncLock) Close() error {
	var errs []error
	for _, c := range l.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// lease is what a successful call that started at start (by l.clock) granted: the
// validity until (by the system clock, redsync's), moved to l.clock, never beyond
// start + ttl.
func (l *redsyncLock) lease(key string, m *redsync.Mutex, start, until time.Time, ttl time.Duration) lockimpl.Lease {
	left := time.Until(until)
	now := l.clock.Now()
	deadline := now.Add(left)
	if limit := start.Add(ttl); deadline.After(limit) {
		deadline = limit
	}
	return lockimpl.Lease{Key: key, Token: m.Value(), Deadline: deadline, Validity: deadline.Sub(now)}
}

// classify maps a redsync error (see the table above) to a refusal wrapping kind, or
// returns it as it is (unknown). err may be nil when the library reported failure
// without one: from v4.7.0 its code never does, and that stays unknown; before, it is
// the definite refusal (redsyncRefused of the variant says).
func (l *redsyncLock) classify(err error, kind error) error {
	refused := redsyncRefused(err, len(l.clients), l.quorum)
	switch {
	case refused && err == nil: // before v4.7.0: (false, nil), see redsync_v4pre7.go
		return refusal(kind, errors.New("redsync answered false without an error: every server answered and fewer than a quorum held the token"))
	case refused:
		return refusal(kind, err)
	case err == nil:
		return errors.New("redsync reported failure without an error")
	}
	return err
}

// redsyncRefusedBy is redsyncRefused given the variant's tests: taken, a quorum answered
// with another token; nodeRefused, one server did.
func redsyncRefusedBy(err error, nodes, quorum int, taken, nodeRefused func(error) bool) bool {
	if taken(err) {
		return true
	}
	refused := 0
	for _, e := range redsyncLeaves(err) {
		if !nodeRefused(e) { // *RedisError, ErrFailed, ErrExtendFailed, anything new: unknown
			return false
		}
		refused++
	}
	return refused > 0 && nodes-refused < quorum
}

// redsyncLeaves flattens redsync's joined errors into the per-server errors: errors.Join
// (v4.17.0 on, nested as redsync joins one at a time) and hashicorp/go-multierror before.
func redsyncLeaves(err error) []error {
	var inner []error
	switch j := err.(type) {
	case interface{ Unwrap() []error }:
		inner = j.Unwrap()
	case interface{ WrappedErrors() []error }:
		inner = j.WrappedErrors()
	default:
		return []error{err}
	}
	var leaves []error
	for _, e := range inner {
		leaves = append(leaves, redsyncLeaves(e)...)
	}
	return leaves
}
