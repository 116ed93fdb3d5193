package docker_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustermode"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/docker"
)

func startCluster(t *testing.T, topo string, opts cluster.Options) *cluster.Cluster {
	t.Helper()
	b := clustertest.DockerBackend(t)
	tp, err := cluster.ParseTopology(topo)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, b, tp, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A server in a container takes the process backend's faults: a pause answers nothing, a
// kill refuses connections, a restart keeps what appendfsync always wrote, and its wall
// clock moves under libfaketime.
func TestServerFaults(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "single", cluster.Options{Persistence: cluster.PersistAOFAlways, ServerClock: cluster.ClockFaketime})
	n := c.Lock[0].(cluster.ClockNode)
	ctx := context.Background()
	rdb := clustertest.Client(t, n.Addr())
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	if err := n.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := rdb.Get(short, "k").Err()
	cancel()
	if err == nil {
		t.Error("a paused server answered")
	}
	if err := n.Resume(ctx); err != nil {
		t.Fatal(err)
	}

	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Probe(ctx, n.Addr(), 0); err == nil {
		t.Error("a killed server answered")
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := clustertest.Client(t, n.Addr())
	if v, err := fresh.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("after restart with appendfsync always: GET k = %q, %v; want v", v, err)
	}

	if err := n.SetClock(30*time.Second, 1); err != nil {
		t.Fatal(err)
	}
	now, err := fresh.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ahead := time.Until(now); ahead < 29*time.Second || ahead > 31*time.Second {
		t.Errorf("server clock %s ahead after SetClock(30s), want about 30s", ahead)
	}
}

// Isolating the primary of a replicated topology from the other servers is a partition:
// the Sentinels promote a replica, while clients still reach the old primary, which keeps
// serving as a master; after Rejoin the Sentinels make it a replica of the new primary.
func TestIsolatedPrimaryIsFailedOver(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "replicated:3", cluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := c.Lock[0]
	if p, err := c.Primary(ctx); err != nil || p != old {
		t.Fatalf("primary at start: %v, %v; want %s", p, err, old.Name())
	}
	if err := c.PrepareFailover(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := old.(cluster.IsolatableNode).Isolate(ctx); err != nil {
		t.Fatal(err)
	}
	promoted, err := c.AwaitPrimary(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s promoted", promoted.Name())
	if role, err := c.Role(ctx, old); err != nil || role != "master" {
		t.Errorf("isolated old primary: role %q, %v; want master (split brain)", role, err)
	}
	if err := clustertest.Client(t, old.Addr()).Set(ctx, "minority", "1", 0).Err(); err != nil {
		t.Errorf("a client cannot write to the isolated old primary: %v", err)
	}
	if err := old.(cluster.IsolatableNode).Rejoin(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		role, err := c.Role(ctx, old)
		if err == nil && role == "slave" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("old primary after rejoin: role %q, %v; want slave", role, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.SteadySentinels(ctx); err != nil {
		t.Fatal(err)
	}
}

// Redlock's independent nodes and the store run side by side.
func TestNodes(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "nodes:3", cluster.Options{})
	ctx := context.Background()
	for i, n := range c.Nodes() {
		if err := clustertest.Client(t, n.Addr()).Set(ctx, "k", strconv.Itoa(i), 0).Err(); err != nil {
			t.Errorf("%s: %v", n.Name(), err)
		}
	}
	if len(c.Nodes()) != 4 {
		t.Errorf("%d servers, want 3 lock servers and the store", len(c.Nodes()))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The containers are kept for reuse (pool.go), but the nodes are ended.
	if err := c.Lock[0].Pause(ctx); err == nil {
		t.Errorf("a closed cluster's server could be paused")
	}
}

// A paused server can be killed, as a SIGSTOPped process can, and restarts.
func TestKillPaused(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "single", cluster.Options{})
	n := c.Lock[0]
	ctx := context.Background()
	if err := n.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Probe(ctx, n.Addr(), 0); err != nil {
		t.Errorf("after kill of a paused server and restart: %v", err)
	}
}

// Rejoin gets through an endpoint that Docker kept on the peers network after the
// disconnect (Docker 20.10 did once, in a split-brain heal: "endpoint with name … already
// exists in network"). The test leaves one by connecting the isolated container behind
// the node's back.
func TestRejoinThroughAStaleEndpoint(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "single", cluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := c.Lock[0].(*docker.Node)
	host, _, err := net.SplitHostPort(n.PeerAddr())
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", `{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{$v.IPAddress}}{{"\n"}}{{end}}`, n.ContainerID()).CombinedOutput()
	if err != nil {
		t.Fatalf("docker inspect: %v: %s", err, out)
	}
	peers := ""
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, ip, _ := strings.Cut(line, " "); ip == host {
			peers = name
		}
	}
	if peers == "" {
		t.Fatalf("no network of %s has its peer address %s: %s", n.Name(), host, out)
	}
	if err := n.Isolate(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "docker", "network", "connect", "--ip", host, peers, n.ContainerID()).CombinedOutput(); err != nil {
		t.Fatalf("docker network connect: %v: %s", err, out)
	}
	if err := n.Rejoin(ctx); err != nil {
		t.Fatalf("Rejoin with an endpoint left on the peers network: %v", err)
	}
	if n.Isolated() {
		t.Error("still isolated after Rejoin")
	}
}

// TestRedisCluster: cluster:3x1 in containers, its nodes knowing each other by their
// addresses on the peers network: a cluster client that dials only the client's links
// (the nodes name their peers addresses, Via maps them) writes keys of every primary and
// reads them back; then a primary cut off from the others is replaced by its replica,
// which the majority promotes after the node timeout, and once it rejoins it follows
// its replacement.
func TestRedisCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "cluster:3x1", cluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ep, err := c.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: ep.Lock, Protocol: 2, DisableIdentity: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			to, ok := ep.Via[addr]
			if slices.Contains(ep.Lock, addr) {
				to, ok = addr, true // a seed: a link already
			}
			if !ok {
				return nil, fmt.Errorf("the client was sent to %s, which has no link", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, to)
		}})
	defer cc.Close()
	for i := range 30 {
		if err := cc.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatalf("SET k%d: %v", i, err)
		}
		if v, err := cc.Get(ctx, fmt.Sprint("k", i)).Int(); err != nil || v != i {
			t.Fatalf("GET k%d = %d, %v", i, v, err)
		}
	}

	old, replica := c.Lock[0], c.Lock[3]
	if err := old.(cluster.IsolatableNode).Isolate(ctx); err != nil {
		t.Fatal(err)
	}
	awaitFlag(ctx, t, c.Lock[1], replica, "master")
	if err := old.(cluster.IsolatableNode).Rejoin(ctx); err != nil {
		t.Fatal(err)
	}
	awaitFlag(ctx, t, old, old, "slave")
	if err := c.AwaitClusterOK(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// awaitFlag waits until observer's CLUSTER NODES shows n with flag.
func awaitFlag(ctx context.Context, t *testing.T, observer, n cluster.Node, flag string) {
	t.Helper()
	var last string
	for {
		nodes, err := clustermode.Nodes(ctx, observer.Addr())
		last = fmt.Sprint(err)
		for _, x := range nodes {
			if x.Addr == cluster.PeerAddr(n) {
				if x.Has(flag) {
					return
				}
				last = fmt.Sprint(x.Flags)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never saw %s as %s (last: %s)", observer.Name(), n.Name(), flag, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
