package locktest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// Conformance runs the conformance suite on impls: what every correct lock on one
// primary must do, against real servers. Each check is a subtest named after it, with
// a subtest per implementation. Every package whose implementations are correct
// single-instance locks runs it on them (lockimpl: setnx and fenced; lockimpl/libs:
// redislock; lockimpl/subprocess: node-ioredis).
func Conformance(t *testing.T, impls ...lockimpl.Impl) {
	for _, c := range []struct {
		name  string
		check func(*testing.T, []lockimpl.Impl)
	}{
		{"AcquireRelease", acquireRelease},
		{"StaleLeaseCannotHarmNewHolder", staleLeaseCannotHarmNewHolder},
		{"Extend", extend},
		{"LeaseExpires", leaseExpires},
		{"Fences", fences},
		{"DeadlineCountsFromBeforeTheCommand", deadlineCountsFromBeforeTheCommand},
		{"CrashAfterGrant", crashAfterGrant},
		{"BadArguments", badArguments},
		{"SingleInstanceLocksRunOnReplicated", singleInstanceLocksRunOnReplicated},
		{"ClusterLocksRunOnRedisCluster", RunOnRedisCluster},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, impls) })
	}
}

// forEach runs f on each of impls, as a subtest named after it.
func forEach(t *testing.T, impls []lockimpl.Impl, f func(t *testing.T, impl lockimpl.Impl)) {
	for _, impl := range impls {
		t.Run(impl.Name, func(t *testing.T) { f(t, impl) })
	}
}

func acquireRelease(t *testing.T, impls []lockimpl.Impl) {
	forEach(t, impls, func(t *testing.T, impl lockimpl.Impl) {
		addr, rc := Server(t)
		a, b := Locker(t, impl, addr, nil), Locker(t, impl, addr, nil)
		ctx := clustertest.Context(t)
		const ttl = time.Minute
		lease, err := a.Acquire(ctx, "k", ttl)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		// Token formats are the implementation's own (ours: 128-bit hex; redislock: base64).
		if len(lease.Token) < 16 || lease.Key != "k" {
			t.Fatalf("lease %+v: want key k and a random token of at least 16 characters", lease)
		}
		if lease.Validity <= 0 || lease.Validity > ttl || lease.Remaining(time.Now()) > ttl {
			t.Fatalf("validity %s, remaining %s; want in (0, %s]", lease.Validity, lease.Remaining(time.Now()), ttl)
		}
		if got := rc.Get(ctx, "k").Val(); got != lease.Token {
			t.Fatalf("server holds %q, want the lease's token", got)
		}
		if pttl := rc.PTTL(ctx, "k").Val(); pttl <= 0 || pttl > ttl {
			t.Fatalf("PTTL %s, want in (0, %s]", pttl, ttl)
		}

		_, err = b.Acquire(ctx, "k", ttl)
		if !errors.Is(err, lockimpl.ErrNotAcquired) || lockimpl.Classify(err) != histories.Fail {
			t.Fatalf("second Acquire: %v; want ErrNotAcquired", err)
		}
		if err := a.Release(ctx, lease); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if rc.Exists(ctx, "k").Val() != 0 {
			t.Fatal("key still there after Release")
		}
		if err := a.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
			t.Fatalf("second Release: %v; want ErrNotHeld", err)
		}
		if _, err := b.Acquire(ctx, "k", ttl); err != nil {
			t.Fatalf("Acquire after Release: %v", err)
		}
	})
}

