package cluster_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
)

func TestExternalClusterUsesTheGivenServers(t *testing.T) {
	c, lock, store := clustertest.External(t)
	if got := c.LockAddrs(); len(got) != 1 || got[0] != lock.Addr() || c.Store.Addr() != store.Addr() {
		t.Fatalf("lock %v store %s; want [%s] and %s", got, c.Store.Addr(), lock.Addr(), store.Addr())
	}
	if !c.External() || !cluster.IsExternal(c.Lock[0]) || c.Lock[0].Name() != "lock-0" || c.Lock[0].LogPath() != "" {
		t.Fatalf("External %v, IsExternal(lock-0) %v, name %q, log %q", c.External(), cluster.IsExternal(c.Lock[0]), c.Lock[0].Name(), c.Lock[0].LogPath())
	}
	if local := clustertest.Start(t, cluster.Topology{Kind: cluster.Single, Nodes: 1}); local.External() || cluster.IsExternal(local.Lock[0]) {
		t.Fatal("a cluster of the process backend says it is external")
	}
}

func TestExternalServerRefusesProcessControl(t *testing.T) {
	c, _, _ := clustertest.External(t)
	n, ctx := c.Lock[0], clustertest.Context(t)
	for what, op := range map[string]func() error{
		"pause":   func() error { return n.Pause(ctx) },
		"resume":  func() error { return n.Resume(ctx) },
		"kill":    func() error { return n.Kill(ctx) },
		"restart": func() error { return n.Restart(ctx) },
	} {
		err := op()
		if !errors.Is(err, cluster.ErrExternal) || !strings.Contains(err.Error(), n.Addr()) {
			t.Errorf("%s: %v, want ErrExternal naming %s", what, err, n.Addr())
		}
	}
}

// Closing a cluster on the external backend leaves the servers as they were.
func TestExternalCloseLeavesServersRunning(t *testing.T) {
	c, lock, store := clustertest.External(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []cluster.Node{lock, store} {
		if err := ping(t, n.Addr(), clustertest.Wait); err != nil {
			t.Fatalf("%s after the external cluster closed: %v", n.Name(), err)
		}
	}
}

func TestExternalBackendRefusesWhatItCannotDo(t *testing.T) {
	lock := clustertest.Node(t, cluster.NodeConfig{Name: "theirs"})
	b, err := cluster.NewExternalBackend(cluster.ExternalOptions{Lock: []string{lock.Addr()}, Store: lock.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  cluster.NodeConfig
		want string
	}{
		{cluster.NodeConfig{Name: "lock-0", Faketime: true}, "libfaketime"},
		{cluster.NodeConfig{Name: "lock-0", Persistence: cluster.PersistAOFAlways}, "persistence"},
		{cluster.NodeConfig{Name: "lock-0", ExtraArgs: []string{"--maxmemory", "1mb"}}, "arguments"},
		{cluster.NodeConfig{Name: "lock-1"}, `no server for node "lock-1"`},
		{cluster.NodeConfig{Name: "sentinel-0"}, `no server for node "sentinel-0"`},
	} {
		if _, err := b.StartNode(clustertest.Context(t), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("StartNode(%+v) = %v, want an error with %q", c.cfg, err, c.want)
		}
	}
}

func TestExternalBackendChecksAddresses(t *testing.T) {
	if _, err := cluster.NewExternalBackend(cluster.ExternalOptions{Lock: []string{"localhost"}, Store: "127.0.0.1:1"}); err == nil {
		t.Error("an address without a port was accepted")
	}
	if _, err := cluster.NewExternalBackend(cluster.ExternalOptions{Store: "127.0.0.1:1"}); err == nil {
		t.Error("no lock server was accepted")
	}
	// Nothing listens on a port that was just free: the backend says the server does not answer.
	free := clustertest.Node(t, cluster.NodeConfig{Name: "gone"})
	addr := free.Addr()
	if err := free.Stop(clustertest.Context(t)); err != nil {
		t.Fatal(err)
	}
	b, err := cluster.NewExternalBackend(cluster.ExternalOptions{Lock: []string{addr}, Store: addr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.StartNode(clustertest.Context(t), cluster.NodeConfig{Name: "lock-0"}); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("StartNode on %s with nothing there: %v, want an error saying it does not answer", addr, err)
	}
}
