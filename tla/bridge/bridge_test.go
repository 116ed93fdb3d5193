package bridge

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
)

// The bridge between the model and the system: each LeaseLock counterexample TLC found,
// turned into a plan and run on real Redis, breaks the same property — and the run shows
// the trace's order of steps, so it is the same story and not another violation.
func TestCounterexamplesReproduce(t *testing.T) {
	for _, config := range []string{
		"LeaseLock_pause_off", "LeaseLock_pause_writes",
		"LeaseLock_pause_off_mutex", "LeaseLock_pause_writes_mutex", "LeaseLock_pause_full_mutex",
		"LeaseLock_nocheck",
	} {
		t.Run(config, func(t *testing.T) {
			t.Parallel()
			tl := translate(t, config)
			rep, h := runPlan(t, tl.Plan)
			assertVerdict(t, rep, tl.Breaks, lin.Illegal)
			assertOrder(t, h, tl)
		})
	}
}

// Each Failover counterexample, replayed as failover-loss fitted to it (the holder's grant
// lost with the primary, a replica without it promoted by Sentinel, another client
// granted again), breaks the property TLC found broken, and the holder is the client the
// trace says.
func TestFailoverCounterexamplesReproduce(t *testing.T) {
	for _, config := range []string{"Failover_async_mutex", "Failover_async_fence"} {
		t.Run(config, func(t *testing.T) {
			t.Parallel()
			tl := translate(t, config)
			rep, h := runPlan(t, tl.Plan)
			assertVerdict(t, rep, tl.Breaks, lin.Illegal)
			for _, w := range h.Faults {
				if want := fmt.Sprintf("at client %d's acquire:granted", tl.Holder); w.Kind == "failover" && !strings.Contains(w.Detail, want) {
					t.Errorf("failover window %q: want the primary killed %s", w.Detail, want)
				}
			}
		})
	}
}

// The contrast: TLC finds LeaseLock_pause_full safe (StoreSafety holds with pauses), and
// the pause_off schedule run with that config's fencing keeps the data safe. Beliefs
// still overlap (P1) and the stale write still arrives in the successor's critical
// section: the schedule did happen, and the store refused the write.
func TestSafeConfigKeepsTheData(t *testing.T) {
	t.Parallel()
	if exp := readExpectations(t)["LeaseLock_pause_full"]; exp.expect != "none" {
		t.Fatalf("expectations.tsv: LeaseLock_pause_full expects %q, this test assumes no violation", exp.expect)
	}
	cfg, err := ReadConfig("../LeaseLock_pause_full.cfg")
	if err != nil {
		t.Fatal(err)
	}
	fencing, err := cfg.Str("Fencing")
	if err != nil {
		t.Fatal(err)
	}
	tl := translate(t, "LeaseLock_pause_off")
	tl.Plan = tl.Plan.WithFencing(fencing)
	tl.Plan.Name = "LeaseLock_pause_off with the fencing of LeaseLock_pause_full"
	rep, h := runPlan(t, tl.Plan)
	assertVerdict(t, rep, lin.P2, lin.OK)
	assertVerdict(t, rep, lin.P1, lin.Illegal)
	if next := assertOrder(t, h, tl); next != nil && next.Outcome != histories.Fail {
		t.Errorf("the stale write %+v was not refused", *next)
	}
}

// runPlan runs p on fresh Redis servers and returns the report and the recorded history.
func runPlan(t *testing.T, p plan.Plan) (runner.Report, histories.History) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	r, err := p.Resolve(locks.All())
	if err != nil {
		t.Fatalf("resolve %s: %v", p.Name, err)
	}
	rep, err := runner.Run(ctx, r, runner.Options{Backend: clustertest.Backend(t), Dir: dir})
	if err != nil {
		t.Fatalf("run %s: %v", p.Name, err)
	}
	if rep.Faults != len(p.Faults) {
		t.Errorf("%s: %d fault windows recorded, plan has %d faults", p.Name, rep.Faults, len(p.Faults))
	}
	h, err := histories.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rep, h
}

func assertVerdict(t *testing.T, rep runner.Report, prop lin.Property, want lin.Verdict) {
	t.Helper()
	pr, ok := rep.Result.Property(prop)
	if !ok || pr.Verdict != want {
		t.Errorf("%s (fencing %s): %s = %s, want %s (%s)\n%s\nplan: %s", rep.Plan.Name, rep.Plan.Fencing, prop, pr.Verdict, want,
			pr.Explanation, rep.Result, rep.Plan.Description)
	}
}

// assertOrder checks that the run took the holder's next step where the trace does:
// after the successor's operation tl.After finished and before its operation tl.Before
// began, in the successor's first critical section after the holder's first acquire. It
// returns the holder's operation (nil when the trace gives none).
func assertOrder(t *testing.T, h histories.History, tl *Translation) *histories.Op {
	t.Helper()
	ops := slices.Clone(h.Ops)
	slices.SortStableFunc(ops, func(a, b histories.Op) int { return cmp.Compare(a.Call, b.Call) })
	first := func(client int, kind histories.Kind, from int64) (int, *histories.Op) {
		for i := range ops {
			if op := &ops[i]; op.Client == client && op.Kind == kind && op.Call >= from &&
				(kind != histories.Acquire || op.Outcome == histories.OK) {
				return i, op
			}
		}
		return -1, nil
	}
	_, acq := first(tl.Holder, histories.Acquire, 0)
	if acq == nil {
		t.Fatalf("holder (client %d) never acquired", tl.Holder)
	}
	_, succ := first(tl.Successor, histories.Acquire, acq.Return)
	if succ == nil {
		t.Fatalf("successor (client %d) never acquired after the holder", tl.Successor)
	}
	if tl.Next == "" {
		return nil
	}
	_, next := first(tl.Holder, tl.Next, acq.Return)
	if next == nil {
		t.Fatalf("holder never did %s after its acquire", tl.Next)
	}
	bound := func(kind histories.Kind) *histories.Op {
		if kind == "" {
			return nil
		}
		_, op := first(tl.Successor, kind, succ.Call)
		if op == nil {
			t.Fatalf("successor never did %s after its acquire", kind)
		}
		return op
	}
	after, before := bound(tl.After), bound(tl.Before)
	if after != nil && before != nil {
		t.Logf("holder's %s at %s..%s, inside the successor's %s return %s .. %s call %s", tl.Next, ms(next.Call), ms(next.Return),
			tl.After, ms(after.Return), tl.Before, ms(before.Call))
	}
	if after != nil && after.Return >= next.Call {
		t.Errorf("holder's %s (call %s) did not come after the successor's %s (return %s)", tl.Next, ms(next.Call), tl.After, ms(after.Return))
	}
	if before != nil && next.Return >= before.Call {
		t.Errorf("holder's %s (return %s) did not come before the successor's %s (call %s)", tl.Next, ms(next.Return), tl.Before, ms(before.Call))
	}
	return next
}

func ms(ns int64) time.Duration { return time.Duration(ns).Round(time.Millisecond) }
