package cluster_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/cluster/clustertest"
)

func TestStartAndStop(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Single, Nodes: 1})
	if len(c.Lock) != 1 || c.Store == nil || len(c.Nodes()) != 2 {
		t.Fatalf("single cluster: %d lock nodes, store %v, %d nodes", len(c.Lock), c.Store, len(c.Nodes()))
	}
	if got := c.LockAddrs(); len(got) != 1 || got[0] != c.Lock[0].Addr() || got[0] == c.Store.Addr() {
		t.Fatalf("LockAddrs = %v; lock %s, store %s", got, c.Lock[0].Addr(), c.Store.Addr())
	}
	for _, n := range c.Nodes() {
		if !strings.HasPrefix(n.Addr(), "127.0.0.1:") {
			t.Errorf("%s listens on %s, want loopback", n.Name(), n.Addr())
		}
		if err := ping(t, n.Addr(), clustertest.Wait); err != nil {
			t.Fatalf("PING %s: %v", n.Name(), err)
		}
	}
	lockPid := pid(t, c.Lock[0])
	if err := c.Lock[0].Stop(clustertest.Context(t)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if redisAlive(lockPid) {
		t.Fatalf("pid %d alive after Stop", lockPid)
	}
	if err := c.Lock[0].Stop(clustertest.Context(t)); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := c.Lock[0].Restart(clustertest.Context(t)); err == nil {
		t.Fatal("Restart after Stop succeeded, want an error")
	}
	if err := ping(t, c.Store.Addr(), clustertest.Wait); err != nil {
		t.Fatalf("store must survive the lock server's stop: %v", err)
	}
}

// TestDiscardKillsEveryServer: Discard ends every server of the cluster, a paused one
// too; it is idempotent, and the node can neither restart nor be stopped again.
func TestDiscardKillsEveryServer(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Single, Nodes: 1})
	if err := c.Lock[0].Pause(clustertest.Context(t)); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	var pids []int
	for _, n := range c.Nodes() {
		pids = append(pids, pid(t, n))
	}
	if err := c.Discard(); err != nil {
		t.Fatalf("Discard: %v", err)
	}
	for _, p := range pids {
		if redisAlive(p) {
			t.Fatalf("pid %d alive after Discard", p)
		}
	}
	if err := c.Discard(); err != nil {
		t.Fatalf("second Discard: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close after Discard: %v", err)
	}
	if err := c.Lock[0].Restart(clustertest.Context(t)); err == nil {
		t.Fatal("Restart after Discard succeeded, want an error")
	}
}

func TestNodesTopology(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Nodes, Nodes: 3})
	seen := map[string]bool{}
	for _, a := range append(c.LockAddrs(), c.Store.Addr()) {
		if seen[a] {
			t.Fatalf("address %s used twice", a)
		}
		seen[a] = true
	}
	if len(c.Lock) != 3 {
		t.Fatalf("%d lock nodes, want 3", len(c.Lock))
	}
}

