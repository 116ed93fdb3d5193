package libs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/lockimpl"
)

// bsmRedislockVersion is the version of github.com/bsm/redislock in go.mod, whose
// behaviour the table below describes.
const bsmRedislockVersion = "v0.10.0"

// bsmRedislock adapts github.com/bsm/redislock (not to be confused with
// lockimpl/redislock.go, locklab's own textbook lock): a single-instance lock whose
// obtain, refresh and release are Lua scripts that compare the value (token) stored under
// the key. It runs on the one primary of Config.PrimaryClient, so also on a replicated
// topology through Sentinel.
//
// How its errors are classified (v0.10.0, redislock.go). With RetryStrategy NoRetry the
// obtain script runs once; a script reply of nil (key held by another token) is its only
// refusal; every other error is returned as is ("terminal").
//
//	operation  library result              outcome  why
//	acquire    ErrNotObtained              fail     the script saw the key held by another token and wrote nothing
//	acquire    any other error             unknown  network error, timeout or server error: the script may have run
//	release    ErrLockNotHeld              fail     the script saw another token or no key and deleted nothing
//	release    any other error             unknown  the script may have deleted the key
//	extend     ErrNotObtained (Refresh)    fail     the script saw another token or no key and changed nothing
//	extend     any other error             unknown  the script may have reset the expiry (NoRetry: the last error is returned)
//
// Lease: Token is lock.Token() (the library's random base64 token); Deadline counts ttl
// from just before the call (Config.Clock), as the library does not report a validity.
// Release and Refresh are methods of the *redislock.Lock that Obtain returned and its
// fields are unexported, so the adapter keeps the locks by token until a definite
// release or refusal. No fencing token.
type bsmRedislock struct {
	name   string
	client interface {
		redis.Scripter
		Close() error
	}
	rl    *redislock.Client
	clock lockimpl.Clock
	step  lockimpl.StepFunc
	opts  lockimpl.Options // the plan's options (redislockOptions)

	mu    sync.Mutex
	locks map[string]*redislock.Lock // live leases by token
}

var _ lockimpl.Locker = (*bsmRedislock)(nil)

// redislock's retry strategy as its users set it (impl_options): the strategy and, for
// the backoffs, their step and how many retries (LimitRetry: an unlimited strategy
// retries until the context ends).
func redislockRetry() lockimpl.Option {
	return lockimpl.Option{
		Name: "retry", Kind: lockimpl.KindString, Default: "none", Values: []any{"none", "linear", "exponential"},
		Doc: "Options.RetryStrategy of Obtain: NoRetry, LinearBackoff(retry_backoff) or ExponentialBackoff(retry_backoff, 16×retry_backoff), limited to retry_limit retries",
	}
}

func redislockBackoff() lockimpl.Option {
	return lockimpl.Option{
		Name: "retry_backoff", Kind: lockimpl.KindDuration, Default: 10 * time.Millisecond, Values: []any{time.Millisecond, 50 * time.Millisecond},
		Min: int64(time.Millisecond), Max: int64(time.Second), Neutral: true,
		Doc: "the backoff step of a retrying strategy",
	}
}

func redislockLimit() lockimpl.Option {
	return lockimpl.Option{
		Name: "retry_limit", Kind: lockimpl.KindInt, Default: 3, Values: []any{1, 10}, Min: 1, Max: 1000, Neutral: true,
		Doc: "LimitRetry: retries of a retrying strategy",
	}
}

func redislockOptions() []lockimpl.Option {
	return []lockimpl.Option{redislockRetry(), redislockBackoff(), redislockLimit()}
}

// retry is a new retry strategy as the options ask (LimitRetry counts: one per Obtain).
func (l *bsmRedislock) retry() redislock.RetryStrategy {
	step, limit := redislockBackoff().Duration(l.opts), redislockLimit().Int(l.opts)
	switch redislockRetry().String(l.opts) {
	case "linear":
		return redislock.LimitRetry(redislock.LinearBackoff(step), limit)
	case "exponential":
		return redislock.LimitRetry(redislock.ExponentialBackoff(step, 16*step), limit)
	}
	return redislock.NoRetry()
}

