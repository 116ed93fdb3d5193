package cluster_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustermode"
	"github.com/locklab/locklab/cluster/clustertest"
)

// TestRedisClusterForms starts cluster:3x1 and checks its shape as the nodes report it:
// three primaries serving a third of the slots each, in order, each with its replica;
// then a cluster client that dials only the client's links (Endpoints: seeds and Via)
// writes keys of every primary and reads them back.
func TestRedisClusterForms(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.RedisCluster, Nodes: 6, Replicas: 1})
	ctx := clustertest.Context(t)
	nodes, err := clustermode.Nodes(ctx, c.Lock[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 6 {
		t.Fatalf("%d nodes known, want 6", len(nodes))
	}
	byAddr := map[string]clustermode.Node{}
	for _, n := range nodes {
		byAddr[n.Addr] = n
	}
	wantSlots := []string{"0-5460", "5461-10921", "10922-16383"}
	for i, n := range c.Lock {
		got, ok := byAddr[cluster.PeerAddr(n)]
		if !ok {
			t.Fatalf("%s (%s) is not in CLUSTER NODES: %+v", n.Name(), cluster.PeerAddr(n), nodes)
		}
		if i < 3 {
			if !got.Has("master") || !slices.Equal(got.Slots, wantSlots[i:i+1]) {
				t.Errorf("%s: flags %v slots %v, want a master serving %s", n.Name(), got.Flags, got.Slots, wantSlots[i])
			}
			continue
		}
		primary := byAddr[cluster.PeerAddr(c.Lock[i-3])]
		if !got.Has("slave") || got.Primary != primary.ID {
			t.Errorf("%s: flags %v replicates %q, want a replica of %s (%s)", n.Name(), got.Flags, got.Primary, c.Lock[i-3].Name(), primary.ID)
		}
	}

	ep, err := c.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	if !ep.Cluster || len(ep.Via) != 6 {
		t.Fatalf("endpoints: cluster %v, via %v; want a cluster with the links of its 6 nodes", ep.Cluster, ep.Via)
	}
	var mu sync.Mutex
	var dialled []string
	opts := &redis.ClusterOptions{Addrs: ep.Lock, Protocol: 2, DisableIdentity: true}
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := ep.Via[addr]; ok {
			addr = to
		}
		mu.Lock()
		dialled = append(dialled, addr)
		mu.Unlock()
		return dial(ctx, network, addr)
	}
	cc := redis.NewClusterClient(opts)
	defer cc.Close()
	for i := range 30 {
		if err := cc.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatalf("SET k%d: %v", i, err)
		}
	}
	for i := range 30 {
		if v, err := cc.Get(ctx, fmt.Sprint("k", i)).Int(); err != nil || v != i {
			t.Fatalf("GET k%d = %d, %v", i, v, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range dialled {
		if !slices.Contains(ep.Lock, a) {
			t.Errorf("the client dialled %s, which is no link of its own (%v)", a, ep.Lock)
		}
	}
	for i, n := range c.Lock[:3] {
		keys, err := clustertest.Client(t, n.Addr()).DBSize(ctx).Result()
		if err != nil || keys == 0 {
			t.Errorf("primary %d (%s) holds %d keys, %v: the keys should spread over every primary", i, n.Name(), keys, err)
		}
	}
}

func TestRedisClusterRefusesAShapeItCannotBe(t *testing.T) {
	b := clustertest.Backend(t)
	_, err := cluster.Start(context.Background(), b, cluster.Topology{Kind: cluster.RedisCluster, Nodes: 5, Replicas: 1}, cluster.Options{})
	if err == nil {
		t.Fatal("5 nodes as primaries with one replica each: started, want a refusal")
	}
}

func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}
