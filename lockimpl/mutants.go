package lockimpl

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The mutants are setnx with one step broken each, so that the checkers can be shown to
// catch each known bug class (docs/design.md). Each bug is the classic mistake, kept
// verbatim.

// Step names the mutants pass between their two commands.
const (
	StepAfterGet   = "acquire:after-get"
	StepAfterSetNX = "acquire:after-setnx"
)

func newCheckThenSet(cfg Config) (Locker, error) {
	return newRedisLock("check-then-set", cfg, false, acquireCheckThenSet, releaseChecked)
}

func newNoExpiry(cfg Config) (Locker, error) {
	return newRedisLock("no-expiry", cfg, false, acquireNoExpiry, releaseChecked)
}

func newUnsafeRelease(cfg Config) (Locker, error) {
	return newRedisLock("unsafe-release", cfg, false, acquireSetNX, releaseUnchecked)
}

func newUnsafeExtend(cfg Config) (Locker, error) {
	l, err := newRedisLock("unsafe-extend", cfg, false, acquireSetNX, releaseChecked)
	if err != nil {
		return nil, err
	}
	l.extend = extendUnchecked
	return l, nil
}

// acquireCheckThenSet: GET, then an unconditional SET. Bug: two clients can both see the
// lock free before either sets it, and both acquire.
func acquireCheckThenSet(ctx context.Context, l *redisLock, c commander, key, token string, ttl time.Duration) (int64, error) {
	err := c.Do(ctx, "GET", key).Err()
	switch {
	case err == nil:
		return 0, ErrNotAcquired
	case !errors.Is(err, redis.Nil):
		return 0, err
	}
	if err := l.doStep(ctx, StepAfterGet); err != nil {
		return 0, err
	}
	return 0, c.Do(ctx, "SET", key, token, "PX", ttl.Milliseconds()).Err()
}

// acquireNoExpiry: SETNX, then PEXPIRE. Bug: a client that stops between the two leaves a
// lock without expiry that nobody will ever release.
func acquireNoExpiry(ctx context.Context, l *redisLock, c commander, key, token string, ttl time.Duration) (int64, error) {
	set, err := c.Do(ctx, "SETNX", key, token).Int64()
	switch {
	case err != nil:
		return 0, err
	case set == 0:
		return 0, ErrNotAcquired
	}
	if err := l.doStep(ctx, StepAfterSetNX); err != nil {
		return 0, err // the crash: PEXPIRE is never sent
	}
	return 0, c.Do(ctx, "PEXPIRE", key, ttl.Milliseconds()).Err()
}

// releaseUnchecked: a plain DEL. Bug: a holder whose lease expired deletes the lock of
// whoever acquired it since.
func releaseUnchecked(ctx context.Context, l *redisLock, lease Lease) error {
	n, err := l.client.Do(ctx, "DEL", lease.Key).Int64()
	switch {
	case err != nil:
		return err
	case n == 0:
		return ErrNotHeld
	}
	return nil
}

// extendUnchecked: a plain PEXPIRE. Bug: a holder whose lease expired renews the lock of
// whoever acquired it since, is told it still holds it, and goes on to write.
func extendUnchecked(ctx context.Context, _ *redisLock, c commander, lease Lease, ttl time.Duration) (int64, error) {
	return c.Do(ctx, "PEXPIRE", lease.Key, ttl.Milliseconds()).Int64()
}
