package docker

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
)

// newTestBackend is a backend for this package's own tests; it fails where the docker
// backend is required (the clustertest helper cannot be used here: it imports this package).
func newTestBackend(t *testing.T) *Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(ctx, Options{Dir: t.TempDir()})
	if err != nil {
		if os.Getenv("LOCKLAB_REQUIRE_DOCKER") != "" || os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("docker backend unavailable: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// leftovers are the backend's containers and networks still on the engine.
func leftovers(t *testing.T, b *Backend) []string {
	t.Helper()
	found, err := listLabelled(context.Background(), b.cli, labelBackend+"="+b.id)
	if err != nil {
		t.Fatal(err)
	}
	return names(found)
}

// Close removes every container (running, paused, killed) and both networks.
func TestCloseRemovesEverything(t *testing.T) {
	t.Parallel()
	b := newTestBackend(t)
	ctx := context.Background()
	c, err := cluster.Start(ctx, b, cluster.Topology{Kind: cluster.Replicated, Nodes: 2}, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Lock[0].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Lock[1].Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Sentinels[0].(cluster.IsolatableNode).Isolate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(t, b); len(got) != 2+3+1+2 {
		t.Errorf("before Close: %d containers and networks (%v), want 8", len(got), got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(t, b); len(got) > 0 {
		t.Errorf("left after Close: %v", got)
	}
}

// What a locklab process killed without a chance to close its backend left behind is
// removed by the next backend made on the same host. The orphan's owner is alive while
// its container starts (a sleep process), so that no backend made meanwhile, by a test
// beside this one or in another package, removes it before it is ready (seen under
// load); then the owner dies and the next backend must remove what it left.
func TestNewRemovesWhatADeadProcessLeft(t *testing.T) {
	t.Parallel()
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer owner.Process.Kill()
	orphan := newTestBackend(t)
	orphan.owner = Owner(owner.Process.Pid) // as if that process had made it
	if _, err := orphan.StartNode(context.Background(), cluster.NodeConfig{Name: "orphan"}); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(t, orphan); len(got) != 3 {
		t.Fatalf("orphan backend has %v, want a container and two networks", got)
	}
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait() // reaped: its pid is gone
	newTestBackend(t)
	if got := leftovers(t, orphan); len(got) > 0 {
		t.Errorf("a new backend left what a dead process made: %v", got)
	}
}
