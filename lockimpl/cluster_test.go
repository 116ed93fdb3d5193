package lockimpl_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// startRedisCluster is cluster:3x1: primaries redis-0..2 serving the slots in thirds, in
// order, redis-3..5 their replicas.
func startRedisCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	return clustertest.Start(t, cluster.Topology{Kind: cluster.RedisCluster, Nodes: 6, Replicas: 1})
}

// slotOwner is the primary of cluster:3x1 serving key's slot, and its replica.
func slotOwner(t *testing.T, c *cluster.Cluster, key string) (primary, replica cluster.Node) {
	t.Helper()
	slot, err := clustertest.Client(t, c.Lock[0].Addr()).ClusterKeySlot(clustertest.Context(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	i := min(int(slot)/(16384/3), 2)
	return c.Lock[i], c.Lock[i+3]
}

// TestLocksOnRedisCluster: setnx and fenced on a Redis Cluster, each client through its
// own links: keys of every primary are exclusive, released and taken again, and fenced's
// counter (in its key's slot: the script would fail across slots) counts up per key,
// also for a key with a hash tag of its own.
func TestLocksOnRedisCluster(t *testing.T) {
	c := startRedisCluster(t)
	ctx := clustertest.Context(t)
	for _, impl := range []string{"setnx", "fenced"} {
		a := locktest.ReplicatedLocker(t, c, get(t, impl), 0, time.Second)
		b := locktest.ReplicatedLocker(t, c, get(t, impl), 1, time.Second)
		owners := map[string]bool{}
		for i := range 12 {
			key := fmt.Sprintf("%s-%d", impl, i)
			if i == 11 {
				key = "{user:" + impl + "}:lock"
			}
			p, _ := slotOwner(t, c, key)
			owners[p.Name()] = true
			first, err := a.Acquire(ctx, key, time.Minute)
			if err != nil {
				t.Fatalf("%s: Acquire %s (on %s): %v", impl, key, p.Name(), err)
			}
			if got := valueOn(t, p, key); got != first.Token {
				t.Fatalf("%s: %s holds %q under %s, want the grant's token", impl, p.Name(), got, key)
			}
			if _, err := b.Acquire(ctx, key, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("%s: a second Acquire of a held %s: %v, want ErrNotAcquired", impl, key, err)
			}
			if err := a.Release(ctx, first); err != nil {
				t.Fatalf("%s: Release %s: %v", impl, key, err)
			}
			second, err := b.Acquire(ctx, key, time.Minute)
			if err != nil {
				t.Fatalf("%s: Acquire %s after its release: %v", impl, key, err)
			}
			if impl == "fenced" && (first.Fence != 1 || second.Fence != 2) {
				t.Errorf("fenced: fences %d then %d on %s, want 1 then 2", first.Fence, second.Fence, key)
			}
			if err := b.Release(ctx, second); err != nil {
				t.Fatalf("%s: Release %s: %v", impl, key, err)
			}
		}
		if len(owners) != 3 {
			t.Errorf("%s: the keys landed on %v, want every primary", impl, owners)
		}
	}
	l := locktest.ReplicatedLocker(t, c, get(t, "fenced"), 0, time.Second)
	if _, err := l.Acquire(ctx, "a{}b", time.Minute); err == nil || !strings.Contains(err.Error(), "no fence key in its hash slot") {
		t.Errorf("fenced: Acquire of a key whose fence counter cannot share its slot: %v, want a refusal saying so", err)
	}
}

// TestWaitOnRedisCluster: WAIT goes to the primary serving the key, and counts its
// replica: with it up the grant is there when Acquire returns; with it frozen the grant
// is released and refused.
func TestWaitOnRedisCluster(t *testing.T) {
	c := startRedisCluster(t)
	ctx := clustertest.Context(t)
	l := waitingLocker(t, c, "fenced", 0, lockimpl.Wait{Replicas: 1, Timeout: 1500 * time.Millisecond})
	for _, key := range []string{"w-1", "w-2", "w-3", "w-4"} {
		primary, replica := slotOwner(t, c, key)
		lease, err := l.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatalf("Acquire %s with its replica up: %v", key, err)
		}
		if got := replicaValue(t, replica, key); got != lease.Token {
			t.Fatalf("%s (replica of %s) holds %q when Acquire returns, want the grant's token", replica.Name(), primary.Name(), got)
		}
		if err := replica.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = l.Acquire(ctx, key+"-frozen", time.Minute)
		if err2 := replica.Resume(ctx); err2 != nil {
			t.Fatal(err2)
		}
		if p, _ := slotOwner(t, c, key+"-frozen"); p == primary && (!errors.Is(err, lockimpl.ErrNotAcquired) || !strings.Contains(err.Error(), "0 of 1 replicas acknowledged")) {
			t.Errorf("Acquire %s-frozen with %s frozen: %v; want refused for want of an acknowledgement", key, replica.Name(), err)
		}
	}
}

// TestClusterClientSendsOnce: a SET whose reply is lost with its connection must not be
// sent again, as go-redis's cluster client would (on the same node, then another): the
// reply is held back (a black hole on the client's link back from the primary) until the
// primary has executed the SET, then the connection is cut (healing the black hole closes
// it), and the primary must have executed one SET.
func TestClusterClientSendsOnce(t *testing.T) {
	c := startRedisCluster(t)
	ctx := clustertest.Context(t)
	ep, err := c.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := lockimpl.Config{Addrs: ep.Lock, Cluster: true, Via: ep.Via, Timeout: 5 * time.Second}.ClusterClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	primary, _ := slotOwner(t, c, "once")
	if err := cc.Get(ctx, "once").Err(); !errors.Is(err, redis.Nil) { // the slots, and a connection to the primary
		t.Fatal(err)
	}
	link := cluster.ClientLink(0, primary.Name())
	toxic, err := c.Net.AddToxic(link, netproxy.Toxic{Kind: netproxy.Blackhole, Direction: netproxy.Down})
	if err != nil {
		t.Fatal(err)
	}
	set := make(chan error, 1)
	go func() { set <- cc.Set(ctx, "once", 1, 0).Err() }()
	direct := clustertest.Client(t, primary.Addr())
	for direct.Exists(ctx, "once").Val() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Net.RemoveToxic(link, toxic); err != nil {
		t.Fatal(err)
	}
	if err := <-set; err == nil {
		t.Error("SET whose connection was cut before its reply: succeeded, want an error (its outcome is unknown)")
	}
	stats, err := direct.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := "cmdstat_set:calls=1,"; !strings.Contains(stats, want) {
		t.Errorf("%s after one SET whose reply was lost: %q, want %s", primary.Name(), grepLine(stats, "cmdstat_set"), want)
	}
}

// grepLine is the line of text that starts with prefix.
func grepLine(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// replicaValue is key's value on replica n of a Redis Cluster ("" when it has none): a
// replica answers reads only on a connection that asked for them (READONLY).
func replicaValue(t *testing.T, n cluster.Node, key string) string {
	t.Helper()
	ctx := clustertest.Context(t)
	conn := clustertest.Client(t, n.Addr()).Conn()
	defer conn.Close()
	if err := conn.ReadOnly(ctx).Err(); err != nil {
		t.Fatalf("READONLY on %s: %v", n.Name(), err)
	}
	v, err := conn.Get(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("GET %s on %s: %v", key, n.Name(), err)
	}
	return v
}
