package subprocess_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustermode"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// The Node.js clients on a Redis Cluster (cluster:3x1): node-ioredis and
// redis-semaphore-mutex run on ioredis's own cluster client (clients/node/protocol.js,
// atMostOnceCluster), seeded with the client's links and told by LOCKLAB_VIA (its
// natMap) to dial the link of each node the cluster announces.

// clusterLibs are the Node.js clients that run on a Redis Cluster, as nodeLib says them
// (where each keeps the lock of a key, whether it refreshes it).
var clusterLibs = []nodeLib{
	{name: "node-ioredis", nodes: 1},
	{name: "redis-semaphore-mutex", nodes: 1, prefix: "mutex:", refreshes: true},
}

func startRedisCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	return clustertest.Start(t, cluster.Topology{Kind: cluster.RedisCluster, Nodes: 6, Replicas: 1})
}

// clusterLocker is impl built as client number client of c, through its links.
func clusterLocker(t *testing.T, c *cluster.Cluster, lib nodeLib, client int, timeout time.Duration) lockimpl.Locker {
	t.Helper()
	return locktest.ReplicatedLocker(t, c, lib.impl(t), client, timeout)
}

// valueOnPrimary is key's value on the primary that serves its slot now ("" when none).
func valueOnPrimary(t *testing.T, c *cluster.Cluster, key string) string {
	t.Helper()
	ctx := clustertest.Context(t)
	p, _, err := c.SlotPrimary(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return clustertest.Client(t, p.Addr()).Get(ctx, key).Val()
}

func TestNodeClusterClientsRegistryEntries(t *testing.T) {
	for _, impl := range []string{"node-ioredis", "redis-semaphore-mutex", "redis-py"} {
		if i := get(t, impl); !i.Cluster || !i.RunsOn(cluster.RedisCluster) || !i.RunsOn(cluster.Single) || i.Fencing {
			t.Errorf("%s = %+v; want a single-instance lock without fences that also runs on %s", impl, i, cluster.RedisCluster)
		}
	}
	for _, impl := range []string{"seed-withlock", "node-redlock", "redis-semaphore-redlock"} {
		if get(t, impl).RunsOn(cluster.RedisCluster) {
			t.Errorf("%s runs on %s; it has no cluster client", impl, cluster.RedisCluster)
		}
	}
	// One that does not take a cluster refuses it before starting anything.
	err := newErr(t, get(t, "seed-withlock"), lockimpl.Config{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}, Cluster: true})
	if !strings.Contains(err.Error(), "takes no Redis Cluster") {
		t.Errorf("seed-withlock given a Redis Cluster: %v, want a refusal saying it takes none", err)
	}
}

// TestNodeClientsOnRedisCluster: on every primary, a key is exclusive, released, taken
// again and extended; then the primary serving a key is killed and its replica promoted,
// and the client finds the new primary: an acquire there is granted (after some unknowns,
// while the slot had no primary), released and taken again.
func TestNodeClientsOnRedisCluster(t *testing.T) {
	forEachLib(t, clusterLibs, locksOnRedisCluster)
}

