package lockimpl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// StepGranted is the step every implementation passes right after the lock was granted
// and before Acquire returns: a crash there leaves a held lock nobody believes in, and a
// delay there is a grant that arrives late.
const StepGranted = "acquire:granted"

// acquireFunc takes the lock with token for ttl on one server and returns the fence it
// got (0 without fencing). It returns ErrNotAcquired when the lock is taken.
type acquireFunc func(ctx context.Context, l *redisLock, key, token string, ttl time.Duration) (int64, error)

// releaseFunc gives the lease up; ErrNotHeld when it was not (or no longer) ours.
type releaseFunc func(ctx context.Context, l *redisLock, lease Lease) error

// redisLock is the single-instance lock all implementations here share: the correct ones
// and the mutants differ only in their acquire and release steps.
type redisLock struct {
	name    string
	client  *redis.Client
	clock   Clock
	step    StepFunc
	acquire acquireFunc
	release releaseFunc
	scripts scripts
}

var _ Locker = (*redisLock)(nil)

// newRedisLock builds a lock from its two pluggable steps.
func newRedisLock(name string, cfg Config, acquire acquireFunc, release releaseFunc) (*redisLock, error) {
	cfg = cfg.WithDefaults()
	client, err := cfg.PrimaryClient()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &redisLock{
		name:    name,
		client:  client,
		clock:   cfg.Clock,
		step:    cfg.Step,
		acquire: acquire,
		release: release,
		scripts: newScripts(),
	}, nil
}

// Acquire implements Locker. The lease's deadline counts from just before the command
// was sent, so that it never overstates what the server granted.
func (l *redisLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	ttl, err := CheckArgs(key, ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("%s: acquire: %w", l.name, err)
	}
	token, err := NewToken()
	if err != nil {
		return Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	start := l.clock.Now()
	fence, err := l.acquire(ctx, l, key, token, ttl)
	if err == nil {
		err = l.doStep(ctx, StepGranted)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("%s: acquire %q: %w", l.name, key, err)
	}
	return l.lease(key, token, fence, start, ttl), nil
}

// Release implements Locker.
func (l *redisLock) Release(ctx context.Context, lease Lease) error {
	if err := l.release(ctx, l, lease); err != nil {
		return fmt.Errorf("%s: release %q: %w", l.name, lease.Key, err)
	}
	return nil
}

// Extend implements Locker: if the key still holds our token, its expiry is reset to ttl.
func (l *redisLock) Extend(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error) {
	ttl, err := CheckArgs(lease.Key, ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("%s: extend: %w", l.name, err)
	}
	start := l.clock.Now()
	n, err := l.scripts.extend.Run(ctx, l.client, []string{lease.Key}, lease.Token, ttl.Milliseconds()).Int64()
	switch {
	case err != nil:
		return Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, err)
	case n == 0:
		return Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, ErrNotHeld)
	}
	return l.lease(lease.Key, lease.Token, lease.Fence, start, ttl), nil
}

// Close implements Locker.
func (l *redisLock) Close() error { return l.client.Close() }

// lease is what an acquire or extend that was sent at start grants.
func (l *redisLock) lease(key, token string, fence int64, start time.Time, ttl time.Duration) Lease {
	deadline := start.Add(ttl)
	return Lease{Key: key, Token: token, Fence: fence, Deadline: deadline, Validity: deadline.Sub(l.clock.Now())}
}

// doStep calls the Step hook (see CallStep).
func (l *redisLock) doStep(ctx context.Context, step string) error {
	return CallStep(ctx, l.step, step)
}

// CheckArgs refuses what Redis would refuse, and rounds ttl down to the milliseconds
// that PX carries. Every implementation checks its Acquire and Extend arguments with it.
func CheckArgs(key string, ttl time.Duration) (time.Duration, error) {
	if key == "" {
		return 0, errors.New("empty key")
	}
	if ttl = ttl.Truncate(time.Millisecond); ttl <= 0 {
		return 0, fmt.Errorf("ttl %s is under a millisecond", ttl)
	}
	return ttl, nil
}

// NewToken is a random 128-bit token (hex), so that no two leases are ever confused.
func NewToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
