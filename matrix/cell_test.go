package matrix

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/locklab/locklab/internal/gate"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// fakeRegistry is the builtin registry (the catalog's scenarios name its locks) plus a
// lock for independent nodes and one that needs a replicated topology. They never run.
func fakeRegistry(t *testing.T) *lockimpl.Registry {
	t.Helper()
	reg := locks.All()
	never := func(lockimpl.Config) (lockimpl.Locker, error) { return nil, errors.New("fake: not for running") }
	for _, i := range []lockimpl.Impl{
		{Name: "fake-nodes", Topology: "nodes", Steps: []string{lockimpl.StepGranted}, New: never},
		{Name: "fake-replicated", Topology: "replicated", Fencing: true, Steps: []string{lockimpl.StepGranted}, New: never},
	} {
		if err := reg.Register(i); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestPlanCell(t *testing.T) {
	reg := fakeRegistry(t)
	broken := scenarioIn(t, reg, "pause-past-ttl")
	broken.Clients = 0
	cases := []struct {
		impl, scenario, fencing string
		plan                    *plan.Plan // instead of the scenario
		status                  string
		topology                string // of the planned runs
		text                    []string
	}{
		// A lock for independent nodes plays a single-server scenario on N of them; a
		// fault on lock-0 then strikes one node of N, and the note says so.
		{"fake-nodes", "restart-amnesia", "off", nil, CellPlanned, "nodes:7", []string{"ran on nodes:7", "lock-0 hit one node of 7"}},
		{"fake-nodes", "slow-grant", "off", nil, CellPlanned, "nodes:7", []string{"client:1->lock-0 hit one node of 7"}},
		{"fake-nodes", "pause-past-ttl", "off", nil, CellPlanned, "nodes:7", []string{"ran on nodes:7"}},
		{"fake-nodes", "failover-loss", "off", nil, CellNA, "", []string{"needs topology nodes", "replicated:3"}},
		{"fake-replicated", "pause-past-ttl", "full", nil, CellNA, "", []string{"needs topology replicated", "single"}},
		{"fake-replicated", "failover-loss", "full", nil, CellPlanned, "replicated", nil},
		// A single-instance lock follows the primary of a replicated topology.
		{"setnx", "failover-loss", "off", nil, CellPlanned, "replicated", nil},
		{"setnx", "pause-past-ttl", "full", nil, CellNoFencing, "", []string{"fence source none"}},
		{"fenced", "no-expiry", "off", nil, CellNA, "", []string{"step acquire:after-setnx", "never reaches"}},
		{"fenced", "clock-jump", "writes", nil, CellPlanned, "single", nil},
		// Whatever else makes the plan invalid is n/a with the reason, never dropped.
		{"fenced", "pause-past-ttl", "off", &broken, CellNA, "", []string{"clients: want 1 to 64, got 0"}},
	}
	for _, c := range cases {
		t.Run(c.impl+"/"+c.scenario+"/"+c.fencing, func(t *testing.T) {
			s := scenarioIn(t, reg, c.scenario)
			if c.plan != nil {
				s = *c.plan
			}
			impl, err := reg.Get(c.impl)
			if err != nil {
				t.Fatal(err)
			}
			cell, p := PlanCell(reg, s, impl, c.fencing, 7)
			if cell.Status != c.status {
				t.Fatalf("status %q (reason %q), want %q", cell.Status, cell.Reason, c.status)
			}
			for _, want := range c.text {
				if !strings.Contains(cell.Reason+" | "+cell.Note, want) {
					t.Errorf("reason %q, note %q: want %q", cell.Reason, cell.Note, want)
				}
			}
			if c.status != CellPlanned {
				if cell.Reason == "" {
					t.Errorf("%s cell without a reason", c.status)
				}
				return
			}
			if !strings.HasPrefix(p.Topology, c.topology) || cell.Topology != p.Topology {
				t.Errorf("topology %q (cell %q), want %q", p.Topology, cell.Topology, c.topology)
			}
			if p.Impl != c.impl || p.Fencing != c.fencing || p.Seed != s.Seed || !reflect.DeepEqual(p.Faults, s.Faults) {
				t.Errorf("plan %+v: want the scenario with impl %s and fencing %s", p, c.impl, c.fencing)
			}
			if err := p.Validate(reg); err != nil {
				t.Errorf("planned cell does not validate: %v", err)
			}
		})
	}
}

func scenarioIn(t *testing.T, reg *lockimpl.Registry, name string) plan.Plan {
	t.Helper()
	p, err := plan.Scenario(name, reg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMatrixOptions(t *testing.T) {
	o, scenarios, impls, err := Options{Out: t.TempDir()}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if scenarios[0].Name != BaselineScenario || len(scenarios[0].Faults) != 0 {
		t.Errorf("first scenario %q with %d faults, want the fault-free baseline", scenarios[0].Name, len(scenarios[0].Faults))
	}
	if len(impls) != len(locks.All().List()) || o.Repeat != 1 || o.Nodes != 5 || o.Parallel != 1 ||
		!reflect.DeepEqual(o.Fencings, []string{"off", "full"}) {
		t.Errorf("defaults: %d impls, %+v", len(impls), o)
	}
	for _, c := range []struct {
		opts           Options
		option, reason string
	}{
		{Options{Impls: []string{"setnx", "nope"}}, "impls", `unknown lock implementation "nope" (known: `},
		{Options{Scenarios: []string{"nope"}}, "scenarios", `unknown scenario "nope" (known: baseline, `},
		{Options{Fencings: []string{"sideways"}}, "fencings", `unknown fencing mode "sideways"`},
		{Options{Fencings: []string{"off", "off"}}, "fencings", `"off" given twice`},
		{Options{Repeat: -1}, "repeat", "at least 1"},
		{Options{Nodes: -3}, "nodes", "at least 1"},
		{Options{Parallel: -1}, "parallel", "at least 1"},
	} {
		c.opts.Out = t.TempDir()
		_, err := Run(context.Background(), c.opts)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != c.option || !strings.Contains(oe.Err.Error(), c.reason) {
			t.Errorf("%+v: err %v, want an OptionError on %s saying %q", c.opts, err, c.option, c.reason)
		}
	}
	if _, err := Run(context.Background(), Options{}); err == nil {
		t.Error("a matrix without an output directory was accepted")
	}
}

func TestCellSummary(t *testing.T) {
	run := func(p1, p2 lin.Verdict) CellRun {
		return CellRun{Verdict: lin.OK, Verdicts: map[lin.Property]lin.Verdict{lin.P1: p1, lin.P2: p2, lin.P3: lin.NA, lin.L1: lin.OK}}
	}
	cases := []struct {
		cell Cell
		want string
	}{
		{Cell{Status: CellPlanned, Runs: []CellRun{run(lin.OK, lin.OK), run(lin.OK, lin.NA)}}, "✓"},
		{Cell{Status: CellPlanned, Runs: []CellRun{run(lin.Illegal, lin.OK), run(lin.Illegal, lin.Illegal), run(lin.Illegal, lin.Unknown)}}, "P1 3/3 · P2 1/3 ?1/3"},
		{Cell{Status: CellPlanned, Runs: []CellRun{run(lin.OK, lin.Unknown), {Error: "boom"}}}, "P2 ?1/2 · err 1/2"},
		{Cell{Status: CellPlanned}, "…"},
		{Cell{Status: CellNA, Reason: "r"}, "—"},
		{Cell{Status: CellNoFencing}, "none"},
	}
	for _, c := range cases {
		if got := c.cell.Summary(); got != c.want {
			t.Errorf("summary %q, want %q", got, c.want)
		}
	}
}

// TestViolationsUnderLoad: a perturbed run's violation is not counted among the cell's
// verdicts, nor dropped: the cell shows it under load, counts it per property, is
// coloured apart from a violation and from the testbed's trouble, and the matrix's
// decided pairs leave the perturbed run's pairs out.
func TestViolationsUnderLoad(t *testing.T) {
	run := func(p1, p2 lin.Verdict, perturbed string) CellRun {
		v := lin.OK
		if p1 == lin.Illegal || p2 == lin.Illegal {
			v = lin.Illegal
		}
		return CellRun{Verdict: v, Perturbed: perturbed,
			Verdicts: map[lin.Property]lin.Verdict{lin.P1: p1, lin.P2: p2, lin.P3: lin.NA, lin.L1: lin.OK}}
	}
	stall := "the harness stalled for 180ms (redis lock-0)"
	c := Cell{Status: CellPlanned, Runs: []CellRun{
		run(lin.OK, lin.OK, ""), run(lin.OK, lin.Illegal, stall), run(lin.OK, lin.OK, stall), {Error: "boom"},
	}}
	c.count()
	if got, want := c.Summary(), "err 1/4 · perturbed 2/4 · P2 1/4 under load"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if c.Counts[lin.P2].Illegal != 0 || c.Counts[lin.P2].OK != 1 || c.UnderLoad[lin.P2] != 1 || len(c.UnderLoad) != 1 || c.Perturbed != 2 {
		t.Errorf("counts %+v, under load %v, perturbed %d", c.Counts, c.UnderLoad, c.Perturbed)
	}
	if got := c.Class(); got != "underload" {
		t.Errorf("class %q, want underload", got)
	}
	c.Runs = append(c.Runs, run(lin.Illegal, lin.OK, ""))
	if got := c.Class(); got != "illegal" {
		t.Errorf("class with a violation in a calm run %q, want illegal", got)
	}
	m := Result{Cells: []Cell{c, {Status: CellPlanned, Runs: []CellRun{run(lin.Unknown, lin.Unknown, "")}}}}
	// Decided: 3 pairs of each of the 2 calm runs of the first cell, L1 of the undecided one.
	if got, want := m.Decided(), (gate.Counts{Decided: 7, Undecided: 2, Perturbed: 6, Runs: 5, PerturbedRuns: 2}); got != want {
		t.Errorf("decided %+v, want %+v", got, want)
	}
}
