package clustertest_test

import (
	"net"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
)

// TestCleanupStopsServers checks the helper's contract: servers started in a test are
// gone when it ends.
func TestCleanupStopsServers(t *testing.T) {
	var addrs []string
	t.Run("inner", func(t *testing.T) {
		c := clustertest.Start(t, cluster.Topology{Kind: cluster.Single, Nodes: 1})
		n := clustertest.Node(t, cluster.NodeConfig{Name: "extra"})
		for _, n := range append(c.Nodes(), n) {
			addrs = append(addrs, n.Addr())
		}
		for _, a := range addrs {
			conn, err := net.DialTimeout("tcp", a, 5*time.Second)
			if err != nil {
				t.Fatalf("server %s not listening: %v", a, err)
			}
			conn.Close()
		}
	})
	if len(addrs) != 3 {
		t.Fatalf("%d servers, want 3", len(addrs))
	}
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			conn.Close()
			t.Errorf("server %s still listening after the test's cleanup", a)
		}
	}
}