// locksOnRedisCluster is TestNodeClientsOnRedisCluster's experiment with lib (also
// TestRedisPyOnRedisCluster's).
func locksOnRedisCluster(t *testing.T, lib nodeLib) {
	c := startRedisCluster(t)
	ctx := clustertest.Context(t)
	a, b := clusterLocker(t, c, lib, 0, time.Second), clusterLocker(t, c, lib, 1, time.Second)
	primaries := map[string]bool{}
	for i := range 6 {
		key := fmt.Sprintf("k%d", i)
		p, _, err := c.SlotPrimary(ctx, lib.key(key))
		if err != nil {
			t.Fatal(err)
		}
		primaries[p.Name()] = true
		lease, err := a.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatalf("Acquire %s (on %s): %v", key, p.Name(), err)
		}
		if got := valueOnPrimary(t, c, lib.key(key)); got != lease.Token {
			t.Fatalf("%s holds %q under %s, want the grant's token %q", p.Name(), got, lib.key(key), lease.Token)
		}
		if _, err := b.Acquire(ctx, key, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) || lockimpl.Classify(err) != histories.Fail {
			t.Fatalf("second Acquire of a held %s: %v, want ErrNotAcquired", key, err)
		}
		ext, err := a.Extend(ctx, lease, time.Hour)
		if err != nil {
			t.Fatalf("Extend %s: %v", key, err)
		}
		if pttl := clustertest.Client(t, p.Addr()).PTTL(ctx, lib.key(key)).Val(); pttl <= time.Minute {
			t.Fatalf("PTTL of %s after an extend to 1h: %s", key, pttl)
		}
		if err := a.Release(ctx, ext); err != nil {
			t.Fatalf("Release %s: %v", key, err)
		}
		if err := a.Release(ctx, ext); !errors.Is(err, lockimpl.ErrNotHeld) {
			t.Fatalf("second Release of %s: %v, want ErrNotHeld", key, err)
		}
		next, err := b.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatalf("Acquire %s after its release: %v", key, err)
		}
		if err := b.Release(ctx, next); err != nil {
			t.Fatalf("Release %s: %v", key, err)
		}
	}
	if len(primaries) != 3 {
		t.Fatalf("the keys landed on %v, want every primary", primaries)
	}

	// Failover: the primary of {f}'s slot dies, its replica takes over.
	pid := clientProcess(t, a).Pid()
	old, replicas, err := c.SlotPrimary(ctx, lib.key("{f}"))
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.ClusterFailover(ctx, replicas[0], clustermode.FailoverTakeover); err != nil {
		t.Fatal(err)
	}
	promoted, err := c.AwaitClusterPromotion(ctx, replicas, clustertest.Wait)
	if err != nil {
		t.Fatal(err)
	}
	// Each attempt takes a key of its own in the slot, so that an unknown acquire
	// that took effect cannot refuse the next one.
	var lease lockimpl.Lease
	var unknowns []string
	n := 0
	locktest.Eventually(t, "an acquire on the promoted "+promoted.Name(), func() bool {
		n++
		var err error
		lease, err = a.Acquire(ctx, fmt.Sprintf("{f}:%d", n), time.Minute)
		if err != nil {
			if c := lockimpl.Classify(err); c != histories.Unknown {
				t.Fatalf("Acquire of a free key during the failover: %v (%s), want ok or unknown", err, c)
			}
			unknowns = append(unknowns, err.Error())
		}
		return err == nil
	})
	t.Logf("granted on %s after %d unknown acquires: %.300q", promoted.Name(), len(unknowns), unknowns)
	if p := clientProcess(t, a).Pid(); p != pid {
		t.Fatalf("client replaced (pid %d, was %d) during the failover: its cluster client did not answer in time", p, pid)
	}
	if got := clustertest.Client(t, promoted.Addr()).Get(ctx, lib.key(lease.Key)).Val(); got != lease.Token {
		t.Fatalf("%s (promoted) holds %q under %s, want the grant's token", promoted.Name(), got, lib.key(lease.Key))
	}
	if _, err := b.Acquire(ctx, lease.Key, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("the other client's Acquire of %s on the promoted primary: %v, want ErrNotAcquired", lease.Key, err)
	}
	if err := a.Release(ctx, lease); err != nil {
		t.Fatalf("Release on the promoted primary: %v", err)
	}
	if _, err := b.Acquire(ctx, lease.Key, time.Minute); err != nil {
		t.Fatalf("the other client's Acquire of %s after its release: %v", lease.Key, err)
	}
}

// onceLab is the experiment of TestNodeClientOnRedisClusterSendsOnce: a Redis Cluster,
// the primary of key and client 0's link to it.
type onceLab struct {
	c       *cluster.Cluster
	key     string
	primary cluster.Node
	link    string
}

func newOnceLab(t *testing.T, key string) onceLab {
	t.Helper()
	c := startRedisCluster(t)
	p, _, err := c.SlotPrimary(clustertest.Context(t), key)
	if err != nil {
		t.Fatal(err)
	}
	return onceLab{c: c, key: key, primary: p, link: cluster.ClientLink(0, p.Name())}
}

// sets is how many SETs the primary has executed.
func (lab onceLab) sets(t *testing.T) int64 {
	t.Helper()
	return commandCalls(t, clustertest.Client(t, lab.primary.Addr()), "set")
}

// lostReply runs send, the SET NX of lab.key from client 0, with the reply path of its
// link to the primary a black hole until the primary has executed the SET; lifting
// the black hole cuts the connection. It returns what send returned.
func lostReply[R any](t *testing.T, lab onceLab, send func() R) R {
	t.Helper()
	ctx := clustertest.Context(t)
	toxic, err := lab.c.Net.AddToxic(lab.link, netproxy.Toxic{Kind: netproxy.Blackhole, Direction: netproxy.Down})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan R, 1)
	go func() { done <- send() }()
	direct := clustertest.Client(t, lab.primary.Addr())
	locktest.Eventually(t, "the SET executed on "+lab.primary.Name(), func() bool {
		return direct.Exists(ctx, lab.key).Val() == 1
	})
	if err := lab.c.Net.RemoveToxic(lab.link, toxic); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		return r
	case <-time.After(clustertest.Wait):
		t.Fatalf("no answer within %s after the connection was cut", clustertest.Wait)
	}
	panic("unreachable")
}

// TestNodeClientOnRedisClusterSendsOnce: node-ioredis's SET NX whose reply is lost with
// its connection must not be sent again (ioredis's cluster client, by default, sends a
// command whose connection closed to a random node 100 ms later, which redirects it to
// the primary: a second SET NX, which answers nil for the client's own lock). The reply
// is held back until the primary has executed the SET, then the connection is cut: the
// primary must have executed one SET, and the acquire is unknown (or ok), never fail.
func TestNodeClientOnRedisClusterSendsOnce(t *testing.T) {
	sendsOnceOnRedisCluster(t, nodeLib{name: "node-ioredis"})
}

