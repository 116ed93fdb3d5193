package libs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/locklab/locklab/lockimpl"
)

// rueidisVersion is the version of github.com/redis/rueidis (package rueidislock) in
// go.mod, whose behaviour the table below describes.
const rueidisVersion = "v1.0.80"

// rueidisLock adapts rueidislock. How the library works (v1.0.80, rueidislock/lock.go):
// a lock on name is a majority (KeyMajority 2) of 3 keys "rueidislock:{0,1,2}:name" on
// ONE server, each set by a Lua SET NX PXAT (absolute deadline from the client's wall
// clock: client start + KeyValidity), one key after the other, each bounded by
// TryNextAfter. While the returned context lives, one goroutine per key renews it every
// ExtendInterval (KeyValidity/2) with PEXPIREAT now+KeyValidity, and re-checks it when
// client-side caching (RESP3, CLIENT TRACKING) reports the key changed; once a majority
// of those goroutines gave up, the library cancels the context. Cancelling the context
// deletes the keys (when still ours); the delete's result is not reported.
//
// How the adapter calls it, and why:
//   - TTL → KeyValidity, a Locker option, not a per-call one: one rueidislock.Locker
//     (one client) per distinct ttl, built on first use, all closed by Close.
//   - Config.Timeout → Dialer.Timeout, ConnWriteTimeout (each connection's I/O deadline
//     and keepalive-PING timeout) and TryNextAfter (the library's per-key acquire
//     timeout; its default is 20 ms). DisableRetry unless option disable_retry is false:
//     rueidislock marks its scripts retryable (from v1.0.70), and a retried SET NX whose
//     first try succeeded reads as "held by others". Sentinels (replicated topology)
//     through rueidis's Sentinel client.
//   - The lock's context is derived from context.WithoutCancel(ctx): its life is the
//     lease's (Release, loss, Close), not the Acquire call's.
//   - Token: the library does not expose its random value; Lease.Token is a locally
//     generated 128-bit id that only tells leases apart. No fencing token.
//   - Deadline: the call's start (Config.Clock) + ttl, the keys' first PXAT. Current
//     never moves it: the renewals are invisible, and a live context does not prove the
//     keys live — a renewal waits up to KeyValidity for its reply while the key it renews
//     expires, and the context ends only after that (measured: another client held the
//     lock for ExtendInterval while the holder's context lived; TestRueidislockContextOutlivesKeys).
//     Current reports false once the library cancelled the context (lock lost).
//   - Extend: ErrUnsupported, nothing sent (the library renews by itself).
//   - Option no_loop_tracking → LockerOption.NoLoopTracking (rueidisNoLoopTracking).
//     Two defects of v1.0.80 are measured in rueidislock_defects_test.go and described in
//     docs/libraries.md: a slow acquire is granted with keys that expire before their
//     first renewal (no option avoids it), and without NoLoopTracking every renewal
//     triggers the next, which under slow replies gives the lock up.
//   - Release: the cancel function. It returns nothing; the adapter reports ErrNotHeld
//     when the library had already cancelled the context (the lock was lost or given up
//     before the release), else ok.
//   - A crash at StepGranted must stop the renewals without deleting the keys, as a dead
//     process would: cancelling or Locker.Close would delete them, so the adapter closes
//     the rueidis clients (Locker.Client().Close()); the renewal goroutines then fail
//     without reaching the server and the keys expire at their PXAT.
//
// How its errors are classified:
//
//	operation  library result                        outcome  why
//	acquire    ErrNotLocked ("key … is held by       fail     a key was held by another value, or the majority
//	           others", "failed to acquire the                could not be had before KeyValidity ran out; the
//	           majority of keys")                             library then deletes what it got (see docs/libraries.md
//	                                                          for the corner where that delete is unreported)
//	acquire    any other error (dial, timeout,       unknown  a SET NX may have run
//	           server error, ErrLockerClosed)
//	release    context still alive → cancel          ok       the library deletes the keys (result unreported)
//	release    context already cancelled             fail     the library had lost or given up the lock before
//	extend     —                                     ErrUnsupported, nothing sent
type rueidisLock struct {
	name    string
	opt     rueidis.ClientOption // template for each per-ttl client
	noLoop  bool                 // LockerOption.NoLoopTracking (option no_loop_tracking)
	timeout time.Duration
	clock   lockimpl.Clock
	step    lockimpl.StepFunc

	mu      sync.Mutex
	closed  bool
	lockers map[time.Duration]rueidislock.Locker // by KeyValidity
	crashed []rueidislock.Locker                 // clients closed by a crash, Locker not yet closed
	leases  map[string]*rueidisLease             // live leases by Lease.Token
}