func TestPauseResume(t *testing.T) {
	n := clustertest.Node(t, cluster.NodeConfig{Name: "p"})
	if err := n.Pause(clustertest.Context(t)); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if err := ping(t, n.Addr(), 200*time.Millisecond); err == nil {
		t.Fatal("a paused server answered PING")
	}
	if err := n.Resume(clustertest.Context(t)); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := ping(t, n.Addr(), clustertest.Wait); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func TestStopPausedServer(t *testing.T) {
	n := clustertest.Node(t, cluster.NodeConfig{})
	p := pid(t, n)
	if err := n.Pause(clustertest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(clustertest.Context(t)); err != nil {
		t.Fatalf("Stop of a paused server: %v", err)
	}
	if redisAlive(p) {
		t.Fatalf("pid %d alive after Stop", p)
	}
}

func TestKillRestart(t *testing.T) {
	for _, tc := range []struct {
		persistence cluster.Persistence
		kept        bool
	}{
		{cluster.PersistNone, false},
		{cluster.PersistAOFAlways, true},
	} {
		t.Run(string(tc.persistence), func(t *testing.T) {
			n := clustertest.Node(t, cluster.NodeConfig{Name: "k", Persistence: tc.persistence})
			ctx := clustertest.Context(t)
			if err := clustertest.Client(t, n.Addr()).Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			before, addr := pid(t, n), n.Addr()
			if err := n.Kill(ctx); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			if redisAlive(before) {
				t.Fatalf("pid %d alive after Kill", before)
			}
			if err := n.Kill(ctx); err == nil {
				t.Fatal("Kill of a killed server succeeded, want an error")
			}
			if err := n.Restart(ctx); err != nil {
				t.Fatalf("Restart: %v", err)
			}
			if n.Addr() != addr || pid(t, n) == before {
				t.Fatalf("after Restart: addr %s (was %s), pid %d (was %d)", n.Addr(), addr, pid(t, n), before)
			}
			got, err := clustertest.Client(t, n.Addr()).Get(ctx, "k").Result()
			switch {
			case tc.kept && (err != nil || got != "v"):
				t.Fatalf("GET k = %q, %v; want v (aof-always keeps acknowledged writes)", got, err)
			case !tc.kept && !errors.Is(err, redis.Nil):
				t.Fatalf("GET k = %q, %v; want nil (no persistence)", got, err)
			}
			if err := n.Restart(ctx); err == nil {
				t.Fatal("Restart of a running server succeeded, want an error")
			}
		})
	}
}

func TestCloseLeavesNoProcess(t *testing.T) {
	b, err := cluster.NewProcessBackend(cluster.ProcessOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := clustertest.Context(t)
	c, err := cluster.Start(ctx, b, cluster.Topology{Kind: cluster.Nodes, Nodes: 2}, cluster.Options{})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	// One of each state Close must cope with: running, paused, killed, stopped.
	if err := c.Lock[0].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Lock[1].Kill(ctx); err != nil {
		t.Fatal(err)
	}
	extra, err := b.StartNode(ctx, cluster.NodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := extra.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, n := range append(c.Nodes(), extra) {
		pids = append(pids, pid(t, n))
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, p := range pids {
		if redisAlive(p) {
			t.Errorf("redis-server pid %d alive after Close", p)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := b.StartNode(ctx, cluster.NodeConfig{}); err == nil {
		t.Fatal("StartNode after Close succeeded")
	}
}

func TestCopyLogs(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Single, Nodes: 1})
	dir := filepath.Join(t.TempDir(), "logs")
	// A word of every log stands for a secret: the copies hold it redacted.
	if err := c.CopyLogs(dir, access.ScrubberOf("accept")); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		data, err := os.ReadFile(filepath.Join(dir, n.Name()+".log"))
		if err != nil || !strings.Contains(string(data), "Ready to xxxxx connections") || strings.Contains(string(data), "accept") {
			t.Errorf("log of %s: %v, %q", n.Name(), err, data)
		}
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv(cluster.EnvRedisServer, "")
	_, err := cluster.NewProcessBackend(cluster.ProcessOptions{Binary: filepath.Join(t.TempDir(), "no-redis-server")})
	if err == nil || !strings.Contains(err.Error(), "apt-get install redis-server") || !strings.Contains(err.Error(), "ProcessOptions.Binary") {
		t.Fatalf("error = %v; want where it looked and the install hint", err)
	}
	t.Setenv(cluster.EnvRedisServer, "no-such-redis-server-binary")
	_, err = cluster.NewProcessBackend(cluster.ProcessOptions{})
	if err == nil || !strings.Contains(err.Error(), "$"+cluster.EnvRedisServer) {
		t.Fatalf("error = %v; want it to name $%s", err, cluster.EnvRedisServer)
	}
}

func TestBadArgsShowLog(t *testing.T) {
	b := clustertest.Backend(t)
	_, err := b.StartNode(clustertest.Context(t), cluster.NodeConfig{ExtraArgs: []string{"--no-such-option", "1"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-option") {
		t.Fatalf("error = %v; want the server's complaint in it", err)
	}
}

func TestPortClashRetries(t *testing.T) {
	// Two backends starting many servers at once race for free ports; all must come up.
	b := clustertest.Backend(t)
	ctx := clustertest.Context(t)
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			_, err := b.StartNode(ctx, cluster.NodeConfig{})
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestProcessTitleNamesLocklab(t *testing.T) {
	n := clustertest.Node(t, cluster.NodeConfig{Name: "titled"})
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid(t, n)), "cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cmdline), "locklab:titled") {
		t.Fatalf("process title %q does not name locklab and the node", cmdline)
	}
}
