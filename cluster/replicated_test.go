package cluster_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
)

// startReplicated starts replicated:n and returns it with a bounded context.
func startReplicated(t *testing.T, n int) (*cluster.Cluster, context.Context) {
	t.Helper()
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: n})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c, ctx
}

// failoverClient is go-redis's failover client on c's Sentinels, closed at cleanup.
func failoverClient(t *testing.T, c *cluster.Cluster) *redis.Client {
	t.Helper()
	fc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: cluster.MasterName, SentinelAddrs: c.SentinelAddrs(),
		Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	t.Cleanup(func() { fc.Close() })
	return fc
}

// eventually retries f every 20 ms until it succeeds or d passes, and returns its last error.
func eventually(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestReplicatedTopologyReplicatesThroughLinks(t *testing.T) {
	t.Parallel()
	c, ctx := startReplicated(t, 3)
	if len(c.Lock) != 3 || len(c.Sentinels) != 3 || c.Store == nil {
		t.Fatalf("got %d data nodes, %d sentinels, store %v; want 3, 3 and a store", len(c.Lock), len(c.Sentinels), c.Store)
	}
	primary, err := c.Primary(ctx)
	if err != nil || primary != c.Lock[0] {
		t.Fatalf("Primary = %v, %v; want redis-0", primary, err)
	}
	if addrs := c.MasterAddrs(ctx); slices.ContainsFunc(addrs, func(a string) bool { return a != c.Lock[0].Addr() }) {
		t.Fatalf("sentinels name %q; want every one to name redis-0 at %s", addrs, c.Lock[0].Addr())
	}
	// Each replica replicates through its own link, so that a network fault can lag it.
	if got, want := c.Net.Match("redis-0->*"), []string{"redis-0->redis-1", "redis-0->redis-2"}; !slices.Equal(got, want) {
		t.Fatalf("replication links %q, want %q", got, want)
	}
	for _, r := range c.Lock[1:] {
		if role, err := c.Role(ctx, r); err != nil || role != "slave" {
			t.Fatalf("%s: role %q, %v; want slave", r.Name(), role, err)
		}
		info, err := clustertest.Client(t, r.Addr()).Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		link, _ := c.Net.Link(cluster.ServerLink("redis-0", r.Name()), c.Lock[0].Addr())
		_, port, _ := net.SplitHostPort(link)
		if !strings.Contains(info, "master_port:"+port+"\r\n") {
			t.Errorf("%s does not replicate through its link %s:\n%s", r.Name(), link, info)
		}
	}
	if err := clustertest.Client(t, c.Lock[0].Addr()).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Lock[1:] {
		err := eventually(5*time.Second, func() error { return clustertest.Client(t, r.Addr()).Get(ctx, "k").Err() })
		if err != nil {
			t.Errorf("key written on the primary never reached %s: %v", r.Name(), err)
		}
	}
}

func TestReplicatedEndpoints(t *testing.T) {
	t.Parallel()
	c, ctx := startReplicated(t, 2)
	ep, err := c.Endpoints(1)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Master != cluster.MasterName || len(ep.Sentinels) != 3 || len(ep.Via) != 2 {
		t.Fatalf("endpoints %+v: want master %s, 3 sentinel links, 2 node links", ep, cluster.MasterName)
	}
	for i, n := range c.Lock {
		if ep.Via[n.Addr()] != ep.Lock[i] || ep.Lock[i] == n.Addr() {
			t.Errorf("via[%s] = %s; want client 1's link %s", n.Addr(), ep.Via[n.Addr()], ep.Lock[i])
		}
	}
	// The Sentinel links lead to Sentinels.
	sc := redis.NewSentinelClient(&redis.Options{Addr: ep.Sentinels[0], Protocol: 2, DisableIdentity: true})
	defer sc.Close()
	if addr, err := sc.GetMasterAddrByName(ctx, cluster.MasterName).Result(); err != nil || net.JoinHostPort(addr[0], addr[1]) != c.Lock[0].Addr() {
		t.Fatalf("sentinel link answers %v, %v; want %s", addr, err, c.Lock[0].Addr())
	}
}

func TestSentinelPromotesAReplicaAndClientsFollow(t *testing.T) {
	t.Parallel()
	c, ctx := startReplicated(t, 3)
	fc := failoverClient(t, c)
	if err := fc.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old := c.Lock[0]
	// Either replica may be promoted, and a link that is up may not have carried "before" yet.
	if err := c.AwaitCaughtUp(ctx, old); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := old.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.PrepareFailover(ctx, 0); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	primary, err := c.AwaitPrimary(waitCtx, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sentinels promoted %s %s after the primary died", primary.Name(), time.Since(start).Round(time.Millisecond))
	// The failover client finds the new primary (its first command may still fail on the
	// connection to the dead one: it never retries).
	if err := eventually(5*time.Second, func() error { return fc.Set(ctx, "after", "2", 0).Err() }); err != nil {
		t.Fatalf("failover client did not follow the new primary: %v", err)
	}
	if v, err := clustertest.Client(t, primary.Addr()).Get(ctx, "after").Result(); err != nil || v != "2" {
		t.Fatalf("new primary %s has after=%q, %v; want 2", primary.Name(), v, err)
	}
	if v, err := clustertest.Client(t, primary.Addr()).Get(ctx, "before").Result(); err != nil || v != "1" {
		t.Fatalf("new primary %s lost the replicated key: %q, %v", primary.Name(), v, err)
	}
	// The dead node comes back as a replica and the topology heals, once the failover is over.
	if err := c.AwaitFailoverEnd(ctx, primary); err != nil {
		t.Fatal(err)
	}
	if err := c.SteadySentinels(ctx); err != nil {
		t.Fatal(err)
	}
	if err := old.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.AwaitHealthy(ctx, primary); err != nil {
		t.Fatal(err)
	}
	t.Logf("healed %s after the primary died", time.Since(start).Round(time.Millisecond))
}

func TestPromoteByHandKeepsSentinelsInformed(t *testing.T) {
	t.Parallel()
	c, ctx := startReplicated(t, 3)
	fc := failoverClient(t, c)
	if err := fc.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old := c.Lock[0]
	if err := old.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	primary, err := c.PromoteByHand(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if addrs := c.MasterAddrs(ctx); slices.ContainsFunc(addrs, func(a string) bool { return a != primary.Addr() }) {
		t.Fatalf("sentinels name %q after the promotion of %s", addrs, primary.Name())
	}
	if err := eventually(5*time.Second, func() error { return fc.Set(ctx, "after", "2", 0).Err() }); err != nil {
		t.Fatalf("failover client did not follow the new primary: %v", err)
	}
	if err := old.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.AwaitHealthy(ctx, primary); err != nil {
		t.Fatal(err)
	}
	// No Sentinel ran an election of its own meanwhile.
	if got, err := c.Primary(ctx); err != nil || got != primary {
		t.Fatalf("Primary = %v, %v; want %s", got, err, primary.Name())
	}
}

func TestCutHoldsWritesOnThePrimary(t *testing.T) {
	t.Parallel()
	c, ctx := startReplicated(t, 2)
	primary, replica := c.Lock[0], c.Lock[1]
	// The cut reports the leases held at its instant: keys with an expiry.
	if err := clustertest.Client(t, primary.Addr()).Set(ctx, "lease", "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	k := c.NewCutter(primary)
	defer k.Close()
	if leases, err := k.Cut(ctx); err != nil || leases != 1 {
		t.Fatalf("Cut = %d, %v; want 1 lease held", leases, err)
	}
	if err := clustertest.Client(t, primary.Addr()).Set(ctx, "cut", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the replica retries its sync every second
	if err := clustertest.Client(t, replica.Addr()).Get(ctx, "cut").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("a write after the cut reached the replica (err %v)", err)
	}
	if err := c.RestoreReplication(ctx, primary); err != nil {
		t.Fatal(err)
	}
	if err := eventually(5*time.Second, func() error { return clustertest.Client(t, replica.Addr()).Get(ctx, "cut").Err() }); err != nil {
		t.Fatalf("the replica did not catch up after the cut healed: %v", err)
	}
}

// CutIfIdle cuts only when no lease is held, counted while writes are paused, and lets
// writes go on either way; a lease it finds leaves replication whole.
func TestCutIfIdleCutsOnlyWithoutALease(t *testing.T) {
	t.Parallel()
	c, ctx := startReplicated(t, 2)
	primary, replica := c.Lock[0], c.Lock[1]
	pc, rc := clustertest.Client(t, primary.Addr()), clustertest.Client(t, replica.Addr())
	k := c.NewCutter(primary)
	defer k.Close()
	if err := pc.Set(ctx, "lease", "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := k.Leases(ctx); err != nil || n != 1 {
		t.Fatalf("Leases = %d, %v; want 1", n, err)
	}
	if leases, cut, _, err := k.CutIfIdle(ctx); err != nil || cut || leases != 1 {
		t.Fatalf("CutIfIdle with a lease held = %d leases, cut %v, %v; want 1 lease and no cut", leases, cut, err)
	}
	// Writes go on and still replicate: the release reaches the replica.
	if err := pc.Del(ctx, "lease").Err(); err != nil {
		t.Fatal(err)
	}
	if err := eventually(5*time.Second, func() error {
		if rc.Exists(ctx, "lease").Val() != 0 {
			return errors.New("the release has not reached the replica")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	leases, cut, paused, err := k.CutIfIdle(ctx)
	if err != nil || !cut || leases != 0 {
		t.Fatalf("CutIfIdle with no lease = %d leases, cut %v, %v; want a cut", leases, cut, err)
	}
	t.Logf("writes paused for at most %s", paused)
	if err := pc.Set(ctx, "after", "1", 0).Err(); err != nil { // unpaused
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the replica retries its sync every second
	if err := rc.Get(ctx, "after").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("a write after the cut reached the replica (err %v)", err)
	}
	if err := c.RestoreReplication(ctx, primary); err != nil {
		t.Fatal(err)
	}
}

func TestReplicatedCloseStopsEveryProcess(t *testing.T) {
	t.Parallel()
	b := clustertest.Backend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, b, cluster.Topology{Kind: cluster.Replicated, Nodes: 3}, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, n := range append(c.Nodes(), c.Sentinels...) {
		p := pid(t, n)
		if !redisAlive(p) {
			t.Fatalf("%s (pid %d) is not running", n.Name(), p)
		}
		pids = append(pids, p)
	}
	if len(pids) != 7 {
		t.Fatalf("%d processes, want 3 data nodes, the store and 3 sentinels", len(pids))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		waitGone(t, p, 5*time.Second)
	}
}

// TestAwaitNoTiltSeesAStalledSentinel: Sentinels frozen longer than 2 s enter TILT mode
// (no failover for 30 s) once they run again; AwaitNoTilt returns at once before, and
// keeps waiting after.
func TestAwaitNoTiltSeesAStalledSentinel(t *testing.T) {
	c, ctx := startReplicated(t, 3)
	if waited, err := c.AwaitNoTilt(ctx); err != nil || waited > time.Second {
		t.Fatalf("fresh sentinels: waited %s, %v", waited, err)
	}
	for _, s := range c.Sentinels {
		if err := s.Pause(ctx); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2500 * time.Millisecond)
	for _, s := range c.Sentinels {
		if err := s.Resume(ctx); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // a timer tick, to notice the stall
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := c.AwaitNoTilt(short); err == nil || !strings.Contains(err.Error(), "TILT") {
		t.Fatalf("after a 2.5 s stall: %v, want the sentinels tilting", err)
	}
}
