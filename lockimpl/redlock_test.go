package lockimpl_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// redlockNodes starts n independent lock servers and returns them with raw clients.
func redlockNodes(t *testing.T, n int) ([]cluster.Node, []*redis.Client) {
	t.Helper()
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Nodes, Nodes: n})
	var raw []*redis.Client
	for _, node := range c.Lock {
		rc := redis.NewClient(&redis.Options{Addr: node.Addr(), Protocol: 2, DisableIdentity: true})
		t.Cleanup(func() { rc.Close() })
		raw = append(raw, rc)
	}
	return c.Lock, raw
}

// redlockOn builds a redlock client over nodes, closed at cleanup; cfg.Addrs is filled in.
func redlockOn(t *testing.T, nodes []cluster.Node, cfg lockimpl.Config) lockimpl.Locker {
	t.Helper()
	impl := get(t, "redlock")
	for _, n := range nodes {
		cfg.Addrs = append(cfg.Addrs, n.Addr())
	}
	l, err := impl.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// wantHolds checks whether each of the listed nodes holds token under key (the others
// may be dead or paused).
func wantHolds(t *testing.T, raw []*redis.Client, key, token string, want bool, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		v, err := raw[i].Get(context.Background(), key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("node %d: GET: %v", i, err)
		}
		if got := v == token; got != want {
			t.Errorf("node %d holds %q: %v, want %v", i, token, got, want)
		}
	}
}

// keyOnNone checks that no node has key at all.
func keyOnNone(t *testing.T, raw []*redis.Client, key string, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		if n := raw[i].Exists(context.Background(), key).Val(); n != 0 {
			t.Errorf("node %d still has key %q", i, key)
		}
	}
}

func all(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func kill(t *testing.T, nodes []cluster.Node, which ...int) {
	t.Helper()
	for _, i := range which {
		if err := nodes[i].Kill(clustertest.Context(t)); err != nil {
			t.Fatalf("kill node %d: %v", i, err)
		}
	}
}

const redlockDrift1s = 10*time.Millisecond + 2*time.Millisecond // ttl/100 + 2 ms for ttl 1 s

func TestRedlockAcquireRelease(t *testing.T) {
	nodes, raw := redlockNodes(t, 5)
	a, b := redlockOn(t, nodes, lockimpl.Config{}), redlockOn(t, nodes, lockimpl.Config{})
	ctx := clustertest.Context(t)
	const ttl = 10 * time.Second
	lease, err := a.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if maxValidity := ttl - ttl/100 - 2*time.Millisecond; lease.Validity <= 0 || lease.Validity > maxValidity {
		t.Fatalf("validity %s, want in (0, %s]: drift not accounted for", lease.Validity, maxValidity)
	}
	if r := lease.Remaining(time.Now()); r > ttl-ttl/100-2*time.Millisecond {
		t.Fatalf("remaining %s overstates the ttl minus drift", r)
	}
	wantHolds(t, raw, "k", lease.Token, true, all(5)...)
	for i, rc := range raw {
		if pttl := rc.PTTL(ctx, "k").Val(); pttl <= 0 || pttl > ttl {
			t.Errorf("node %d: PTTL %s, want in (0, %s]", i, pttl, ttl)
		}
	}
	_, err = b.Acquire(ctx, "k", ttl)
	if !errors.Is(err, lockimpl.ErrNotAcquired) || lockimpl.Classify(err) != histories.Fail {
		t.Fatalf("contending Acquire: %v; want ErrNotAcquired", err)
	}
	wantHolds(t, raw, "k", lease.Token, true, all(5)...)
	if err := a.Release(ctx, lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	keyOnNone(t, raw, "k", all(5)...)
	if err := a.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("second Release: %v; want ErrNotHeld", err)
	}
	if _, err := b.Acquire(ctx, "k", ttl); err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
}

func TestRedlockMutualExclusion(t *testing.T) {
	nodes, _ := redlockNodes(t, 5)
	ctx := clustertest.Context(t)
	var inside, granted atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		l := redlockOn(t, nodes, lockimpl.Config{})
		wg.Go(func() {
			for range 40 {
				lease, err := l.Acquire(ctx, "k", 10*time.Second)
				if errors.Is(err, lockimpl.ErrNotAcquired) {
					continue
				}
				if err != nil {
					t.Errorf("Acquire on healthy nodes: %v", err)
					return
				}
				granted.Add(1)
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := l.Release(ctx, lease); err != nil {
					t.Errorf("Release: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if granted.Load() == 0 {
		t.Fatal("no Acquire succeeded")
	}
	t.Logf("%d of 120 attempts granted", granted.Load())
}

func TestRedlockMinorityDown(t *testing.T) {
	nodes, raw := redlockNodes(t, 5)
	l := redlockOn(t, nodes, lockimpl.Config{})
	ctx := clustertest.Context(t)
	kill(t, nodes, 0, 1)
	lease, err := l.Acquire(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatalf("Acquire with 2 of 5 nodes dead: %v", err)
	}
	wantHolds(t, raw, "k", lease.Token, true, 2, 3, 4)
	if !slices.Equal(lease.Nodes, []int{2, 3, 4}) {
		t.Errorf("lease granted by nodes %v, want [2 3 4]: the living ones", lease.Nodes)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("Release with 2 of 5 nodes dead (deleted on the other 3): %v", err)
	}
	keyOnNone(t, raw, "k", 2, 3, 4)

	// A majority dead: the SETs on them have unknown outcomes, so the attempt is
	// unknown, not a refusal; what it set on the living nodes is cleaned up.
	kill(t, nodes, 2)
	_, err = l.Acquire(ctx, "k", 10*time.Second)
	if err == nil || errors.Is(err, lockimpl.ErrNotAcquired) || lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Acquire with 3 of 5 nodes dead: %v; want an unknown outcome", err)
	}
	keyOnNone(t, raw, "k", 3, 4)
}

func TestRedlockMinorityPaused(t *testing.T) {
	nodes, raw := redlockNodes(t, 5)
	l := redlockOn(t, nodes, lockimpl.Config{Timeout: 300 * time.Millisecond})
	ctx := clustertest.Context(t)
	for _, i := range []int{0, 1} {
		if err := nodes[i].Pause(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nodes[i].Resume(context.Background()) })
	}
	const ttl = 2 * time.Second
	lease, err := l.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatalf("Acquire with 2 of 5 nodes paused: %v", err)
	}
	// The paused nodes were waited for until their timeout, which the validity pays for.
	if lease.Validity <= 0 || lease.Validity >= ttl-ttl/100-2*time.Millisecond {
		t.Fatalf("validity %s, want in (0, %s)", lease.Validity, ttl-ttl/100-2*time.Millisecond)
	}
	wantHolds(t, raw, "k", lease.Token, true, 2, 3, 4)
	// Deleted on a majority: released, although two outcomes are unknown.
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("Release with 2 of 5 nodes paused: %v", err)
	}
	keyOnNone(t, raw, "k", 2, 3, 4)
}

func TestRedlockHeldByAnotherOnAMajority(t *testing.T) {
	nodes, raw := redlockNodes(t, 5)
	l := redlockOn(t, nodes, lockimpl.Config{})
	ctx := clustertest.Context(t)
	for _, i := range []int{0, 1, 2} {
		raw[i].Set(ctx, "k", "other", time.Minute)
	}
	_, err := l.Acquire(ctx, "k", 10*time.Second)
	if !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("Acquire of a lock held on 3 of 5 nodes: %v; want ErrNotAcquired", err)
	}
	keyOnNone(t, raw, "k", 3, 4) // granted there, and cleaned up
	wantHolds(t, raw, "k", "other", true, 0, 1, 2)
}

