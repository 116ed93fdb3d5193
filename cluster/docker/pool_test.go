package docker

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
)

// A stopped server's container serves the next start of the same server, and what the
// run left in it is gone: keys, scripts, its replication, configuration set at run time,
// a client pause.
func TestReusedServerIsFresh(t *testing.T) {
	t.Parallel()
	b := newTestBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startNode(ctx, t, b, cluster.NodeConfig{Name: "p"})
	r := startNode(ctx, t, b, cluster.NodeConfig{Name: "r"})
	cl := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer cl.Close()
	host, port, err := net.SplitHostPort(p.PeerAddr())
	if err != nil {
		t.Fatal(err)
	}
	sha, err := cl.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]any{
		{"set", "k", "v"},
		{"config", "set", "replica-priority", "0", "masterauth", "nobody"},
		{"replicaof", host, port},
		{"client", "pause", "60000", "write"},
	} {
		if err := cl.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	id := r.ContainerID()
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	again := startNode(ctx, t, b, cluster.NodeConfig{Name: "r"})
	if again.ContainerID() != id {
		t.Fatalf("the second start of r made container %s, want %s again", again.ContainerID(), id)
	}
	fresh := redis.NewClient(&redis.Options{Addr: again.Addr()})
	defer fresh.Close()
	if n, err := fresh.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("DBSIZE = %d, %v; want 0", n, err)
	}
	if ex, err := fresh.ScriptExists(ctx, sha).Result(); err != nil || ex[0] {
		t.Errorf("the script is still loaded (%v, %v)", ex, err)
	}
	if v, err := fresh.ConfigGet(ctx, "*").Result(); err != nil || v["replica-priority"] != "100" || v["masterauth"] != "" || v["replicaof"] != "" {
		t.Errorf("configuration not reset: replica-priority %q masterauth %q replicaof %q (%v)", v["replica-priority"], v["masterauth"], v["replicaof"], err)
	}
	short, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	if err := fresh.Set(short, "k2", "v", 0).Err(); err != nil {
		t.Errorf("a write after the reset: %v (still paused?)", err)
	}
	// Killed and not restarted: removed, not kept.
	if err := again.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := again.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if third := startNode(ctx, t, b, cluster.NodeConfig{Name: "r"}); third.ContainerID() == id {
		t.Error("a killed server's container was reused")
	}
	// Another command line: another container.
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if other := startNode(ctx, t, b, cluster.NodeConfig{Name: "p", Persistence: cluster.PersistAOFEverysec}); other.ContainerID() == p.ContainerID() {
		t.Error("a server with other arguments got a container made for different ones")
	}
}

// A replicated topology started again on the same backend reuses all its containers, and
// its Sentinels know exactly the new run's replicas and peers (cluster.Start checks).
// Close removes the kept containers with the rest; with Idle < 0 nothing is kept.
func TestReusedTopology(t *testing.T) {
	t.Parallel()
	b := newTestBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := func(c *cluster.Cluster) []string {
		var out []string
		for _, n := range append(append(slices.Clone(c.Lock), c.Sentinels...), c.Store) {
			out = append(out, n.(*Node).ContainerID())
		}
		slices.Sort(out)
		return out
	}
	kept := 0
	for _, topo := range []string{"replicated:3", "cluster:3x1"} {
		tp, err := cluster.ParseTopology(topo)
		if err != nil {
			t.Fatal(err)
		}
		first, err := cluster.Start(ctx, b, tp, cluster.Options{})
		if err != nil {
			t.Fatal(err)
		}
		before := ids(first)
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		second, err := cluster.Start(ctx, b, tp, cluster.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if after := ids(second); !slices.Equal(before, after) {
			t.Errorf("%s: second start's containers %v, want the first's %v", topo, after, before)
		}
		if err := second.AwaitClusterOK(ctx, 10*time.Second); tp.Kind == cluster.RedisCluster && err != nil {
			t.Errorf("%s: the second cluster: %v", topo, err)
		}
		if err := second.Close(); err != nil {
			t.Fatal(err)
		}
		kept += len(before)
		if topo != "replicated:3" {
			kept-- // the store's container served both topologies
		}
		if got := leftovers(t, b); len(got) != kept+2 {
			t.Errorf("kept after %s's Close: %v, want %d containers and 2 networks", topo, got, kept)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(t, b); len(got) > 0 {
		t.Errorf("left after the backend's Close: %v", got)
	}

	none, err := New(ctx, Options{Dir: t.TempDir(), Idle: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	n := startNode(ctx, t, none, cluster.NodeConfig{Name: "r"})
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(t, none); len(got) != 2 {
		t.Errorf("with Idle -1, kept after Stop: %v, want the 2 networks only", got)
	}
}

func startNode(ctx context.Context, t *testing.T, b *Backend, cfg cluster.NodeConfig) *Node {
	t.Helper()
	n, err := b.StartNode(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n.(*Node)
}
