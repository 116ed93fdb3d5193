package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
)

// etcdClient is a client of the given member addresses, closed with the test.
func etcdClient(t *testing.T, addrs ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: addrs, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// leaderName is the name of the member the others follow, asked of member ask.
func leaderName(t *testing.T, c *cluster.Cluster, ask int) string {
	t.Helper()
	cli := etcdClient(t, c.LockAddrs()...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := cli.Status(ctx, c.Lock[ask].Addr())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Lock {
		s, err := cli.Status(ctx, n.Addr())
		if err == nil && s.Header.MemberId == st.Leader {
			return n.Name()
		}
	}
	return ""
}

// An etcd:3 cluster starts with lock-0 leading, its members through peer links; what a
// member acknowledged survives its SIGKILL; a blackholed peer link cuts the leader off
// and the others elect another.
func TestEtcdCluster(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Etcd, Nodes: 3})
	if len(c.Lock) != 3 || c.Store == nil {
		t.Fatalf("want 3 members and a store, got %d members", len(c.Lock))
	}
	if got := leaderName(t, c, 1); got != "lock-0" {
		t.Fatalf("leader is %q, want lock-0", got)
	}
	ctx := clustertest.Context(t)
	cli := etcdClient(t, c.LockAddrs()...)
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}

	// Crash and restart a member: it comes back with the key.
	m := c.Lock[1]
	if err := m.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	one := etcdClient(t, m.Addr())
	resp, err := one.Get(ctx, "k", clientv3.WithSerializable())
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart: %v %v", resp, err)
	}

	// Cut the leader off: the other two elect a new one.
	link := cluster.PeerLink("lock-0")
	var toxics []string
	for _, d := range []netproxy.Direction{netproxy.Up, netproxy.Down} {
		name, err := c.Net.AddToxic(link, netproxy.Toxic{Kind: netproxy.Blackhole, Direction: d})
		if err != nil {
			t.Fatal(err)
		}
		toxics = append(toxics, name)
	}
	deadline := time.Now().Add(5 * time.Second)
	for leaderName(t, c, 1) == "lock-0" {
		if time.Now().After(deadline) {
			t.Fatal("lock-0 cut off, but still the leader after 5 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, name := range toxics {
		if err := c.Net.RemoveToxic(link, name); err != nil {
			t.Fatal(err)
		}
	}

	// Pause and Ping.
	if err := c.Lock[2].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Ping(ctx, c.Lock[2], 300*time.Millisecond); err == nil {
		t.Fatal("a paused member answered its health check")
	}
	if err := c.Lock[2].Resume(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		if err := cluster.Ping(ctx, n, 3*time.Second); err != nil {
			t.Errorf("%s: %v", n.Name(), err)
		}
	}
}

// The etcd topology refuses what only Redis has, saying why.
func TestEtcdRefuses(t *testing.T) {
	b := clustertest.Backend(t)
	ctx := context.Background()
	for _, tc := range []struct {
		opts cluster.Options
		want string
	}{
		{cluster.Options{ServerClock: cluster.ClockFaketime}, "libfaketime cannot"},
		{cluster.Options{Persistence: cluster.PersistAOFAlways}, "fsyncs"},
	} {
		_, err := cluster.Start(ctx, b, cluster.Topology{Kind: cluster.Etcd, Nodes: 1}, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error saying %q", tc.opts, err, tc.want)
		}
	}
}
