package assess

import (
	"strings"
	"testing"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/rerun"
)

// TestClassify: a claimed property is unexpected, one the reference held on the same plan
// avoidable, one it broke too inherent; an undecided reference never makes a finding
// avoidable.
func TestClassify(t *testing.T) {
	reg := locks.All()
	p := scenarioPlan(t, reg, "pause-past-ttl")
	impl, _ := reg.Get("redislock")
	l := &LockReport{Name: "redislock", Family: FamilyOf(impl), Reference: "setnx", Says: says(impl), impl: impl}
	a := &assessment{o: Options{Registry: reg}}
	ref := func(did string, held, decided bool) func() (string, bool, bool) {
		return func() (string, bool, bool) { return did, held, decided }
	}
	for _, c := range []struct {
		name    string
		claimed map[lin.Property]string
		refDid  func() (string, bool, bool)
		want    Class
		words   string
	}{
		{"claimed", map[lin.Property]string{lin.P1: "rule-x"}, ref("held it in 2 of 2 runs", true, true), Unexpected, "rule rule-x"},
		{"reference held", nil, ref("held it in 2 of 2 runs", true, true), Avoidable, "need not break"},
		{"reference broke", nil, ref("violated it in 2 of 2 runs", false, true), Inherent, "every lock of the family"},
		{"reference undecided", nil, ref("its runs decided nothing", false, false), Inherent, "could not be compared"},
		{"no reference", nil, nil, Inherent, "no other reference"},
	} {
		f := Finding{Property: lin.P1}
		a.classify(&f, l, p, c.claimed, c.refDid)
		if f.Class != c.want || !strings.Contains(f.Evidence, c.words) {
			t.Errorf("%s: class %s (%s), want %s saying %q", c.name, f.Class, f.Evidence, c.want, c.words)
		}
		if f.Advice == "" {
			t.Errorf("%s: no advice", c.name)
		}
		if c.want == Avoidable && f.Reference != "setnx" {
			t.Errorf("%s: reference %q, want setnx named", c.name, f.Reference)
		}
	}
}

// TestClassifyCells: the lock's violated cells are compared with its reference's cell of
// the same scenario and fencing mode; perturbed runs become findings under load, never
// classified; the reference's n/a cell says why it cannot be compared.
func TestClassifyCells(t *testing.T) {
	reg := locks.All()
	impl, _ := reg.Get("redislock")
	l := &LockReport{Name: "redislock", Family: FamilyOf(impl), Reference: "setnx", Says: says(impl), impl: impl, Counts: map[Class]int{}}
	scenarios := []string{"pause-past-ttl", "unsafe-release", "baseline"}
	var all = scenarioPlans(t, reg, scenarios...)
	run := func(dir string, v map[lin.Property]lin.Verdict, perturbed string) matrix.CellRun {
		return matrix.CellRun{Dir: dir, Verdicts: v, Perturbed: perturbed, Elapsed: time.Second}
	}
	illegal := map[lin.Property]lin.Verdict{lin.P1: lin.Illegal, lin.P2: lin.OK}
	ok := map[lin.Property]lin.Verdict{lin.P1: lin.OK, lin.P2: lin.OK}
	res := matrix.Result{Cells: []matrix.Cell{
		{Scenario: "pause-past-ttl", Impl: "redislock", Fencing: "off", Status: matrix.CellPlanned,
			Runs: []matrix.CellRun{run("a/0", illegal, ""), run("a/1", ok, "")}},
		{Scenario: "pause-past-ttl", Impl: "setnx", Fencing: "off", Status: matrix.CellPlanned,
			Runs: []matrix.CellRun{run("b/0", illegal, "")}},
		{Scenario: "unsafe-release", Impl: "redislock", Fencing: "off", Status: matrix.CellPlanned,
			Runs: []matrix.CellRun{run("c/0", illegal, "")}},
		{Scenario: "unsafe-release", Impl: "setnx", Fencing: "off", Status: matrix.CellPlanned,
			Runs: []matrix.CellRun{run("d/0", ok, ""), run("d/1", ok, "")}},
		{Scenario: "baseline", Impl: "redislock", Fencing: "off", Status: matrix.CellPlanned,
			Runs: []matrix.CellRun{run("e/0", illegal, "the harness stalled 800ms")}},
		{Scenario: "baseline", Impl: "setnx", Fencing: "off", Status: matrix.CellNA, Reason: "not today"},
	}}
	a := &assessment{o: Options{Registry: reg}}
	a.classifyCells(l, res, all, t.TempDir())
	l.tally()
	got := map[string]Class{}
	for _, f := range l.Findings {
		got[f.Scenario+"/"+string(f.Property)] = f.Class
	}
	want := map[string]Class{"pause-past-ttl/P1": Inherent, "unsafe-release/P1": Avoidable}
	if len(got) != len(want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	for k, c := range want {
		if got[k] != c {
			t.Errorf("%s: %q, want %q (findings %v)", k, got[k], c, got)
		}
	}
	if len(l.UnderLoad) != 1 || l.UnderLoad[0].Stall == "" || l.UnderLoad[0].Class != "" {
		t.Errorf("under load: %+v, want the perturbed baseline run, unclassified", l.UnderLoad)
	}
	if l.Decided.PerturbedRuns != 1 || l.Decided.Runs != 4 {
		t.Errorf("counts %+v: want 4 runs, 1 perturbed", l.Decided)
	}
	if l.Findings[0].Class != Avoidable {
		t.Errorf("findings not ordered worst first: %v", l.Findings)
	}
	for _, f := range l.Findings {
		if f.Runs == 0 || f.Replay == "" || f.Timeline == "" {
			t.Errorf("%s/%s: runs %d, replay %q, timeline %q", f.Scenario, f.Property, f.Runs, f.Replay, f.Timeline)
		}
	}
}

// TestAvoidableNeedsTheLockToRepeatIt: a reference that held the property makes a finding
// avoidable only when the lock violated it in at least half of its own runs of the plan;
// else the difference may be the timing's, and the finding is not called avoidable.
func TestAvoidableNeedsTheLockToRepeatIt(t *testing.T) {
	for _, c := range []struct {
		held, violated int
		avoidable      bool
	}{{0, 2, true}, {1, 1, true}, {2, 1, false}, {0, 0, false}} {
		o := &refOutcome{rerun.Tally{Held: map[lin.Property]int{lin.P1: c.held}, Violated: map[lin.Property]int{lin.P1: c.violated}}}
		did, held, decided := o.against("held it in 2 of 2 runs", "mylock", lin.P1)
		if held != c.avoidable || decided != c.avoidable {
			t.Errorf("lock violated %d of %d: avoidable %v (%s), want %v", c.violated, c.held+c.violated, held, did, c.avoidable)
		}
		if !c.avoidable && !strings.Contains(did, "timing") {
			t.Errorf("lock violated %d of %d: %q does not say why", c.violated, c.held+c.violated, did)
		}
	}
	if did, _, decided := (&refOutcome{rerun.Tally{Why: "no time"}}).against("held it", "mylock", lin.P1); decided || !strings.Contains(did, "no time") {
		t.Errorf("runs not made: %q, decided %v", did, decided)
	}
}