// rueidisLease is what TryWithContext returned for one lease.
type rueidisLease struct {
	key    string
	ctx    context.Context // cancelled by the library when the lock is lost
	cancel context.CancelFunc
}

var (
	_ lockimpl.Locker  = (*rueidisLock)(nil)
	_ lockimpl.Renewer = (*rueidisLock)(nil)
	_ lockimpl.Crasher = (*rueidisLock)(nil)
)

// rueidisNoLoopTracking is rueidislock's NoLoopTracking as its users set it
// (impl_options). Off, the library's default, every renewal's PEXPIREAT invalidates the
// client's own tracked key and that invalidation triggers the next renewal: a loop of
// renewals, which under a reply delay makes the library drop its own lock
// (docs/libraries.md).
func rueidisNoLoopTracking() lockimpl.Option {
	return lockimpl.Option{
		Name: "no_loop_tracking", Kind: lockimpl.KindBool, Default: false, Values: []any{true},
		Doc: "LockerOption.NoLoopTracking: CLIENT TRACKING with NOLOOP (Redis 7.0.5+), so the client's own renewals send it no invalidations; off (the library's default) each renewal's invalidation triggers another renewal",
	}
}

// rueidisDisableRetry is ClientOption.DisableRetry. The adapter sends each command once,
// as every adapter does, so that a command that may have run is reported as such; the
// library's users run with retries on (false, rueidis's default), and then a retried SET
// NX whose first try set the key reads as "held by others" (docs/track-record.md).
func rueidisDisableRetry() lockimpl.Option {
	return lockimpl.Option{
		Name: "disable_retry", Kind: lockimpl.KindBool, Default: true, Values: []any{false},
		Doc: "ClientOption.DisableRetry: each command sent once (the adapter's default); false, rueidis's own default, retries the library's scripts after a network error, and a retried SET NX that had set the key answers \"held by others\"",
	}
}

func rueidisOptions() []lockimpl.Option {
	return []lockimpl.Option{rueidisNoLoopTracking(), rueidisDisableRetry()}
}

func newRueidisLock(cfg lockimpl.Config) (lockimpl.Locker, error) {
	cfg = cfg.WithDefaults()
	const name = "rueidislock"
	opt := rueidis.ClientOption{
		Dialer:           net.Dialer{Timeout: cfg.Timeout},
		ConnWriteTimeout: cfg.Timeout,
		DisableRetry:     rueidisDisableRetry().Bool(cfg.Options),
	}
	viaDialer := func(via map[string]string) func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
		// The dialer sees the seeds' and Sentinels' own addresses too: those are not in via.
		return func(ctx context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
			if to, ok := via[addr]; ok {
				addr = to
			}
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	switch {
	case cfg.Cluster:
		// rueidis finds the cluster by CLUSTER SLOTS on its seeds and follows MOVED and ASK.
		opt.InitAddress = slices.Clone(cfg.Addrs)
		if len(cfg.Via) > 0 {
			opt.DialCtxFn = viaDialer(cfg.Via)
		}
	case len(cfg.Sentinels) == 0:
		addr, err := cfg.SingleAddr()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		opt.InitAddress = []string{addr}
		opt.ForceSingleClient = true // no CLUSTER probe: it is one server
		// An external server's user, password, database and TLS (ServerName: the host the
		// user named; the address dialled is this client's link).
		a := cfg.Access[addr]
		opt.Username, opt.Password, opt.SelectDB = a.Username, a.Password, a.DB
		if a.TLS != nil {
			opt.TLSConfig = a.TLS.Clone()
		}
	default:
		if cfg.Master == "" {
			return nil, fmt.Errorf("%s: sentinels given without the master name they monitor", name)
		}
		opt.InitAddress = slices.Clone(cfg.Sentinels)
		opt.Sentinel = rueidis.SentinelOption{MasterSet: cfg.Master, Dialer: net.Dialer{Timeout: cfg.Timeout}}
		if len(cfg.Via) > 0 {
			opt.DialCtxFn = viaDialer(cfg.Via)
		}
	}
	return &rueidisLock{
		name:    name,
		opt:     opt,
		noLoop:  rueidisNoLoopTracking().Bool(cfg.Options),
		timeout: cfg.Timeout,
		clock:   cfg.Clock,
		step:    cfg.Step,
		lockers: map[time.Duration]rueidislock.Locker{},
		leases:  map[string]*rueidisLease{},
	}, nil
}

// locker is the library's Locker for KeyValidity ttl, built (and connected) on first use.
func (l *rueidisLock) locker(ttl time.Duration) (rueidislock.Locker, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("closed")
	}
	if lk := l.lockers[ttl]; lk != nil {
		return lk, nil
	}
	opt := l.opt
	opt.InitAddress = slices.Clone(opt.InitAddress)
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   opt,
		KeyValidity:    ttl,
		TryNextAfter:   l.timeout,
		NoLoopTracking: l.noLoop,
	})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	l.lockers[ttl] = lk
	return lk, nil
}