// A dead node whose SET outcome is unknown does not make a refusal unknown when the
// other nodes refused: our token can be on one node at most, never on a majority.
func TestRedlockRefusedWithADeadNode(t *testing.T) {
	nodes, raw := redlockNodes(t, 5)
	a, b := redlockOn(t, nodes, lockimpl.Config{}), redlockOn(t, nodes, lockimpl.Config{})
	ctx := clustertest.Context(t)
	held, err := a.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	kill(t, nodes, 0)
	_, err = b.Acquire(ctx, "k", 10*time.Second)
	if !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("Acquire refused by 4 nodes, the 5th dead: %v; want ErrNotAcquired", err)
	}
	wantHolds(t, raw, "k", held.Token, true, 1, 2, 3, 4)
}

func TestRedlockDeadlineOnTheClientClock(t *testing.T) {
	nodes, _ := redlockNodes(t, 3)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // far from the real time: a skewed clock
	clock := locktest.NewSteppedClock(start, 10*time.Millisecond)
	l := redlockOn(t, nodes, lockimpl.Config{Clock: clock})
	ctx := clustertest.Context(t)
	const ttl = time.Second
	lease, err := l.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	// One reading, before the first SET; the deadline is that reading + ttl - drift.
	if want := start.Add(ttl - redlockDrift1s); !lease.Deadline.Equal(want) {
		t.Fatalf("deadline %v, want %v", lease.Deadline, want)
	}
	if lease.Validity <= 0 || lease.Validity > ttl-redlockDrift1s {
		t.Fatalf("validity %s, want in (0, %s]", lease.Validity, ttl-redlockDrift1s)
	}
	ext, err := l.Extend(ctx, lease, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(10*time.Millisecond + 2*time.Second - 22*time.Millisecond); !ext.Deadline.Equal(want) {
		t.Fatalf("extended deadline %v, want %v", ext.Deadline, want)
	}
	if ext.Validity <= 0 || ext.Validity > 2*time.Second-22*time.Millisecond {
		t.Fatalf("extended validity %s, want in (0, %s]", ext.Validity, 2*time.Second-22*time.Millisecond)
	}
}

func TestRedlockStaleLeaseCannotHarmNewHolder(t *testing.T) {
	nodes, raw := redlockNodes(t, 5)
	a, b := redlockOn(t, nodes, lockimpl.Config{}), redlockOn(t, nodes, lockimpl.Config{})
	ctx := clustertest.Context(t)
	stale, err := a.Acquire(ctx, "k", 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range raw {
		locktest.WaitGone(t, rc, "k")
	}
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
	wantHolds(t, raw, "k", fresh.Token, true, all(5)...)
	for i, rc := range raw {
		if pttl := rc.PTTL(ctx, "k").Val(); pttl > time.Minute {
			t.Errorf("node %d: PTTL %s: the stale extend touched the new holder's lock", i, pttl)
		}
	}
}

// Release is ok only when our token was deleted on a majority: a lease left on a
// minority was not the lock any more.
func TestRedlockReleaseNeedsAMajority(t *testing.T) {
	nodes, raw := redlockNodes(t, 5)
	l := redlockOn(t, nodes, lockimpl.Config{})
	ctx := clustertest.Context(t)
	lease, err := l.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 2} {
		raw[i].Del(ctx, "k")
	}
	if err := l.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("Release of a lease left on 2 of 5 nodes: %v; want ErrNotHeld", err)
	}
	keyOnNone(t, raw, "k", all(5)...) // the minority's keys are cleaned up all the same

	lease, err = l.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	kill(t, nodes, 0, 1)
	raw[2].Del(ctx, "k")
	// Deleted on 2, 2 unknown: it may have been on a majority, or not.
	if err := l.Release(ctx, lease); err == nil || lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Release deleted on 2, unknown on 2: %v; want unknown", err)
	}
}

