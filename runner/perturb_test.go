package runner

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// TestChecksWaitForLiveRuns: a check starts only once no run executes, and holds new runs
// back until it is done.
func TestChecksWaitForLiveRuns(t *testing.T) {
	var p Phases
	var live atomic.Int32
	endRun := p.execute()
	live.Add(1)
	checked := make(chan int32)
	go func() {
		end := p.check()
		checked <- live.Load() // no run may be live during a check
		end()
	}()
	time.Sleep(50 * time.Millisecond) // give the check every chance to start too early
	live.Add(-1)
	endRun()
	if n := <-checked; n != 0 {
		t.Fatalf("a check ran while %d runs were live", n)
	}
	var nilPhases *Phases // coordinates nothing
	nilPhases.execute()()
	nilPhases.check()()
}

// TestMonitorMeasuresStalls: a server that stops answering while no fault acts on it is a
// stall of the harness, and perturbs the run; the same pause under a fault is the fault's.
func TestMonitorMeasuresStalls(t *testing.T) {
	cl := clustertest.Start(t, cluster.Topology{Kind: cluster.Single, Nodes: 1})
	store := cl.Nodes()[len(cl.Nodes())-1]
	for _, c := range []struct {
		name    string
		faulted bool
		want    bool
	}{{"unexplained", false, true}, {"under a fault", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			m := startMonitor(cl, func(name string) bool { return c.faulted && name == store.Name() })
			time.Sleep(150 * time.Millisecond)
			if err := store.Pause(context.Background()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(400 * time.Millisecond)
			if err := store.Resume(context.Background()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(150 * time.Millisecond)
			stall, where := m.end()
			why := perturbed(stall, where, time.Second)
			if (why != "") != c.want {
				t.Fatalf("stall %s at %s: perturbed %q, want perturbed %v", stall, where, why, c.want)
			}
			if c.want && !strings.Contains(why, "redis "+store.Name()) {
				t.Errorf("perturbed %q does not name the server that stalled", why)
			}
		})
	}
}

func TestPerturbedLimit(t *testing.T) {
	if why := perturbed(20*time.Millisecond, "x", time.Second); why != "" {
		t.Errorf("20ms perturbs a 1s lease: %s", why)
	}
	if why := perturbed(60*time.Millisecond, "x", 200*time.Millisecond); why == "" {
		t.Error("60ms does not perturb a 200ms lease (more than a quarter of it)")
	}
	if why := perturbed(150*time.Millisecond, "x", 10*time.Second); why == "" {
		t.Error("150ms does not perturb a 10s lease")
	}
}

// TestARunOnExternalServersLeavesNoKeys: locks, fence counters and store registers of a
// run on servers locklab did not start are removed at its end.
func TestARunOnExternalServersLeavesNoKeys(t *testing.T) {
	lock := clustertest.Node(t, cluster.NodeConfig{Name: "theirs-lock"})
	store := clustertest.Node(t, cluster.NodeConfig{Name: "theirs-store"})
	b, err := cluster.NewExternalBackend(cluster.ExternalOptions{Lock: []string{lock.Addr()}, Store: store.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A key of the user's own must survive.
	mine := clustertest.Client(t, lock.Addr())
	if err := mine.Set(context.Background(), "users-own-key", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	p := plan.Default()
	p.Name, p.Impl, p.Fencing, p.Duration = "external", "fenced", "full", plan.D(500*time.Millisecond)
	r, err := p.Resolve(locks.All())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(clustertest.Context(t), r, Options{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ops == 0 || len(rep.Warnings) != 0 {
		t.Fatalf("%d ops, warnings %v", rep.Ops, rep.Warnings)
	}
	for _, n := range []cluster.Node{lock, store} {
		keys, err := clustertest.Client(t, n.Addr()).Keys(context.Background(), "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == lock && (len(keys) != 1 || keys[0] != "users-own-key") || n == store && len(keys) != 0 {
			t.Errorf("%s keeps %v after the run", n.Name(), keys)
		}
	}
}
