package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// newSetNX is the textbook single-instance lock.
func newSetNX(cfg Config) (Locker, error) {
	return newRedisLock("setnx", cfg, true, acquireSetNX, releaseChecked)
}

// newFenced is setnx with a fencing token from a per-key counter.
func newFenced(cfg Config) (Locker, error) {
	return newRedisLock("fenced", cfg, true, acquireFenced, releaseChecked)
}

// acquireSetNX is one atomic SET key token NX PX ttl.
func acquireSetNX(ctx context.Context, l *redisLock, c commander, key, token string, ttl time.Duration) (int64, error) {
	err := c.Do(ctx, "SET", key, token, "NX", "PX", ttl.Milliseconds()).Err()
	if errors.Is(err, redis.Nil) {
		return 0, ErrNotAcquired
	}
	return 0, refusedWrite(err)
}

// refusedWrite marks a primary's NOREPLICAS answer (min-replicas-to-write: too few
// replicas acknowledged it lately) as a refusal: the write was not done.
func refusedWrite(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), "NOREPLICAS") {
		return fmt.Errorf("%w: %v", ErrNotAcquired, err)
	}
	return err
}

// acquireFenced does SET NX PX and, only when it succeeded, INCR of the fence counter,
// in one script: a fence is never spent on a failed acquire, nor a lock granted without one.
func acquireFenced(ctx context.Context, l *redisLock, c commander, key, token string, ttl time.Duration) (int64, error) {
	fk, err := l.fenceKey(key)
	if err != nil {
		return 0, err
	}
	fence, err := l.scripts.fencedAcquire.Run(ctx, c, []string{key, fk}, token, ttl.Milliseconds()).Int64()
	switch {
	case err != nil:
		return 0, refusedWrite(err)
	case fence == 0:
		return 0, ErrNotAcquired
	}
	return fence, nil
}

// fenceKey is the counter of key's fences: key:fence, on a Redis Cluster in key's hash
// slot (clusterFenceKey).
func (l *redisLock) fenceKey(key string) (string, error) {
	if l.cluster {
		return clusterFenceKey(key)
	}
	return key + ":fence", nil
}

// releaseChecked deletes the lock only if it still holds the lease's token.
func releaseChecked(ctx context.Context, l *redisLock, lease Lease) error {
	n, err := l.scripts.release.Run(ctx, l.client, []string{lease.Key}, lease.Token).Int64()
	switch {
	case err != nil:
		return err
	case n == 0:
		return ErrNotHeld
	}
	return nil
}