func staleLeaseCannotHarmNewHolder(t *testing.T, impls []lockimpl.Impl) {
	forEach(t, impls, func(t *testing.T, impl lockimpl.Impl) {
		addr, rc := Server(t)
		a, b := Locker(t, impl, addr, nil), Locker(t, impl, addr, nil)
		ctx := clustertest.Context(t)
		stale, err := a.Acquire(ctx, "k", 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		WaitGone(t, rc, "k")
		fresh, err := b.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Release(ctx, stale); !errors.Is(err, lockimpl.ErrNotHeld) {
			t.Fatalf("Release of a stale lease: %v; want ErrNotHeld", err)
		}
		if _, err := a.Extend(ctx, stale, time.Hour); !errors.Is(err, lockimpl.ErrNotHeld) {
			t.Fatalf("Extend of a stale lease: %v; want ErrNotHeld", err)
		}
		if got := rc.Get(ctx, "k").Val(); got != fresh.Token {
			t.Fatalf("server holds %q, want the new holder's token", got)
		}
		if pttl := rc.PTTL(ctx, "k").Val(); pttl > time.Minute {
			t.Fatalf("PTTL %s: the stale extend touched the new holder's lock", pttl)
		}
	})
}

func extend(t *testing.T, impls []lockimpl.Impl) {
	forEach(t, impls, func(t *testing.T, impl lockimpl.Impl) {
		addr, rc := Server(t)
		l := Locker(t, impl, addr, nil)
		ctx := clustertest.Context(t)
		lease, err := l.Acquire(ctx, "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ext, err := l.Extend(ctx, lease, time.Hour)
		if err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if ext.Key != lease.Key || ext.Token != lease.Token || ext.Fence != lease.Fence {
			t.Fatalf("extended lease %+v does not keep key, token and fence of %+v", ext, lease)
		}
		if !ext.Deadline.After(lease.Deadline) || ext.Validity <= time.Second {
			t.Fatalf("extended deadline %v (validity %s), was %v", ext.Deadline, ext.Validity, lease.Deadline)
		}
		if pttl := rc.PTTL(ctx, "k").Val(); pttl <= time.Second || pttl > time.Hour {
			t.Fatalf("PTTL after Extend %s, want in (1s, 1h]", pttl)
		}
		if err := l.Release(ctx, ext); err != nil {
			t.Fatalf("Release of the extended lease: %v", err)
		}
		if _, err := l.Extend(ctx, ext, time.Hour); !errors.Is(err, lockimpl.ErrNotHeld) {
			t.Fatalf("Extend after Release: %v; want ErrNotHeld", err)
		}
	})
}

func leaseExpires(t *testing.T, impls []lockimpl.Impl) {
	forEach(t, impls, func(t *testing.T, impl lockimpl.Impl) {
		addr, rc := Server(t)
		a, b := Locker(t, impl, addr, nil), Locker(t, impl, addr, nil)
		ctx := clustertest.Context(t)
		const ttl = 100 * time.Millisecond
		if _, err := a.Acquire(ctx, "k", ttl); err != nil {
			t.Fatal(err)
		}
		// The key always carries the TTL (-1 would be a lock that never expires); on a slow
		// machine it may already be gone (-2).
		if pttl := rc.PTTL(ctx, "k").Val(); pttl == -1 || pttl > ttl {
			t.Fatalf("PTTL %s, want at most %s", pttl, ttl)
		}
		WaitGone(t, rc, "k")
		if _, err := b.Acquire(ctx, "k", time.Minute); err != nil {
			t.Fatalf("Acquire after expiry: %v", err)
		}
	})
}

func fences(t *testing.T, impls []lockimpl.Impl) {
	forEach(t, impls, func(t *testing.T, impl lockimpl.Impl) {
		addr, _ := Server(t)
		lockers := []lockimpl.Locker{Locker(t, impl, addr, nil), Locker(t, impl, addr, nil)}
		ctx := clustertest.Context(t)
		var last int64
		for i := range 6 {
			lease, err := lockers[i%2].Acquire(ctx, "k", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			// Fences are checked for setnx (none) and fenced (strictly increasing from 1).
			switch {
			case impl.Name == "setnx" && lease.Fence != 0:
				t.Fatalf("setnx granted fence %d, want none", lease.Fence)
			case impl.Name == "fenced" && i == 0 && lease.Fence != 1:
				t.Fatalf("first fence %d, want 1", lease.Fence)
			case impl.Name == "fenced" && lease.Fence <= last:
				t.Fatalf("fence %d after %d: not strictly increasing", lease.Fence, last)
			}
			last = lease.Fence
			if _, err := lockers[(i+1)%2].Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("contending Acquire: %v; want ErrNotAcquired", err)
			}
			if err := lockers[i%2].Release(ctx, lease); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func deadlineCountsFromBeforeTheCommand(t *testing.T, impls []lockimpl.Impl) {
	forEach(t, impls, func(t *testing.T, impl lockimpl.Impl) {
		addr, _ := Server(t)
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := NewSteppedClock(start, 10*time.Millisecond)
		l, err := impl.New(lockimpl.Config{Addrs: []string{addr}, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		const ttl = time.Second
		lease, err := l.Acquire(clustertest.Context(t), "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		// First reading before sending, second at return. The deadline never passes
		// send time + ttl (a client that measures its own validity, as the Node.js one
		// does, may put it a little earlier); the validity is what is left of it at return.
		checkLease := func(what string, l lockimpl.Lease, sent, returned time.Time) {
			t.Helper()
			latest := sent.Add(ttl)
			if l.Deadline.After(latest) || l.Deadline.Before(latest.Add(-50*time.Millisecond)) || l.Validity != l.Deadline.Sub(returned) {
				t.Fatalf("%s: deadline %v, validity %s; want a deadline in [%v, %v] and the validity left of it at %v",
					what, l.Deadline, l.Validity, latest.Add(-50*time.Millisecond), latest, returned)
			}
		}
		checkLease("acquire", lease, start, start.Add(10*time.Millisecond))
		ext, err := l.Extend(clustertest.Context(t), lease, ttl)
		if err != nil {
			t.Fatal(err)
		}
		checkLease("extend", ext, start.Add(20*time.Millisecond), start.Add(30*time.Millisecond))
	})
}

func crashAfterGrant(t *testing.T, impls []lockimpl.Impl) {
	forEach(t, impls, func(t *testing.T, impl lockimpl.Impl) {
		addr, rc := Server(t)
		l := Locker(t, impl, addr, func(_ context.Context, step string) error {
			if step == lockimpl.StepGranted {
				return fmt.Errorf("at %s: %w", step, lockimpl.ErrCrashed)
			}
			return nil
		})
		ctx := clustertest.Context(t)
		_, err := l.Acquire(ctx, "k", time.Minute)
		if !errors.Is(err, lockimpl.ErrCrashed) || lockimpl.Classify(err) != histories.Unknown {
			t.Fatalf("Acquire: %v (%s); want the injected crash, unknown", err, lockimpl.Classify(err))
		}
		// The lock was granted and is leaked, but only until its TTL.
		if pttl := rc.PTTL(ctx, "k").Val(); pttl <= 0 {
			t.Fatalf("PTTL %s, want a granted lock with an expiry", pttl)
		}
	})
}

func badArguments(t *testing.T, impls []lockimpl.Impl) {
	forEach(t, impls, func(t *testing.T, impl lockimpl.Impl) {
		addr, _ := Server(t)
		l := Locker(t, impl, addr, nil)
		ctx := clustertest.Context(t)
		if _, err := l.Acquire(ctx, "", time.Second); err == nil {
			t.Error("Acquire with an empty key succeeded")
		}
		if _, err := l.Acquire(ctx, "k", time.Microsecond); err == nil {
			t.Error("Acquire with a sub-millisecond ttl succeeded")
		}
	})
}

// singleInstanceLocksRunOnReplicated: on a replicated topology (one cluster for all of
// impls) the lock is taken on the primary, through the Sentinels.
func singleInstanceLocksRunOnReplicated(t *testing.T, impls []lockimpl.Impl) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 2})
	forEach(t, impls, func(t *testing.T, impl lockimpl.Impl) {
		if !impl.RunsOn(cluster.Replicated) {
			t.Fatalf("%s does not run on %s", impl.Name, cluster.Replicated)
		}
		ctx := clustertest.Context(t)
		a, b := ReplicatedLocker(t, c, impl, 0, time.Second), ReplicatedLocker(t, c, impl, 1, time.Second)
		key := "k-" + impl.Name
		lease, err := a.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		primary := redis.NewClient(&redis.Options{Addr: c.Lock[0].Addr(), Protocol: 2, DisableIdentity: true})
		defer primary.Close()
		if got := primary.Get(ctx, key).Val(); got != lease.Token {
			t.Fatalf("primary holds %q, want the lease's token", got)
		}
		if _, err := b.Acquire(ctx, key, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("second Acquire: %v; want ErrNotAcquired", err)
		}
		if err := a.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
	})
}

// RunOnRedisCluster: each of impls that takes a cluster client (Impl.Cluster)
// runs on a Redis Cluster (cluster:3x1, one for all of them), every client through its
// own links: keys of every primary are exclusive, and released for the next holder.
func RunOnRedisCluster(t *testing.T, impls []lockimpl.Impl) {
	var on []lockimpl.Impl
	for _, impl := range impls {
		if impl.Cluster {
			on = append(on, impl)
		}
	}
	if len(on) == 0 {
		return
	}
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.RedisCluster, Nodes: 6, Replicas: 1})
	forEach(t, on, func(t *testing.T, impl lockimpl.Impl) {
		if !impl.RunsOn(cluster.RedisCluster) {
			t.Fatalf("%s takes a cluster client but does not run on %s", impl.Name, cluster.RedisCluster)
		}
		ctx := clustertest.Context(t)
		a, b := ReplicatedLocker(t, c, impl, 0, time.Second), ReplicatedLocker(t, c, impl, 1, time.Second)
		for _, key := range []string{"{k0}", "{k1}", "{k2}"} { // one key per primary
			key = impl.Name + key
			lease, err := a.Acquire(ctx, key, time.Minute)
			if err != nil {
				t.Fatalf("Acquire %s: %v", key, err)
			}
			if _, err := b.Acquire(ctx, key, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("second Acquire of %s: %v; want ErrNotAcquired", key, err)
			}
			if err := a.Release(ctx, lease); err != nil {
				t.Fatalf("Release %s: %v", key, err)
			}
			next, err := b.Acquire(ctx, key, time.Minute)
			if err != nil {
				t.Fatalf("Acquire %s after its release: %v", key, err)
			}
			if err := b.Release(ctx, next); err != nil {
				t.Fatalf("Release %s: %v", key, err)
			}
		}
	})
}
