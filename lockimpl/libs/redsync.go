package libs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/lockimpl"
)

// redsyncVersion is the version of github.com/go-redsync/redsync/v4 in go.mod, whose
// behaviour the table below describes.
const redsyncVersion = "v4.18.1"

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
		pools[i] = goredis.NewPool(c)
	}
	l.rs = redsync.New(pools...)
	l.acquire = []redsync.Option{redsync.WithTries(redsyncTries().Int(cfg.Options))}
	if d := redsyncRetryDelay().Duration(cfg.Options); d > 0 {
		l.acquire = append(l.acquire, redsync.WithRetryDelay(d))
	}
	if redsyncSetNXOnExtend().Bool(cfg.Options) {
		l.extend = append(l.extend, redsync.WithSetNXOnExtend())
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
	start := l.clock.Now()
	if err := m.LockContext(ctx); err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, l.classify(err, lockimpl.ErrNotAcquired))
	}
	if err := lockimpl.CallStep(ctx, l.step, lockimpl.StepGranted); err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	return l.lease(key, m, start, ttl), nil
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
	start := l.clock.Now()
	ok, err := m.ExtendContext(ctx)
	if !ok {
		return lockimpl.Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, l.classify(err, lockimpl.ErrNotHeld))
	}
	return l.lease(lease.Key, m, start, ttl), nil
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
// validity redsync computed, moved from the system clock to l.clock, never beyond
// start + ttl.
func (l *redsyncLock) lease(key string, m *redsync.Mutex, start time.Time, ttl time.Duration) lockimpl.Lease {
	left := time.Until(m.Until())
	now := l.clock.Now()
	deadline := now.Add(left)
	if limit := start.Add(ttl); deadline.After(limit) {
		deadline = limit
	}
	return lockimpl.Lease{Key: key, Token: m.Value(), Deadline: deadline, Validity: deadline.Sub(now)}
}

// classify maps a redsync error (see the table above) to a refusal wrapping kind, or
// returns it as it is (unknown). err may be nil when the library reported failure
// without one, which its code never does; that stays unknown.
func (l *redsyncLock) classify(err error, kind error) error {
	if err == nil {
		return errors.New("redsync reported failure without an error")
	}
	if redsyncRefused(err, len(l.clients), l.quorum) {
		return refusal(kind, err)
	}
	return err
}

// redsyncRefused reports whether err is a definite refusal: a quorum answered with
// another token, or every server answered and fewer than a quorum were ours.
func redsyncRefused(err error, nodes, quorum int) bool {
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		return true
	}
	refused := 0
	for _, e := range redsyncLeaves(err) {
		var nodeTaken *redsync.ErrNodeTaken
		switch {
		case errors.As(e, &nodeTaken), errors.Is(e, redsync.ErrLockAlreadyExpired):
			refused++
		default: // *RedisError, ErrFailed, ErrExtendFailed, anything new: unknown
			return false
		}
	}
	return refused > 0 && nodes-refused < quorum
}

// redsyncLeaves flattens redsync's errors.Join into the per-server errors.
func redsyncLeaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var leaves []error
		for _, e := range j.Unwrap() {
			leaves = append(leaves, redsyncLeaves(e)...)
		}
		return leaves
	}
	return []error{err}
}