// sendsOnceOnRedisCluster is TestNodeClientOnRedisClusterSendsOnce's experiment with lib
// (also TestRedisPyOnRedisClusterSendsOnce's).
func sendsOnceOnRedisCluster(t *testing.T, lib nodeLib) {
	lab := newOnceLab(t, "{once}")
	ctx := clustertest.Context(t)
	l := clusterLocker(t, lab.c, lib, 0, 5*time.Second)
	// A release of a lock nobody holds: the connection to the primary is up, no SET sent.
	if err := l.Release(ctx, lockimpl.Lease{Key: lab.key, Token: "nobody's"}); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("Release of a free key: %v, want ErrNotHeld", err)
	}
	before := lab.sets(t)
	pid := clientProcess(t, l).Pid()
	err := lostReply(t, lab, func() error {
		_, err := l.Acquire(ctx, lab.key, time.Minute)
		return err
	})
	if got := lab.sets(t) - before; got != 1 {
		t.Errorf("%s executed %d SETs after one acquire whose reply was lost, want 1", lab.primary.Name(), got)
	}
	if c := lockimpl.Classify(err); c == histories.Fail {
		t.Errorf("acquire whose reply was lost: %v (%s), want unknown or ok", err, c)
	}
	t.Logf("acquire whose reply was lost: %v", err)
	if p := clientProcess(t, l).Pid(); p != pid {
		t.Fatalf("client replaced (pid %d, was %d): its answer did not come in time", p, pid)
	}
	// The client goes on: the next acquire finds the lock its own lost SET took.
	if _, err := l.Acquire(ctx, lab.key, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Errorf("Acquire of the key the lost SET took: %v, want ErrNotAcquired", err)
	}
}

// TestIoredisClusterDefaultsSendTwice is the experiment of
// TestNodeClientOnRedisClusterSendsOnce with ioredis's cluster client on its defaults
// (only natMap set): the SET is sent again after its connection closed, and answers nil
// for the lock it took itself. It shows the experiment sees a resend when there is one.
func TestIoredisClusterDefaultsSendTwice(t *testing.T) {
	lab := newOnceLab(t, "{once}")
	ctx := clustertest.Context(t)
	ep, err := lab.c.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	var seeds, natMap []string
	for _, a := range ep.Lock {
		seeds = append(seeds, fmt.Sprintf("%q", a))
	}
	for from, to := range ep.Via {
		natMap = append(natMap, fmt.Sprintf("%q: %q", from, to))
	}
	// On stdin "go": SET key 1 NX; on stdout "ready" once connected, then the reply.
	script := `const Redis = require("ioredis");
const addr = (s) => ({ host: s.slice(0, s.lastIndexOf(":")), port: Number(s.slice(s.lastIndexOf(":") + 1)) });
const natMap = Object.fromEntries(Object.entries({` + strings.Join(natMap, ",") + `}).map(([k, v]) => [k, addr(v)]));
const c = new Redis.Cluster([` + strings.Join(seeds, ",") + `].map(addr), { natMap });
c.on("error", (e) => console.error(e.message));
c.get(process.argv[1]).then(() => console.log("ready"));
require("node:readline").createInterface({ input: process.stdin }).on("line", () =>
  c.set(process.argv[1], "1", "NX").then((r) => console.log(JSON.stringify(r)), (e) => console.log("error: " + e.message)));
`
	cmd := exec.CommandContext(ctx, "node", "-e", script, lab.key)
	cmd.Dir = nodeClientDir(t)
	sendsTwiceOnDefaults(t, lab, cmd, "ioredis", "null")
}

// sendsTwiceOnDefaults runs cmd, a script of a library's cluster client on its defaults
// that prints "ready" once connected and, for each line on stdin, the reply of one SET NX
// of lab's key; one SET NX whose reply is lost must run twice on the primary, the resend
// answering nilReply (the lock the client took itself).
func sendsTwiceOnDefaults(t *testing.T, lab onceLab, cmd *exec.Cmd, library, nilReply string) {
	t.Helper()
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	line := func() string {
		if !lines.Scan() {
			t.Fatalf("%s script ended: %v", library, lines.Err())
		}
		return lines.Text()
	}
	if got := line(); got != "ready" {
		t.Fatalf("%s script said %q, want ready", library, got)
	}
	before := lab.sets(t)
	reply := lostReply(t, lab, func() string {
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			return err.Error()
		}
		return line()
	})
	if got := lab.sets(t) - before; got != 2 {
		t.Errorf("%s executed %d SETs after one SET NX whose reply was lost, on %s's defaults; want 2 (the resend)", lab.primary.Name(), got, library)
	}
	if reply != nilReply {
		t.Errorf("the SET NX resent by %s answered %s, want %s (the lock it took itself)", library, reply, nilReply)
	}
}

// nodeClientDir is clients/node, where ioredis is installed.
func nodeClientDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "clients", "node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ioredis")); err != nil {
		t.Fatalf("ioredis not installed in %s: run npm ci --prefix clients/node (%v)", dir, err)
	}
	return dir
}
