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

// StepWaiting is the step of a lock with WAIT (Config.Wait) between the grant on the
// primary and the WAIT for replicas: a primary that dies there has granted a lock that
// no replica may have, and the WAIT is what must save the holder from believing in it.
const StepWaiting = "acquire:waiting"

// commander sends commands and scripts: the lock's client, or one connection of it when
// a WAIT must follow the grant on the connection that wrote it.
type commander interface {
	redis.Scripter
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// lockClient is what a redisLock sends through: a client of one primary or of a Redis
// Cluster.
type lockClient interface {
	commander
	Close() error
}

// acquireFunc takes the lock with token for ttl on one server through c and returns the
// fence it got (0 without fencing). It returns ErrNotAcquired when the lock is taken.
type acquireFunc func(ctx context.Context, l *redisLock, c commander, key, token string, ttl time.Duration) (int64, error)

// releaseFunc gives the lease up; ErrNotHeld when it was not (or no longer) ours.
type releaseFunc func(ctx context.Context, l *redisLock, lease Lease) error

// redisLock is the single-instance lock all implementations here share: the correct ones
// and the mutants differ only in their acquire, release and extend steps.
type redisLock struct {
	name   string
	client lockClient
	// primaryFor is the client of the one primary that holds key: the lock's client, or
	// on a Redis Cluster the client of the node serving key's slot.
	primaryFor func(ctx context.Context, key string) (*redis.Client, error)
	cluster    bool // on a Redis Cluster: a fence counter needs a key in its lock's slot
	clock      Clock
	step       StepFunc
	acquire    acquireFunc
	release    releaseFunc
	extend     func(ctx context.Context, l *redisLock, c commander, lease Lease, ttl time.Duration) (int64, error) // 1 renewed, 0 not ours
	scripts    scripts
	wait       Wait // Replicas 0: no WAIT
}

var _ Locker = (*redisLock)(nil)

// extendChecked resets the expiry only if the lock is still ours (extendSrc).
func extendChecked(ctx context.Context, l *redisLock, c commander, lease Lease, ttl time.Duration) (int64, error) {
	return l.scripts.extend.Run(ctx, c, []string{lease.Key}, lease.Token, ttl.Milliseconds()).Int64()
}

// newRedisLock builds a lock from its two pluggable steps (a mutant may swap the
// extend too); waits says whether it takes cfg.Wait.
func newRedisLock(name string, cfg Config, waits bool, acquire acquireFunc, release releaseFunc) (*redisLock, error) {
	cfg = cfg.WithDefaults()
	if cfg.Wait.Replicas > 0 && !waits {
		return nil, fmt.Errorf("%s: takes no WAIT (wait for %d replicas asked)", name, cfg.Wait.Replicas)
	}
	if err := cfg.Wait.Check(cfg.Timeout); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l := &redisLock{
		name:    name,
		clock:   cfg.Clock,
		step:    cfg.Step,
		acquire: acquire,
		release: release,
		extend:  extendChecked,
		scripts: newScripts(),
		wait:    cfg.Wait,
		cluster: cfg.Cluster,
	}
	if cfg.Cluster {
		cc, err := cfg.ClusterClient()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		l.client, l.primaryFor = cc, cc.MasterForKey
		return l, nil
	}
	client, err := cfg.PrimaryClient()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l.client = client
	l.primaryFor = func(context.Context, string) (*redis.Client, error) { return client, nil }
	return l, nil
}

// conn is one connection to the primary that holds key, for a WAIT that must follow a
// write on the connection that made it. Close it after use.
func (l *redisLock) conn(ctx context.Context, key string) (*redis.Conn, error) {
	primary, err := l.primaryFor(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("the primary of %q: %w", key, err)
	}
	return primary.Conn(), nil
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
	var fence int64
	if l.wait.Replicas == 0 {
		fence, err = l.acquire(ctx, l, l.client, key, token, ttl)
	} else {
		fence, err = l.acquireAndWait(ctx, key, token, ttl)
	}
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
	var c commander = l.client
	if l.wait.Replicas > 0 {
		conn, err := l.conn(ctx, lease.Key)
		if err != nil {
			return Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, err)
		}
		defer conn.Close()
		c = conn
	}
	n, err := l.extend(ctx, l, c, lease, ttl)
	switch {
	case err != nil:
		return Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, err)
	case n == 0:
		return Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, ErrNotHeld)
	}
	if l.wait.Replicas > 0 {
		// The primary extended the lease; replicas that did not acknowledge it hold the old
		// expiry, so after a failover the lease may end as first granted: not an extension
		// the holder can count on, and not a refusal either.
		if acked, err := l.waitReplicas(ctx, c); err != nil {
			return Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, err)
		} else if acked < l.wait.Replicas {
			return Lease{}, fmt.Errorf("%s: extend %q: extended on the primary, but %s", l.name, lease.Key, l.shortOfAcks(acked))
		}
	}
	return l.lease(lease.Key, lease.Token, lease.Fence, start, ttl), nil
}

// acquireAndWait takes the lock and WAITs for l.wait.Replicas replicas on the connection
// that wrote the grant (WAIT counts the acknowledgements of its own connection's
// writes). A grant they did not all acknowledge in time is released and refused: a
// failover could promote a replica without it. When the release cannot say that the
// lock is gone, the acquire's outcome is unknown.
func (l *redisLock) acquireAndWait(ctx context.Context, key, token string, ttl time.Duration) (int64, error) {
	conn, err := l.conn(ctx, key)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	fence, err := l.acquire(ctx, l, conn, key, token, ttl)
	if err == nil {
		err = l.doStep(ctx, StepWaiting)
	}
	if err != nil {
		return 0, err
	}
	acked, err := l.waitReplicas(ctx, conn)
	if err != nil {
		return 0, fmt.Errorf("granted on the primary, then: %w", err)
	}
	if acked >= l.wait.Replicas {
		return fence, nil
	}
	short := l.shortOfAcks(acked)
	switch err := l.release(ctx, l, Lease{Key: key, Token: token, Fence: fence}); {
	case err == nil, errors.Is(err, ErrNotHeld):
		return 0, fmt.Errorf("granted on the primary, but %s, so released: %w", short, ErrNotAcquired)
	default:
		return 0, fmt.Errorf("granted on the primary, but %s, and the release failed: %w", short, err)
	}
}

// waitReplicas is WAIT on c: how many replicas acknowledged c's writes within the timeout.
func (l *redisLock) waitReplicas(ctx context.Context, c commander) (int, error) {
	n, err := c.Do(ctx, "WAIT", l.wait.Replicas, l.wait.Timeout.Milliseconds()).Int64()
	if err != nil {
		return 0, fmt.Errorf("WAIT %d %d: %w", l.wait.Replicas, l.wait.Timeout.Milliseconds(), err)
	}
	return int(n), nil
}

// shortOfAcks says that acked replicas are fewer than l waits for.
func (l *redisLock) shortOfAcks(acked int) string {
	return fmt.Sprintf("WAIT %d %d: %d of %d replicas acknowledged it", l.wait.Replicas, l.wait.Timeout.Milliseconds(), acked, l.wait.Replicas)
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