// Acquire implements Locker.
func (l *rueidisLock) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	ttl, err := lockimpl.CheckArgs(key, ttl)
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire: %w", l.name, err)
	}
	// The lock's context outlives ctx, so the call itself does not watch ctx: stop here.
	if err := ctx.Err(); err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	lk, err := l.locker(ttl)
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	token, err := lockimpl.NewToken()
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	start := l.clock.Now()
	lockCtx, cancel, err := lk.TryWithContext(context.WithoutCancel(ctx), key)
	switch {
	case errors.Is(err, rueidislock.ErrNotLocked):
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, refusal(lockimpl.ErrNotAcquired, err))
	case err != nil:
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	if err := lockimpl.CallStep(ctx, l.step, lockimpl.StepGranted); err != nil {
		l.crash()
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	l.mu.Lock()
	l.leases[token] = &rueidisLease{key: key, ctx: lockCtx, cancel: cancel}
	l.mu.Unlock()
	deadline := start.Add(ttl)
	return lockimpl.Lease{Key: key, Token: token, Deadline: deadline, Validity: deadline.Sub(l.clock.Now())}, nil
}

// Crash implements lockimpl.Crasher (see crash).
func (l *rueidisLock) Crash() { l.crash() }

// crash stops every renewal of this client without deleting any key: it closes the
// rueidis clients, so the renewal goroutines' commands fail before being sent. The
// Lockers are closed (their goroutines released) by Close.
func (l *rueidisLock) crash() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ttl, lk := range l.lockers {
		lk.Client().Close()
		l.crashed = append(l.crashed, lk)
		delete(l.lockers, ttl)
	}
}

// Current implements Renewer: held while the library has not cancelled the lease's
// context; the deadline stays the one Acquire granted (see the type's comment).
func (l *rueidisLock) Current(lease lockimpl.Lease) (lockimpl.Lease, bool) {
	l.mu.Lock()
	st := l.leases[lease.Token]
	l.mu.Unlock()
	if st == nil || st.key != lease.Key || st.ctx.Err() != nil {
		return lease, false
	}
	return lease, true
}

// Release implements Locker: it cancels the lease's context, which makes the library
// delete its keys.
func (l *rueidisLock) Release(ctx context.Context, lease lockimpl.Lease) error {
	l.mu.Lock()
	st := l.leases[lease.Token]
	if st != nil && st.key == lease.Key {
		delete(l.leases, lease.Token)
	}
	l.mu.Unlock()
	if st == nil || st.key != lease.Key {
		return fmt.Errorf("%s: release %q: %w: no live lease with this token in this client", l.name, lease.Key, lockimpl.ErrNotHeld)
	}
	lost := st.ctx.Err()
	st.cancel() // waits until the library's goroutines deleted the keys (or gave up)
	if lost != nil {
		return fmt.Errorf("%s: release %q: %w: rueidislock had already ended the lock's context (%v)", l.name, lease.Key, lockimpl.ErrNotHeld, lost)
	}
	return nil
}

// Extend implements Locker: rueidislock has no extend; it renews by itself.
func (l *rueidisLock) Extend(_ context.Context, lease lockimpl.Lease, _ time.Duration) (lockimpl.Lease, error) {
	return lockimpl.Lease{}, fmt.Errorf("%s: extend %q: %w (rueidislock renews the lock by itself while its context lives)", l.name, lease.Key, lockimpl.ErrUnsupported)
}

// Close implements Locker: it releases the live leases, then closes the library's Lockers.
func (l *rueidisLock) Close() error {
	l.mu.Lock()
	l.closed = true
	leases := l.leases
	lockers := l.crashed
	for _, lk := range l.lockers {
		lockers = append(lockers, lk)
	}
	l.leases, l.lockers, l.crashed = map[string]*rueidisLease{}, map[time.Duration]rueidislock.Locker{}, nil
	l.mu.Unlock()
	for _, st := range leases {
		st.cancel()
	}
	for _, lk := range lockers {
		lk.Close()
	}
	return nil
}
