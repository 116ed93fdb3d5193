package libs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/libs"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// The third-party adapters are tested against real servers: redsync on three independent
// nodes, redislock and rueidislock on one server. A raw client per server checks what
// the library left there.

// get is this package's implementation called name.
func get(t testing.TB, name string) lockimpl.Impl {
	t.Helper()
	return locktest.Impl(t, libs.Impls(), name)
}

// thirdParty builds implementation name from cfg, closed at cleanup.
func thirdParty(t *testing.T, name string, cfg lockimpl.Config) lockimpl.Locker {
	t.Helper()
	return locktest.New(t, get(t, name), cfg)
}

// TestConformance runs the shared conformance suite on the correct single-instance
// adapter (rueidislock is not one: it cannot extend, and keeps three keys).
func TestConformance(t *testing.T) {
	locktest.Conformance(t, get(t, "redislock"))
}

// tpRawClient is an inspection client of addr.
func tpRawClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestThirdPartyRegistered(t *testing.T) {
	for name, topo := range map[string]string{"redsync": cluster.Nodes, "redislock": cluster.Single, "rueidislock": cluster.Single} {
		impl := get(t, name)
		if impl.Topology != topo || impl.Fencing || impl.Mutant || len(impl.Steps) != 1 || impl.Steps[0] != lockimpl.StepGranted {
			t.Errorf("%s: %+v; want topology %s, no fencing, not a mutant, step %s", name, impl, topo, lockimpl.StepGranted)
		}
	}
}

// --- redsync -------------------------------------------------------------------------

// redsyncNodes starts three independent servers and returns their addresses and raw clients.
func redsyncNodes(t *testing.T) (*cluster.Cluster, []string, []*redis.Client) {
	t.Helper()
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Nodes, Nodes: 3})
	addrs := c.LockAddrs()
	raws := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		raws[i] = tpRawClient(t, a)
	}
	return c, addrs, raws
}

// tpOnNodes is key's value on each node ("" when absent).
func tpOnNodes(ctx context.Context, raws []*redis.Client, key string) []string {
	vals := make([]string, len(raws))
	for i, r := range raws {
		vals[i] = r.Get(ctx, key).Val()
	}
	return vals
}