func TestRedlockExtend(t *testing.T) {
	nodes, raw := redlockNodes(t, 5)
	l := redlockOn(t, nodes, lockimpl.Config{})
	ctx := clustertest.Context(t)
	lease, err := l.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := l.Extend(ctx, lease, time.Hour)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if ext.Key != lease.Key || ext.Token != lease.Token || !ext.Deadline.After(lease.Deadline) {
		t.Fatalf("extended lease %+v from %+v", ext, lease)
	}
	for i, rc := range raw {
		if pttl := rc.PTTL(ctx, "k").Val(); pttl <= time.Second || pttl > time.Hour {
			t.Errorf("node %d: PTTL after Extend %s, want in (1s, 1h]", i, pttl)
		}
	}
	// Lost on a minority: still ours on the majority.
	raw[0].Del(ctx, "k")
	raw[1].Del(ctx, "k")
	if _, err := l.Extend(ctx, lease, time.Hour); err != nil {
		t.Fatalf("Extend with the key on 3 of 5 nodes: %v", err)
	}
	keyOnNone(t, raw, "k", 0, 1) // extend never sets a key that is gone
	raw[2].Del(ctx, "k")
	if _, err := l.Extend(ctx, lease, time.Hour); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("Extend with the key on 2 of 5 nodes: %v; want ErrNotHeld", err)
	}

	lease, err = l.Acquire(ctx, "k2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	kill(t, nodes, 0, 1)
	raw[2].Del(ctx, "k2")
	if _, err := l.Extend(ctx, lease, time.Hour); err == nil || lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Extend ok on 2, refused on 1, unknown on 2: %v; want unknown", err)
	}
}

func TestRedlockCrashAtGranted(t *testing.T) {
	nodes, raw := redlockNodes(t, 3)
	var steps []string
	crash := func(_ context.Context, step string) error {
		steps = append(steps, step)
		return lockimpl.ErrCrashed
	}
	l := redlockOn(t, nodes, lockimpl.Config{Step: crash})
	_, err := l.Acquire(clustertest.Context(t), "k", time.Minute)
	if !errors.Is(err, lockimpl.ErrCrashed) || lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Acquire crashed at the step: %v; want ErrCrashed, unknown", err)
	}
	if len(steps) != 1 || steps[0] != lockimpl.StepGranted {
		t.Fatalf("steps %v, want [%s]", steps, lockimpl.StepGranted)
	}
	// The grant stays: a held lock nobody believes in, until its ttl.
	for i, rc := range raw {
		if rc.Exists(context.Background(), "k").Val() != 1 {
			t.Errorf("node %d: the crashed client's lock is gone", i)
		}
	}
}

func TestRedlockNeedsNodes(t *testing.T) {
	impl := get(t, "redlock")
	if impl.Topology != "nodes" || impl.Fencing || len(impl.Steps) != 1 || impl.Steps[0] != lockimpl.StepGranted {
		t.Fatalf("registry entry %+v", impl)
	}
	if l, err := impl.New(lockimpl.Config{}); err == nil {
		l.Close()
		t.Fatal("redlock without node addresses: no error")
	}
}