func newBSMRedislock(cfg lockimpl.Config) (lockimpl.Locker, error) {
	cfg = cfg.WithDefaults()
	const name = "redislock"
	l := &bsmRedislock{name: name, clock: cfg.Clock, step: cfg.Step, opts: cfg.Options, locks: map[string]*redislock.Lock{}}
	var err error
	if cfg.Cluster {
		l.client, err = cfg.ClusterClient() // the library takes any Scripter
	} else {
		l.client, err = cfg.PrimaryClient()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l.rl = redislock.New(l.client)
	return l, nil
}

// Acquire implements Locker.
func (l *bsmRedislock) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	ttl, err := lockimpl.CheckArgs(key, ttl)
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire: %w", l.name, err)
	}
	start := l.clock.Now()
	lock, err := l.rl.Obtain(ctx, key, ttl, &redislock.Options{RetryStrategy: l.retry()})
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, refusal(lockimpl.ErrNotAcquired, err))
	case err != nil:
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	if err := lockimpl.CallStep(ctx, l.step, lockimpl.StepGranted); err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	l.mu.Lock()
	l.locks[lock.Token()] = lock
	l.mu.Unlock()
	return l.lease(key, lock.Token(), start, ttl), nil
}

// Release implements Locker.
func (l *bsmRedislock) Release(ctx context.Context, lease lockimpl.Lease) error {
	lock, err := l.lock(lease)
	if err != nil {
		return fmt.Errorf("%s: release %q: %w", l.name, lease.Key, err)
	}
	err = lock.Release(ctx)
	switch {
	case err == nil:
		l.forget(lease)
		return nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		l.forget(lease)
		return fmt.Errorf("%s: release %q: %w", l.name, lease.Key, refusal(lockimpl.ErrNotHeld, err))
	}
	return fmt.Errorf("%s: release %q: %w", l.name, lease.Key, err)
}

// Extend implements Locker: Refresh resets the key's expiry to ttl if it is still ours.
func (l *bsmRedislock) Extend(ctx context.Context, lease lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	ttl, err := lockimpl.CheckArgs(lease.Key, ttl)
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: extend: %w", l.name, err)
	}
	lock, err := l.lock(lease)
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, err)
	}
	start := l.clock.Now()
	err = lock.Refresh(ctx, ttl, nil) // nil options: NoRetry
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		l.forget(lease)
		return lockimpl.Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, refusal(lockimpl.ErrNotHeld, err))
	case err != nil:
		return lockimpl.Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, err)
	}
	return l.lease(lease.Key, lease.Token, start, ttl), nil
}

// Close implements Locker.
func (l *bsmRedislock) Close() error { return l.client.Close() }

// lock is the library's lock of a live lease. A lease this client released or lost
// already (a definite outcome), or never granted, is not ours: ErrNotHeld, nothing sent.
func (l *bsmRedislock) lock(lease lockimpl.Lease) (*redislock.Lock, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lock, ok := l.locks[lease.Token]
	if !ok || lock.Key() != lease.Key {
		return nil, fmt.Errorf("%w: no live lease with this token in this client", lockimpl.ErrNotHeld)
	}
	return lock, nil
}

func (l *bsmRedislock) forget(lease lockimpl.Lease) {
	l.mu.Lock()
	delete(l.locks, lease.Token)
	l.mu.Unlock()
}

func (l *bsmRedislock) lease(key, token string, start time.Time, ttl time.Duration) lockimpl.Lease {
	deadline := start.Add(ttl)
	return lockimpl.Lease{Key: key, Token: token, Deadline: deadline, Validity: deadline.Sub(l.clock.Now())}
}