// tpWarm opens l's connections: redsync gives an acquire 5% of the ttl (its timeout
// factor), too little for a dial on a loaded machine when the ttl is short.
func tpWarm(t *testing.T, l lockimpl.Locker) {
	t.Helper()
	ctx := clustertest.Context(t)
	lease, err := l.Acquire(ctx, "warm-up", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
}

func TestRedsyncAcquireRelease(t *testing.T) {
	_, addrs, raws := redsyncNodes(t)
	a := thirdParty(t, "redsync", lockimpl.Config{Addrs: addrs})
	b := thirdParty(t, "redsync", lockimpl.Config{Addrs: addrs})
	ctx := clustertest.Context(t)
	const ttl = 10 * time.Second
	before := time.Now()
	lease, err := a.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if lease.Key != "k" || lease.Token == "" || lease.Fence != 0 {
		t.Fatalf("lease %+v: want key k, redsync's token, no fence", lease)
	}
	// redsync's validity takes the drift (1% of the expiry) off: never the whole ttl.
	if lease.Validity <= 0 || lease.Validity >= ttl || lease.Deadline.After(before.Add(ttl)) {
		t.Fatalf("validity %s, deadline %v; want in (0, %s), by %v", lease.Validity, lease.Deadline, ttl, before.Add(ttl))
	}
	for i, v := range tpOnNodes(ctx, raws, "k") {
		if v != lease.Token {
			t.Fatalf("node %d holds %q, want the lease's token %q", i, v, lease.Token)
		}
		if pttl := raws[i].PTTL(ctx, "k").Val(); pttl <= 0 || pttl > ttl {
			t.Fatalf("node %d: PTTL %s, want in (0, %s]", i, pttl, ttl)
		}
	}
	_, err = b.Acquire(ctx, "k", ttl)
	locktest.WantRefused(t, "contending Acquire", err, lockimpl.ErrNotAcquired)
	if err := a.Release(ctx, lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	for i, v := range tpOnNodes(ctx, raws, "k") {
		if v != "" {
			t.Fatalf("node %d still holds %q after Release", i, v)
		}
	}
	locktest.WantRefused(t, "second Release", a.Release(ctx, lease), lockimpl.ErrNotHeld)
	if _, err := b.Acquire(ctx, "k", ttl); err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
}

func TestRedsyncStaleLeaseCannotHarmNewHolder(t *testing.T) {
	_, addrs, raws := redsyncNodes(t)
	a := thirdParty(t, "redsync", lockimpl.Config{Addrs: addrs})
	b := thirdParty(t, "redsync", lockimpl.Config{Addrs: addrs})
	ctx := clustertest.Context(t)
	tpWarm(t, a)
	stale, err := a.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raws {
		locktest.WaitGone(t, r, "k")
	}
	fresh, err := b.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	locktest.WantRefused(t, "Release of a stale lease", a.Release(ctx, stale), lockimpl.ErrNotHeld)
	_, err = a.Extend(ctx, stale, time.Hour)
	locktest.WantRefused(t, "Extend of a stale lease", err, lockimpl.ErrNotHeld)
	for i, v := range tpOnNodes(ctx, raws, "k") {
		if v != fresh.Token {
			t.Fatalf("node %d holds %q, want the new holder's token", i, v)
		}
		if pttl := raws[i].PTTL(ctx, "k").Val(); pttl > time.Minute {
			t.Fatalf("node %d: PTTL %s: the stale extend touched the new holder's lock", i, pttl)
		}
	}
}

func TestRedsyncExtend(t *testing.T) {
	_, addrs, raws := redsyncNodes(t)
	l := thirdParty(t, "redsync", lockimpl.Config{Addrs: addrs})
	ctx := clustertest.Context(t)
	tpWarm(t, l)
	lease, err := l.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := l.Extend(ctx, lease, time.Hour)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if ext.Key != lease.Key || ext.Token != lease.Token || !ext.Deadline.After(lease.Deadline) || ext.Validity <= time.Second {
		t.Fatalf("extended lease %+v from %+v: want the same key and token, a later deadline", ext, lease)
	}
	for i, r := range raws {
		if pttl := r.PTTL(ctx, "k").Val(); pttl <= time.Second || pttl > time.Hour {
			t.Fatalf("node %d: PTTL after Extend %s, want in (1s, 1h]", i, pttl)
		}
	}
	if err := l.Release(ctx, ext); err != nil {
		t.Fatalf("Release of the extended lease: %v", err)
	}
	_, err = l.Extend(ctx, ext, time.Hour)
	locktest.WantRefused(t, "Extend after Release", err, lockimpl.ErrNotHeld)
}

func TestRedsyncDeadlineIsTheLibrarysValidity(t *testing.T) {
	_, addrs, _ := redsyncNodes(t)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := locktest.NewSteppedClock(start, 10*time.Millisecond)
	l := thirdParty(t, "redsync", lockimpl.Config{Addrs: addrs, Clock: clock})
	const ttl = 10 * time.Second
	lease, err := l.Acquire(clustertest.Context(t), "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	// Readings: start, then now after the call; the deadline is now + what redsync left
	// (at most ttl − 1% drift), capped at start + ttl.
	now := start.Add(10 * time.Millisecond)
	if lease.Deadline.After(start.Add(ttl)) || lease.Deadline.After(now.Add(ttl-ttl/100)) || lease.Validity != lease.Deadline.Sub(now) {
		t.Fatalf("deadline %v, validity %s; want at most %v, counted from %v", lease.Deadline, lease.Validity, now.Add(ttl-ttl/100), now)
	}
	if lease.Validity < ttl/2 {
		t.Fatalf("validity %s: far less than redsync grants", lease.Validity)
	}
}

func TestRedsyncQuorum(t *testing.T) {
	c, addrs, raws := redsyncNodes(t)
	a := thirdParty(t, "redsync", lockimpl.Config{Addrs: addrs, Timeout: time.Second})
	ctx := clustertest.Context(t)
	// One node of three down: the quorum of two still grants and releases.
	if err := c.Lock[2].Kill(ctx); err != nil {
		t.Fatal(err)
	}
	lease, err := a.Acquire(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatalf("Acquire with one node down: %v", err)
	}
	if v := tpOnNodes(ctx, raws[:2], "k"); v[0] != lease.Token || v[1] != lease.Token {
		t.Fatalf("live nodes hold %q, want the lease's token", v)
	}
	if err := a.Release(ctx, lease); err != nil {
		t.Fatalf("Release with one node down: %v", err)
	}
	// Two down: no quorum, and the refused connections are unknown outcomes.
	if err := c.Lock[1].Kill(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = a.Acquire(ctx, "k", 10*time.Second)
	locktest.WantUnknown(t, "Acquire with two nodes down", err)
	// The one live node granted, and redsync deleted it again as there was no quorum.
	if v := raws[0].Get(ctx, "k").Val(); v != "" {
		t.Fatalf("node 0 holds %q after a failed acquire", v)
	}
}

func TestRedsyncConnectionRefused(t *testing.T) {
	l := thirdParty(t, "redsync", lockimpl.Config{Addrs: []string{clustertest.DeadAddr(t), clustertest.DeadAddr(t), clustertest.DeadAddr(t)}, Timeout: time.Second})
	ctx := clustertest.Context(t)
	_, err := l.Acquire(ctx, "k", time.Second)
	locktest.WantUnknown(t, "Acquire with every node refusing connections", err)
	lease := lockimpl.Lease{Key: "k", Token: "t"}
	locktest.WantUnknown(t, "Release with every node refusing connections", l.Release(ctx, lease))
	_, err = l.Extend(ctx, lease, time.Second)
	locktest.WantUnknown(t, "Extend with every node refusing connections", err)
}

func TestRedsyncCrashAfterGrant(t *testing.T) {
	_, addrs, raws := redsyncNodes(t)
	l := thirdParty(t, "redsync", lockimpl.Config{Addrs: addrs, Step: locktest.CrashAtGrant})
	ctx := clustertest.Context(t)
	_, err := l.Acquire(ctx, "k", time.Minute)
	if !errors.Is(err, lockimpl.ErrCrashed) || lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Acquire: %v; want the injected crash, unknown", err)
	}
	for i, r := range raws {
		if pttl := r.PTTL(ctx, "k").Val(); pttl <= 0 {
			t.Fatalf("node %d: PTTL %s, want the granted lock left to expire", i, pttl)
		}
	}
}

// --- bsm/redislock ---------------------------------------------------------------------

func TestBSMRedislockStaleLeaseCannotHarmNewHolder(t *testing.T) {
	addr, rc := locktest.Server(t)
	a, b := locktest.Locker(t, get(t, "redislock"), addr, nil), locktest.Locker(t, get(t, "redislock"), addr, nil)
	ctx := clustertest.Context(t)
	stale, err := a.Acquire(ctx, "k", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	locktest.WaitGone(t, rc, "k")
	fresh, err := b.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The stale lease is still live in a's adapter: these reach the library's scripts.
	_, err = a.Extend(ctx, stale, time.Hour)
	locktest.WantRefused(t, "Extend of a stale lease", err, lockimpl.ErrNotHeld)
	stale2, err := a.Acquire(ctx, "k2", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	locktest.WaitGone(t, rc, "k2")
	fresh2, err := b.Acquire(ctx, "k2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	locktest.WantRefused(t, "Release of a stale lease", a.Release(ctx, stale2), lockimpl.ErrNotHeld)
	for key, token := range map[string]string{"k": fresh.Token, "k2": fresh2.Token} {
		if got := rc.Get(ctx, key).Val(); got != token {
			t.Fatalf("server holds %q under %s, want the new holder's token", got, key)
		}
		if pttl := rc.PTTL(ctx, key).Val(); pttl > time.Minute {
			t.Fatalf("PTTL %s: the stale extend touched the new holder's lock", pttl)
		}
	}
}

func TestBSMRedislockExtend(t *testing.T) {
	addr, rc := locktest.Server(t)
	l := locktest.Locker(t, get(t, "redislock"), addr, nil)
	ctx := clustertest.Context(t)
	lease, err := l.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := l.Extend(ctx, lease, time.Hour)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if ext.Key != lease.Key || ext.Token != lease.Token || !ext.Deadline.After(lease.Deadline) || ext.Validity <= time.Second {
		t.Fatalf("extended lease %+v from %+v: want the same key and token, a later deadline", ext, lease)
	}
	if pttl := rc.PTTL(ctx, "k").Val(); pttl <= time.Second || pttl > time.Hour {
		t.Fatalf("PTTL after Extend %s, want in (1s, 1h]", pttl)
	}
	if err := l.Release(ctx, ext); err != nil {
		t.Fatalf("Release of the extended lease: %v", err)
	}
	_, err = l.Extend(ctx, ext, time.Hour)
	locktest.WantRefused(t, "Extend after Release", err, lockimpl.ErrNotHeld)
}

func TestBSMRedislockServerKilled(t *testing.T) {
	l, lease := locktest.HeldOnKilledServer(t, get(t, "redislock"), time.Second, time.Minute)
	ctx := clustertest.Context(t)
	_, err := l.Extend(ctx, lease, time.Minute)
	locktest.WantUnknown(t, "Extend on a killed server", err)
	locktest.WantUnknown(t, "Release on a killed server", l.Release(ctx, lease))
	_, err = l.Acquire(ctx, "k2", time.Minute)
	locktest.WantUnknown(t, "Acquire on a killed server", err)
}

// --- rueidislock ---------------------------------------------------------------------

// rueidisKeys are the three keys rueidislock keeps for the lock name key.
func rueidisKeys(key string) []string {
	return []string{"rueidislock:0:" + key, "rueidislock:1:" + key, "rueidislock:2:" + key}
}

// rueidisLive counts the keys of key that exist, with an expiry of at most ttl.
func rueidisLive(t *testing.T, ctx context.Context, rc *redis.Client, key string, ttl time.Duration) int {
	t.Helper()
	n := 0
	for _, k := range rueidisKeys(key) {
		pttl := rc.PTTL(ctx, k).Val()
		switch {
		case pttl == -1 || pttl > ttl:
			t.Fatalf("%s: PTTL %s, want at most %s", k, pttl, ttl)
		case pttl > 0:
			n++
		}
	}
	return n
}

func TestRueidislockAcquireRelease(t *testing.T) {
	addr, rc := locktest.Server(t)
	a, b := locktest.Locker(t, get(t, "rueidislock"), addr, nil), locktest.Locker(t, get(t, "rueidislock"), addr, nil)
	ctx := clustertest.Context(t)
	const ttl = time.Minute
	lease, err := a.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if lease.Key != "k" || len(lease.Token) != 32 || lease.Fence != 0 || lease.Validity <= 0 || lease.Validity > ttl {
		t.Fatalf("lease %+v: want key k, a local 128-bit token, no fence, validity in (0, %s]", lease, ttl)
	}
	if n := rueidisLive(t, ctx, rc, "k", ttl); n < 2 {
		t.Fatalf("%d of the lock's 3 keys set, want a majority", n)
	}
	if _, held := a.(lockimpl.Renewer).Current(lease); !held {
		t.Fatal("Current: not held right after Acquire")
	}
	_, err = b.Acquire(ctx, "k", ttl)
	locktest.WantRefused(t, "contending Acquire", err, lockimpl.ErrNotAcquired)
	if err := a.Release(ctx, lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n := rueidisLive(t, ctx, rc, "k", ttl); n != 0 {
		t.Fatalf("%d keys still there after Release", n)
	}
	if _, held := a.(lockimpl.Renewer).Current(lease); held {
		t.Fatal("Current: held after Release")
	}
	locktest.WantRefused(t, "second Release", a.Release(ctx, lease), lockimpl.ErrNotHeld)
	if _, err := b.Acquire(ctx, "k", ttl); err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
}

func TestRueidislockRenewsByItself(t *testing.T) {
	addr, rc := locktest.Server(t)
	l := locktest.Locker(t, get(t, "rueidislock"), addr, nil)
	ctx := clustertest.Context(t)
	const ttl = 500 * time.Millisecond
	// A renewal that a loaded machine delays past the key's expiry loses the lock (the
	// library then says so); a lock that is never renewed loses it every time.
	renewed := false
	for attempt := 0; attempt < 3 && !renewed; attempt++ {
		key := fmt.Sprintf("k%d", attempt)
		lease, err := l.Acquire(ctx, key, ttl)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * ttl)
		cur, held := l.(lockimpl.Renewer).Current(lease)
		if live := rueidisLive(t, ctx, rc, key, ttl); held && live >= 2 {
			renewed = true
			// The adapter cannot see the renewals: the deadline stays the one Acquire granted.
			if !cur.Deadline.Equal(lease.Deadline) {
				t.Fatalf("Current moved the deadline from %v to %v", lease.Deadline, cur.Deadline)
			}
		} else {
			t.Logf("attempt %d: held %v, %d keys live after %s", attempt, held, live, 3*ttl)
		}
		_, err = l.Extend(ctx, lease, time.Hour)
		if !errors.Is(err, lockimpl.ErrUnsupported) {
			t.Fatalf("Extend: %v; want ErrUnsupported", err)
		}
		if err := l.Release(ctx, lease); err != nil && !errors.Is(err, lockimpl.ErrNotHeld) {
			t.Fatal(err)
		}
		if n := rueidisLive(t, ctx, rc, key, ttl); n != 0 {
			t.Fatalf("%d keys still there after Release", n)
		}
	}
	if !renewed {
		t.Fatalf("the keys never outlived their first expiry (%s)", ttl)
	}
}

func TestRueidislockLostWhenKeysDeleted(t *testing.T) {
	addr, rc := locktest.Server(t)
	a, b := locktest.Locker(t, get(t, "rueidislock"), addr, nil), locktest.Locker(t, get(t, "rueidislock"), addr, nil)
	ctx := clustertest.Context(t)
	lease, err := a.Acquire(ctx, "k", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Someone else deletes the keys: the invalidations tell the library, which ends the
	// lock's context.
	if err := rc.Del(ctx, rueidisKeys("k")...).Err(); err != nil {
		t.Fatal(err)
	}
	locktest.Eventually(t, "Current turns false", func() bool {
		_, held := a.(lockimpl.Renewer).Current(lease)
		return !held
	})
	fresh, err := b.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after the keys were deleted: %v", err)
	}
	locktest.WantRefused(t, "Release of a lost lease", a.Release(ctx, lease), lockimpl.ErrNotHeld)
	if _, err := a.Extend(ctx, lease, time.Hour); !errors.Is(err, lockimpl.ErrUnsupported) {
		t.Fatalf("Extend: %v; want ErrUnsupported", err)
	}
	if n := rueidisLive(t, ctx, rc, "k", time.Minute); n < 2 {
		t.Fatalf("the stale release touched the new holder's keys: %d live", n)
	}
	if _, held := b.(lockimpl.Renewer).Current(fresh); !held {
		t.Fatal("the new holder lost its lock")
	}
}

func TestRueidislockServerKilled(t *testing.T) {
	l, lease := locktest.HeldOnKilledServer(t, get(t, "rueidislock"), time.Second, time.Second)
	// The connection drops: the library gives the lock up.
	locktest.Eventually(t, "Current turns false once the server is gone", func() bool {
		_, held := l.(lockimpl.Renewer).Current(lease)
		return !held
	})
	_, err := l.Acquire(clustertest.Context(t), "k2", time.Second)
	locktest.WantUnknown(t, "Acquire on a killed server", err)
}

func TestRueidislockCrashAfterGrant(t *testing.T) {
	addr, rc := locktest.Server(t)
	a := locktest.Locker(t, get(t, "rueidislock"), addr, locktest.CrashAtGrant)
	b := locktest.Locker(t, get(t, "rueidislock"), addr, nil)
	ctx := clustertest.Context(t)
	const ttl = time.Second
	_, err := a.Acquire(ctx, "k", ttl)
	if !errors.Is(err, lockimpl.ErrCrashed) || lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Acquire: %v; want the injected crash, unknown", err)
	}
	// The crash deletes nothing: the lock stays taken...
	_, err = b.Acquire(ctx, "k", time.Minute)
	locktest.WantRefused(t, "Acquire right after the crash", err, lockimpl.ErrNotAcquired)
	// ...and is no longer renewed: it expires.
	for _, k := range rueidisKeys("k") {
		locktest.WaitGone(t, rc, k)
	}
	if _, err := b.Acquire(ctx, "k", time.Minute); err != nil {
		t.Fatalf("Acquire after the crashed holder's keys expired: %v", err)
	}
}

func TestRueidislockRunsOnReplicated(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 2})
	ctx := clustertest.Context(t)
	a, b := locktest.ReplicatedLocker(t, c, get(t, "rueidislock"), 0, time.Second), locktest.ReplicatedLocker(t, c, get(t, "rueidislock"), 1, time.Second)
	lease, err := a.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n := rueidisLive(t, ctx, tpRawClient(t, c.Lock[0].Addr()), "k", time.Minute); n < 2 {
		t.Fatalf("%d keys on the primary, want a majority", n)
	}
	_, err = b.Acquire(ctx, "k", time.Minute)
	locktest.WantRefused(t, "contending Acquire", err, lockimpl.ErrNotAcquired)
	if err := a.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
}

// TestRueidislockContextOutlivesKeys shows why Current keeps Acquire's deadline: when a
// renewal gets no reply (the holder's link black-holed), the library waits up to
// KeyValidity for it while the keys expire, so for a while another client holds the lock
// and the holder's context is still alive. A client trusting the context alone believes
// it holds a lock someone else holds; the deadline has passed by then.
func TestRueidislockContextOutlivesKeys(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Single, Nodes: 1})
	ctx := clustertest.Context(t)
	epA, err := c.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	a := thirdParty(t, "rueidislock", lockimpl.Config{Addrs: epA.Lock, Timeout: 5 * time.Second})
	b := thirdParty(t, "rueidislock", lockimpl.Config{Addrs: c.LockAddrs(), Timeout: 5 * time.Second})
	const ttl = time.Second // renewed every 500 ms; a stalled renewal waits up to 1 s
	lease, err := a.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	link := cluster.ClientLink(0, c.Lock[0].Name())
	toxic, err := c.Net.AddToxic(link, netproxy.Toxic{Kind: netproxy.Blackhole, Direction: netproxy.Up})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Net.RemoveToxic(link, toxic)
	var fresh lockimpl.Lease
	stalled := time.Now()
	locktest.Eventually(t, "another client acquires once the holder's keys expired", func() bool {
		fresh, err = b.Acquire(ctx, "k", time.Minute)
		return err == nil
	})
	cur, held := a.(lockimpl.Renewer).Current(lease)
	if !held {
		t.Fatal("the holder's context ended before the keys expired: rueidislock no longer overstates (update docs/libraries.md)")
	}
	if cur.Remaining(time.Now()) > 0 {
		t.Fatalf("Current reports %s left while another client holds the lock", cur.Remaining(time.Now()))
	}
	taken := time.Since(stalled)
	locktest.Eventually(t, "the holder's context ends", func() bool {
		_, held := a.(lockimpl.Renewer).Current(lease)
		return !held
	})
	t.Logf("after the stall: another client acquired at %s, the holder's context ended at %s", taken, time.Since(stalled))
	if _, held := b.(lockimpl.Renewer).Current(fresh); !held {
		t.Fatal("the new holder lost its lock")
	}
}

// TestRedsyncOnRedisCluster: redsync over one pool holding a cluster client (a Redlock of
// one node, the cluster) takes keys of every primary.
func TestRedsyncOnRedisCluster(t *testing.T) {
	locktest.RunOnRedisCluster(t, []lockimpl.Impl{get(t, "redsync")})
}

// TestRueidislockOnRedisCluster: rueidislock with a rueidis cluster client (its three
// keys of a lock in their own slots) takes keys of every primary.
func TestRueidislockOnRedisCluster(t *testing.T) {
	locktest.RunOnRedisCluster(t, []lockimpl.Impl{get(t, "rueidislock")})
}
