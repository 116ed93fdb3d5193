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
// granted again; with WAIT 1 of 2, the replica that acknowledged barred and the lagging
// one promoted), breaks the property TLC found broken, and the holder is the client the
// trace says.
func TestFailoverCounterexamplesReproduce(t *testing.T) {
	for _, config := range []string{"Failover_async_mutex", "Failover_async_fence", "Failover_wait1of2_mutex"} {
		t.Run(config, func(t *testing.T) {
			t.Parallel()
			tl := translate(t, config)
			rep, h := runPlan(t, tl.Plan)
			assertVerdict(t, rep, tl.Breaks, lin.Illegal)
			for _, w := range h.Faults {
				if want := fmt.Sprintf("at client %d's acquire:granted", tl.Holder); w.Kind == "failover" && !strings.Contains(w.Detail, want) {
					t.Errorf("failover window %q: want the primary killed %s", w.Detail, want)
				}
				if w.Kind == "failover" && tl.Plan.Faults[0].Cut == "one" && (w.Promoted == "" || !strings.Contains(w.Detail, "only "+w.Promoted+" was cut off")) {
					t.Errorf("failover window %q: want the replica cut off alone promoted, not %q", w.Detail, w.Promoted)
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

// LeaseLock_clockjump on a real server under libfaketime: the server's clock jumps past
// the holder's lease, the successor is granted while the holder still believes (P1), and
// the jump is the trace's, at the trace's time after the holder's grant.
func TestClockJumpCounterexampleReproduces(t *testing.T) {
	t.Parallel()
	tl := translate(t, "LeaseLock_clockjump")
	rep, h := runPlan(t, tl.Plan)
	assertVerdict(t, rep, tl.Breaks, lin.Illegal)
	jump := tl.Plan.Faults[0]
	for _, w := range h.Faults {
		if w.Kind == "server-clock" && (w.Target != jump.Target || w.Offset != jump.Offset.D()) {
			t.Errorf("server-clock window %+v, want %s's clock %s forward", w, jump.Target, jump.Offset.D())
		}
		if w.Kind == "client-pause" && !strings.Contains(w.Detail, "came after") {
			t.Errorf("pause window %q: the successor's grant did not come while the holder waited", w.Detail)
		}
	}
}

// LeaseLock_drift on a real server: the holder's clock is a tick behind, so its
// validity check passes after its lease ran out by the server's clock, and the successor
// is granted while it still believes (P1).
func TestDriftCounterexampleReproduces(t *testing.T) {
	t.Parallel()
	tl := translate(t, "LeaseLock_drift")
	rep, h := runPlan(t, tl.Plan)
	assertVerdict(t, rep, tl.Breaks, lin.Illegal)
	for _, w := range h.Faults {
		if w.Kind == "client-pause" && !strings.Contains(w.Detail, "came after") {
			t.Errorf("pause window %q: the successor's grant did not come while the holder waited", w.Detail)
		}
	}
	// The holder's write after the successor's grant is the drift's doing: its check passed.
	var succ int64 = -1
	for _, op := range h.Ops {
		if op.Client == tl.Successor && op.Kind == histories.Acquire && op.Outcome == histories.OK && succ < 0 {
			succ = op.Return
		}
	}
	wrote := false
	for _, op := range h.Ops {
		if op.Client == tl.Holder && op.Kind == histories.Write && succ >= 0 && op.Call > succ {
			wrote = true
		}
	}
	if !wrote {
		t.Errorf("the holder did not write after the successor's grant: its validity check did not pass by its lagging clock")
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

// Each Redlock counterexample, replayed on N real servers with its node fault struck at
// the holder's grant, breaks P1 with the trace's story: the holder and the successor are
// granted by the trace's servers, the fault window is the trace's fault on the trace's
// server, and the successor is granted after it while the holder still believes.
func TestRedlockCounterexamplesReproduce(t *testing.T) {
	for _, config := range []string{"Redlock3_restart", "Redlock5_restart", "Redlock3_short_delay", "Redlock3_clockjump", "Redlock5_clockjump"} {
		t.Run(config, func(t *testing.T) {
			t.Parallel()
			tl := translate(t, config)
			rep, h := runRedlock(t, tl)
			assertVerdict(t, rep, tl.Breaks, lin.Illegal)
			s := assertRedlockStory(t, h, tl)
			if s.succ == nil {
				t.Fatalf("the successor (client %d) was never granted after the fault", tl.Successor)
			}
			if s.succ.Return < s.inPlace {
				t.Errorf("the successor's grant returned at %s, before the fault was in place at %s", ms(s.succ.Return), ms(s.inPlace))
			}
			if !slices.Equal(s.succ.Output.Nodes, tl.Redlock.SuccessorNodes) {
				t.Errorf("the successor was granted by servers %v, the trace's by %v", s.succ.Output.Nodes, tl.Redlock.SuccessorNodes)
			}
			if rel := s.holderRelease; rel != nil && rel.Call <= s.succ.Return {
				t.Errorf("the holder's release was called at %s, before the successor's grant returned at %s: the beliefs of this story do not overlap", ms(rel.Call), ms(s.succ.Return))
			}
		})
	}
}

// The contrast: TLC finds Redlock3_delayed_restart safe (a node down at least the TTL
// comes back after every lease it granted has expired), and the Redlock3_restart schedule
// with that config's restart delay keeps P1. The schedule did happen: the crash struck at
// the holder's grant and the successor was refused while the holder held the lock.
func TestRedlockDelayedRestartKeepsP1(t *testing.T) {
	t.Parallel()
	const safe = "Redlock3_delayed_restart"
	if exp := readExpectations(t)[safe]; exp.expect != "none" {
		t.Fatalf("expectations.tsv: %s expects %q, this test assumes no violation", safe, exp.expect)
	}
	tl := translate(t, "Redlock3_restart")
	unsafe, err := ReadConfig("../Redlock3_restart.cfg")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadConfig("../" + safe + ".cfg")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"N", "TTL", "Persist"} {
		if cfg.Constants[name] != unsafe.Constants[name] {
			t.Fatalf("%s: %s = %s, Redlock3_restart has %s: not the same schedule", safe, name, cfg.Constants[name], unsafe.Constants[name])
		}
	}
	delay, err := cfg.Int("RestartDelay")
	if err != nil {
		t.Fatal(err)
	}
	f := &tl.Plan.Faults[tl.Redlock.Fault]
	down := time.Duration(delay) * tl.Redlock.Tick
	tl.Plan.Duration = plan.D(tl.Plan.Duration.D() + down - f.Duration.D())
	f.Duration = plan.D(down)
	tl.Plan.Name = "Redlock3_restart with the restart delay of " + safe
	rep, h := runRedlock(t, tl)
	assertVerdict(t, rep, lin.P1, lin.OK)
	s := assertRedlockStory(t, h, tl)
	if s.holderRelease == nil || s.succRefused == 0 {
		t.Errorf("holder's release %v, %d refusals of the successor while the holder held: the schedule did not happen", s.holderRelease, s.succRefused)
	}
}

// runRedlock runs tl's plan and checks that it played the trace's network: the holder's
// requests to the servers the trace has them lost on are lost from its first attempt (a
// network fault due at the start holds the clients before their first acquire until it is
// in place).
func runRedlock(t *testing.T, tl *Translation) (runner.Report, histories.History) {
	t.Helper()
	rep, h := runPlan(t, tl.Plan)
	if late := lostTooLate(h, tl); late != "" {
		t.Fatalf("%s: not the trace's schedule", late)
	}
	return rep, h
}

// lostTooLate says how the run failed to lose the holder's requests from its first
// acquire on ("" when it did).
func lostTooLate(h histories.History, tl *Translation) string {
	first := int64(-1)
	for _, op := range h.Ops {
		if op.Client == tl.Holder && op.Kind == histories.Acquire && (first < 0 || op.Call < first) {
			first = op.Call
		}
	}
	for i, f := range tl.Plan.Faults {
		if i == tl.Redlock.Fault || i == tl.Redlock.Pause {
			continue
		}
		found := false
		for _, w := range h.Faults {
			if w.Kind == f.Kind && w.Target == f.Target {
				found = true
				if first >= 0 && w.Start > first {
					return fmt.Sprintf("%s on %s began at %s, after the holder's first acquire at %s", w.Kind, w.Target, ms(w.Start), ms(first))
				}
			}
		}
		if !found {
			return fmt.Sprintf("no %s window on %s", f.Kind, f.Target)
		}
	}
	return ""
}

// redlockRun is what assertRedlockStory found in a run.
type redlockRun struct {
	holder, succ  *histories.Op // the holder's first grant; the successor's first grant after the fault began
	holderRelease *histories.Op // the holder's release after its grant (nil: none)
	window        histories.FaultWindow
	succRefused   int   // the successor's refused acquires from the fault's start to the holder's release
	inPlace       int64 // when the fault was in place: the jump, or the kill plus the restart delay
}

// assertRedlockStory checks that the node fault of tl struck at the holder's first grant,
// which the trace's servers gave, as the plan says (kind, server, delay after the grant,
// restart delay or jump), and finds the successor's first grant after it began, which must
// come from the trace's servers once the fault is in place in an unsafe run.
func assertRedlockStory(t *testing.T, h histories.History, tl *Translation) redlockRun {
	t.Helper()
	ops := slices.Clone(h.Ops)
	slices.SortStableFunc(ops, func(a, b histories.Op) int { return cmp.Compare(a.Call, b.Call) })
	var r redlockRun
	for i := range ops {
		if op := &ops[i]; op.Client == tl.Holder && op.Kind == histories.Acquire && op.Outcome == histories.OK {
			r.holder = op
			break
		}
	}
	if r.holder == nil {
		t.Fatalf("the holder (client %d) was never granted", tl.Holder)
	}
	if !slices.Equal(r.holder.Output.Nodes, tl.Redlock.HolderNodes) {
		t.Errorf("the holder was granted by servers %v, the trace's by %v", r.holder.Output.Nodes, tl.Redlock.HolderNodes)
	}
	f := tl.Plan.Faults[tl.Redlock.Fault]
	var found int
	for _, w := range h.Faults {
		if w.Kind == f.Kind {
			r.window, found = w, found+1
		}
	}
	if found != 1 || r.window.Target != f.Target {
		t.Fatalf("%d %s windows (the last on %s), want one on %s: %+v", found, f.Kind, r.window.Target, f.Target, h.Faults)
	}
	w := r.window
	t.Logf("holder granted by %v at %s..%s; %s window %s..%s: %s", r.holder.Output.Nodes, ms(r.holder.Call), ms(r.holder.Return), w.Kind, ms(w.Start), ms(w.End), w.Detail)
	// The trigger fires at the grant, inside the acquire; at 0 it holds the holder there
	// until the fault is in place.
	if w.Start < r.holder.Call+f.At.D().Nanoseconds() || (f.At.D() == 0 && w.Start > r.holder.Return) {
		t.Errorf("the %s window starts at %s, not %s after the holder's grant (acquire %s..%s)", w.Kind, ms(w.Start), f.At.D(), ms(r.holder.Call), ms(r.holder.Return))
	}
	r.inPlace = w.Start // a restarted server answers before the harness has seen it ready and closed the window
	switch f.Kind {
	case "server-crash":
		if w.End < 0 || w.End-w.Start < f.Duration.D().Nanoseconds() {
			t.Errorf("%s was down %s..%s, want at least %s", w.Target, ms(w.Start), ms(w.End), f.Duration.D())
		}
		r.inPlace += f.Duration.D().Nanoseconds()
	case "server-clock":
		if w.Offset != f.Offset.D() {
			t.Errorf("%s's clock jumped %s, want %s", w.Target, w.Offset, f.Offset.D())
		}
	}
	for i := range ops {
		op := &ops[i]
		switch {
		case op.Client == tl.Holder && op.Kind == histories.Release && op.Call > r.holder.Return && r.holderRelease == nil:
			r.holderRelease = op
		case op.Client == tl.Successor && op.Kind == histories.Acquire && op.Outcome == histories.OK && op.Return > w.Start && r.succ == nil:
			r.succ = op
		}
	}
	for i := range ops {
		if op := &ops[i]; op.Client == tl.Successor && op.Kind == histories.Acquire && op.Outcome != histories.OK &&
			op.Call >= w.Start && (r.holderRelease == nil || op.Return <= r.holderRelease.Call) {
			r.succRefused++
		}
	}
	if r.succ != nil && r.holderRelease != nil {
		t.Logf("successor granted by %v at %s..%s after %d refusals; the holder's release called at %s", r.succ.Output.Nodes, ms(r.succ.Call), ms(r.succ.Return),
			r.succRefused, ms(r.holderRelease.Call))
	}
	return r
}
