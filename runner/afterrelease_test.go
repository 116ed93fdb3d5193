package runner

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"
)

// TestPauseUntilAnotherClientsRelease: a pause until client:1@after-release ends once
// client 1's release has been answered, and a client paused at its own after-release
// until the other's after-release takes no lock meanwhile. Client 0 stalls before its
// extend until client 1, granted the lock after client 0's lease ran out, released it;
// client 1, struck at its after-release by a pause armed when client 0's stall began,
// waits until client 0 released in turn. The textbook lock refuses client 0's late
// extend (P6 holds); client 0 believed through its stall (P1 breaks).
func TestPauseUntilAnotherClientsRelease(t *testing.T) {
	t.Parallel()
	p := plan.Default()
	p.Name, p.Impl, p.Clients, p.Keys, p.Extend, p.Fencing = "after-release", "setnx", 2, 1, 1, "off"
	p.TTL, p.Duration = plan.D(200*time.Millisecond), plan.D(1500*time.Millisecond)
	p.Work, p.Think, p.Retry = plan.D(40*time.Millisecond), plan.D(10*time.Millisecond), plan.D(10*time.Millisecond)
	p.Faults = []plan.FaultSpec{
		{Kind: "client-pause", Target: "client:0", Point: workload.BeforeExtend, Duration: plan.D(5 * time.Second), Until: "client:1@" + workload.AfterRelease},
		{Kind: "client-pause", Target: "client:1", Point: workload.AfterRelease, Duration: plan.D(5 * time.Second),
			Trigger: "client:0@" + workload.BeforeExtend, Until: "client:0@" + workload.AfterRelease},
	}
	rep := runPlan(t, nil, p)
	assertVerdicts(t, rep, verdicts{lin.P1: lin.Illegal, lin.P6: lin.OK})
	h, err := histories.Load(filepath.Join(rep.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	pause := func(client string) histories.FaultWindow {
		t.Helper()
		for _, w := range h.Faults {
			if w.Kind == "client-pause" && w.Target == client && strings.Contains(w.Detail, "until") {
				if !strings.Contains(w.Detail, "came after") {
					t.Fatalf("%s's pause: %q, want it ended by what it waited for", client, w.Detail)
				}
				return w
			}
		}
		t.Fatalf("no pause of %s in %+v", client, h.Faults)
		return histories.FaultWindow{}
	}
	// first is the first operation of client of kind that was called after t0.
	first := func(client int, kind histories.Kind, t0 int64) histories.Op {
		t.Helper()
		for _, op := range h.Ops {
			if op.Client == client && op.Kind == kind && op.Call > t0 {
				return op
			}
		}
		t.Fatalf("client %d has no %s after %d", client, kind, t0)
		return histories.Op{}
	}
	w0, w1 := pause("client:0"), pause("client:1")
	released1 := first(1, histories.Release, w0.Start)
	if released1.Return > w0.End {
		t.Errorf("client 0's pause ended at %d, before client 1's release was answered at %d", w0.End, released1.Return)
	}
	extend0 := first(0, histories.Extend, w0.Start)
	if extend0.Call < released1.Return || extend0.Outcome != histories.Fail {
		t.Errorf("client 0's extend %+v, want it called after client 1's release returned (%d) and refused", extend0, released1.Return)
	}
	released0 := first(0, histories.Release, extend0.Call)
	if w1.Start < released1.Return || w1.End < released0.Return {
		t.Errorf("client 1's pause [%d, %d], want it from its release's answer (%d) until client 0's (%d)", w1.Start, w1.End, released1.Return, released0.Return)
	}
	if next := first(1, histories.Acquire, released1.Return); next.Call < released0.Return {
		t.Errorf("client 1 acquired again at %d, before client 0's release returned at %d", next.Call, released0.Return)
	}
}
