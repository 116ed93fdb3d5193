package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/histories"
)

// TestVerifyHealedFindsWhatIsLeft: each kind of leftover is reported, and a clean
// cluster passes.
func TestVerifyHealedFindsWhatIsLeft(t *testing.T) {
	ctx := context.Background()
	cl := clustertest.Start(t, cluster.Topology{Kind: cluster.Single})
	if _, err := cl.Endpoints(0); err != nil {
		t.Fatal(err)
	}
	env := NewEnv(cl, histories.NewRecorder(histories.Meta{Fencing: "off"}), 1)
	if err := VerifyHealed(ctx, env); err != nil {
		t.Fatalf("clean cluster: %v", err)
	}
	link := cluster.ClientLink(0, "lock-0")
	toxic, err := cl.Net.AddToxic(link, netproxy.Toxic{Kind: netproxy.Latency, Direction: netproxy.Down, Latency: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Lock[0].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	env.clocks[0].Skew(time.Second, 1)
	err = VerifyHealed(ctx, env)
	for _, want := range []string{"lock-0 does not answer", "link " + link + " still has", "client 0's clock is still skewed"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("VerifyHealed = %v, want it to report %q", err, want)
		}
	}
	if err := cl.Lock[0].Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Net.RemoveToxic(link, toxic); err != nil {
		t.Fatal(err)
	}
	env.clocks[0].Reset()
	if err := VerifyHealed(ctx, env); err != nil {
		t.Fatalf("after healing by hand: %v", err)
	}
}
