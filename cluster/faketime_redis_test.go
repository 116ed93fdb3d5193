package cluster_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/faketime"
)

// These tests run the libc build under libfaketime: `make deps` (or
// scripts/build-redis-libc.sh) must have built it; a missing build fails them with the
// hint, it never skips them.

// serverOffset is how far addr's wall clock is ahead of ours, measured with TIME against
// the midpoint of the round trip.
func serverOffset(t *testing.T, addr string) time.Duration {
	t.Helper()
	c := clustertest.Client(t, addr)
	ctx := clustertest.Context(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING %s: %v", addr, err)
	}
	before := time.Now()
	server, err := c.Time(ctx).Result()
	after := time.Now()
	if err != nil {
		t.Fatalf("TIME %s: %v", addr, err)
	}
	return server.Sub(before.Add(after.Sub(before) / 2))
}

// near fails unless got is within tol of want.
func near(t *testing.T, what string, got, want, tol time.Duration) {
	t.Helper()
	if (got - want).Abs() > tol {
		t.Fatalf("%s = %s, want %s ± %s", what, got, want, tol)
	}
}

func faketimeNode(t *testing.T) (cluster.ClockNode, *cluster.Cluster) {
	t.Helper()
	c := clustertest.StartWith(t, cluster.Topology{Kind: cluster.Single, Nodes: 1}, cluster.Options{ServerClock: cluster.ClockFaketime})
	n, ok := c.Lock[0].(cluster.ClockNode)
	if !ok || !n.FakeClock() {
		t.Fatalf("lock-0 is a %T that does not run under libfaketime", c.Lock[0])
	}
	if s, ok := c.Store.(cluster.ClockNode); ok && s.FakeClock() {
		t.Fatal("the store runs under libfaketime; only lock servers should")
	}
	return n, c
}

// A jump forward past a key's TTL expires it at once; the jump back gives the others their
// time back. The TTLs are far longer than any delay of a slow machine, so only the jump
// can expire the key.
func TestFaketimeJumpExpiresKeysEarly(t *testing.T) {
	n, _ := faketimeNode(t)
	near(t, "clock offset at start", serverOffset(t, n.Addr()), 0, 250*time.Millisecond)
	rc, ctx := clustertest.Client(t, n.Addr()), clustertest.Context(t)
	if err := rc.Set(ctx, "short", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx, "long", "v", 10*time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	if err := n.SetClock(2*time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Get(ctx, "short").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET short after +2m = %v, want it expired", err)
	}
	t.Logf("a key with 60 s to live was gone %s after it was set, once the clock jumped +2m", time.Since(set))
	pttl, err := rc.PTTL(ctx, "long").Result()
	if err != nil {
		t.Fatal(err)
	}
	near(t, "PTTL of the 10m key after +2m", pttl, 8*time.Minute, 2*time.Second)
	near(t, "clock offset after +2m", serverOffset(t, n.Addr()), 2*time.Minute, 250*time.Millisecond)
	near(t, "ClockOffset after +2m", n.ClockOffset(), 2*time.Minute, 0)

	if err := n.SetClock(0, 1); err != nil {
		t.Fatal(err)
	}
	near(t, "clock offset after SetClock(0, 1)", serverOffset(t, n.Addr()), 0, 250*time.Millisecond)
	if pttl, err = rc.PTTL(ctx, "long").Result(); err != nil {
		t.Fatal(err)
	}
	near(t, "PTTL of the 10m key after the clock came back", pttl, 10*time.Minute, 5*time.Second)
}

// Rate 4: the server's clock gains three seconds for each real one, measured against the
// real time that passed, not against a sleep's nominal length.
func TestFaketimeRunsFast(t *testing.T) {
	n, _ := faketimeNode(t)
	start := time.Now()
	if err := n.SetClock(0, 4); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	got := serverOffset(t, n.Addr())
	gained := 3 * time.Since(start)
	t.Logf("at rate 4 for %s the server clock gained %s (3× the real time: %s)", time.Since(start), got, gained)
	near(t, "clock offset at rate 4", got, gained, 250*time.Millisecond)
	near(t, "ClockOffset at rate 4", n.ClockOffset(), 3*time.Since(start), 250*time.Millisecond)
	if err := n.SetClock(0, 1); err != nil {
		t.Fatal(err)
	}
	near(t, "clock offset back at rate 1", serverOffset(t, n.Addr()), 0, 250*time.Millisecond)
}

// The clock is the node's, not the process's: it stays where it was set across a crash.
func TestFaketimeSurvivesRestart(t *testing.T) {
	n, _ := faketimeNode(t)
	if err := n.SetClock(30*time.Second, 1); err != nil {
		t.Fatal(err)
	}
	ctx := clustertest.Context(t)
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	got := serverOffset(t, n.Addr())
	t.Logf("clock set +30s, after kill -9 and restart TIME says %s", got)
	near(t, "clock offset after restart", got, 30*time.Second, 250*time.Millisecond)
}

func TestSetClockWithoutFaketime(t *testing.T) {
	n := clustertest.Node(t, cluster.NodeConfig{Name: "real"})
	cn, ok := n.(cluster.ClockNode)
	if !ok {
		t.Fatalf("a process node is a %T, not a ClockNode", n)
	}
	if cn.FakeClock() || cn.ClockOffset() != 0 {
		t.Fatalf("FakeClock %v, ClockOffset %s on a server not under libfaketime", cn.FakeClock(), cn.ClockOffset())
	}
	if err := cn.SetClock(time.Second, 1); err == nil || !strings.Contains(err.Error(), "libfaketime") {
		t.Fatalf("SetClock = %v, want an error saying it does not run under libfaketime", err)
	}
}

func TestFaketimeMissingBuildNamesTheScript(t *testing.T) {
	t.Setenv(faketime.EnvCache, t.TempDir())
	t.Setenv(faketime.EnvFaketimeServer, "")
	b := clustertest.Backend(t)
	_, err := b.StartNode(clustertest.Context(t), cluster.NodeConfig{Name: "lock-0", Faketime: true})
	if err == nil || !strings.Contains(err.Error(), "scripts/build-redis-libc.sh") {
		t.Fatalf("StartNode under libfaketime without a build: %v, want an error naming scripts/build-redis-libc.sh", err)
	}
}

func TestFaketimeRefusesJemalloc(t *testing.T) {
	t.Setenv(faketime.EnvFaketimeServer, "redis-server") // Debian's, built with jemalloc
	b := clustertest.Backend(t)
	_, err := b.StartNode(clustertest.Context(t), cluster.NodeConfig{Name: "lock-0", Faketime: true})
	if err == nil || !strings.Contains(err.Error(), "jemalloc") {
		t.Fatalf("StartNode of a jemalloc build under libfaketime: %v, want an error about jemalloc", err)
	}
}
