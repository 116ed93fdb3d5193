package campaign

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
)

// fakeRegistry is the builtin registry (the catalog's scenarios name its locks) plus a
// lock for independent nodes and one that needs a replicated topology. They never run.
func fakeRegistry(t *testing.T) *lockimpl.Registry {
	t.Helper()
	reg := lockimpl.Builtin()
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
	broken := scenario(t, "pause-past-ttl", func(p *Plan) { p.Clients = 0 })
	cases := []struct {
		impl, scenario, fencing string
		plan                    *Plan // instead of the scenario
		status                  string
		topology                string // of the planned runs
		text                    []string
	}{
		// A lock for independent nodes plays a single-server scenario on N of them; a
		// fault on lock-0 then strikes one node of N, and the note says so.
		{"fake-nodes", "restart-amnesia", "off", nil, CellPlanned, "nodes:7", []string{"ran on nodes:7", "lock-0 hit one node of 7"}},
		{"fake-nodes", "slow-grant", "off", nil, CellPlanned, "nodes:7", []string{"client:1->lock-0 hit one node of 7"}},
		{"fake-nodes", "pause-past-ttl", "off", nil, CellPlanned, "nodes:7", []string{"ran on nodes:7"}},
		{"fake-nodes", "failover-loss", "off", nil, CellNA, "", []string{"needs a nodes topology", "replicated:3"}},
		{"fake-replicated", "pause-past-ttl", "full", nil, CellNA, "", []string{"needs a replicated topology", "single"}},
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

func scenarioIn(t *testing.T, reg *lockimpl.Registry, name string) Plan {
	t.Helper()
	p, err := Scenario(name, reg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMatrixOptions(t *testing.T) {
	o, scenarios, impls, err := MatrixOptions{Out: t.TempDir()}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if scenarios[0].Name != BaselineScenario || len(scenarios[0].Faults) != 0 {
		t.Errorf("first scenario %q with %d faults, want the fault-free baseline", scenarios[0].Name, len(scenarios[0].Faults))
	}
	if len(impls) != len(lockimpl.Builtin().List()) || o.Repeat != 1 || o.Nodes != 5 || o.Parallel != 1 ||
		!reflect.DeepEqual(o.Fencings, []string{"off", "full"}) {
		t.Errorf("defaults: %d impls, %+v", len(impls), o)
	}
	for _, c := range []struct {
		opts           MatrixOptions
		option, reason string
	}{
		{MatrixOptions{Impls: []string{"setnx", "nope"}}, "impls", `unknown lock implementation "nope" (known: `},
		{MatrixOptions{Scenarios: []string{"nope"}}, "scenarios", `unknown scenario "nope" (known: baseline, `},
		{MatrixOptions{Fencings: []string{"sideways"}}, "fencings", `unknown fencing mode "sideways"`},
		{MatrixOptions{Fencings: []string{"off", "off"}}, "fencings", `"off" given twice`},
		{MatrixOptions{Repeat: -1}, "repeat", "at least 1"},
		{MatrixOptions{Nodes: -3}, "nodes", "at least 1"},
		{MatrixOptions{Parallel: -1}, "parallel", "at least 1"},
	} {
		c.opts.Out = t.TempDir()
		_, err := Matrix(context.Background(), c.opts)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != c.option || !strings.Contains(oe.Err.Error(), c.reason) {
			t.Errorf("%+v: err %v, want an OptionError on %s saying %q", c.opts, err, c.option, c.reason)
		}
	}
	if _, err := Matrix(context.Background(), MatrixOptions{}); err == nil {
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

// TestMatrix runs a small matrix on real Redis: the textbook lock and its fenced variant,
// on the fault-free baseline and Kleppmann's pause, with fencing off and full.
func TestMatrix(t *testing.T) {
	out := t.TempDir()
	var (
		mu     sync.Mutex
		events []MatrixEvent
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Matrix(ctx, MatrixOptions{
		Impls: []string{"setnx", "fenced"}, Scenarios: []string{"baseline", "pause-past-ttl"}, Fencings: []string{"off", "full"},
		Repeat: 1, Parallel: 3, Out: out, Command: "locklab matrix --test",
		Progress: func(e MatrixEvent) { mu.Lock(); events = append(events, e); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Meta.Complete || res.Meta.Runs != 6 || res.Meta.Planned != 6 || res.Meta.Errors != 0 || len(events) != 6 {
		t.Fatalf("meta %+v, %d progress events; want 6 runs, complete, no error", res.Meta, len(events))
	}
	if _, err := time.Parse(time.RFC3339, res.Meta.Date); err != nil || !strings.HasSuffix(res.Meta.Date, "Z") {
		t.Errorf("date %q: want RFC 3339 in UTC (%v)", res.Meta.Date, err)
	}
	if res.Meta.RedisVersion == "" || strings.HasPrefix(res.Meta.RedisVersion, "unknown") || res.Meta.GoVersion == "" {
		t.Errorf("versions: redis %q, go %q", res.Meta.RedisVersion, res.Meta.GoVersion)
	}

	verdict := func(scenario, impl, fencing string, p lin.Property) VerdictCounts {
		t.Helper()
		c, ok := res.Cell(scenario, impl, fencing)
		if !ok {
			t.Fatalf("no cell %s × %s × %s", scenario, impl, fencing)
		}
		return c.Counts[p]
	}
	summary := func(scenario, impl, fencing string) string {
		c, _ := res.Cell(scenario, impl, fencing)
		return c.Summary()
	}
	// Without fencing the pause breaks both the beliefs and the data.
	if p1, p2 := verdict("pause-past-ttl", "setnx", "off", lin.P1), verdict("pause-past-ttl", "setnx", "off", lin.P2); p1.Illegal != 1 || p2.Illegal != 1 {
		t.Errorf("setnx × pause-past-ttl × off: P1 %+v, P2 %+v; want both illegal in 1 of 1", p1, p2)
	}
	if got := summary("pause-past-ttl", "setnx", "off"); got != "P1 1/1 · P2 1/1" {
		t.Errorf("setnx × pause-past-ttl × off shows %q", got)
	}
	// Fencing saves the data, not the beliefs.
	if p1, p2 := verdict("pause-past-ttl", "fenced", "full", lin.P1), verdict("pause-past-ttl", "fenced", "full", lin.P2); p1.Illegal != 1 || p2.OK != 1 {
		t.Errorf("fenced × pause-past-ttl × full: P1 %+v, P2 %+v; want P1 illegal, P2 ok", p1, p2)
	}
	for _, c := range []struct{ impl, fencing string }{{"setnx", "off"}, {"fenced", "off"}, {"fenced", "full"}} {
		if got := summary("baseline", c.impl, c.fencing); got != "✓" {
			t.Errorf("baseline × %s × %s shows %q, want ✓", c.impl, c.fencing, got)
		}
	}
	for _, s := range []string{"baseline", "pause-past-ttl"} {
		if c, _ := res.Cell(s, "setnx", "full"); c.Status != CellNoFencing || c.Summary() != "none" || len(c.Runs) != 0 {
			t.Errorf("setnx × %s × full: %+v, want none and not run", s, c)
		}
	}
	if res.Impls[0].FenceSource != FenceSourceNone || res.Impls[1].FenceSource != FenceSourceLock {
		t.Errorf("fence sources %+v", res.Impls)
	}

	// matrix.json holds exactly the result.
	loaded, err := LoadMatrix(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded, res) {
		a, _ := json.Marshal(loaded)
		b, _ := json.Marshal(res)
		t.Errorf("matrix.json does not round-trip:\n%s\n%s", a, b)
	}

	md, err := os.ReadFile(filepath.Join(out, MatrixMD))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`locklab matrix --test`", res.Meta.Date, "**Fencing off**", "**Fencing full**", "| *fence source* | none | lock |",
		"| pause-past-ttl | [P1 1/1 · P2 1/1](runs/pause-past-ttl/setnx/off/0/history.html) |", "| baseline | none |"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("matrix.md lacks %q:\n%s", want, md)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, MatrixHTML))
	if err != nil {
		t.Fatal(err)
	}
	mdLinks := assertLinks(t, out, md, `\]\(([^)]+)\)`)
	htmlLinks := assertLinks(t, out, page, `href="([^"]+)"`)
	if mdLinks != 6 || htmlLinks != 6 {
		t.Errorf("%d distinct links in matrix.md, %d in matrix.html; want one per run, 6", mdLinks, htmlLinks)
	}
	for _, f := range []string{PlanFile, ResultFile, HTMLFile} {
		if _, err := os.Stat(filepath.Join(out, RunsDir, "pause-past-ttl", "fenced", "full", "0", f)); err != nil {
			t.Errorf("run directory: %v", err)
		}
	}
}

// assertLinks checks that every link the pattern finds in doc leads to a file under dir,
// and returns how many distinct links there are.
func assertLinks(t *testing.T, dir string, doc []byte, pattern string) int {
	t.Helper()
	distinct := map[string]bool{}
	for _, l := range regexp.MustCompile(pattern).FindAllSubmatch(doc, -1) {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(string(l[1])))); err != nil {
			t.Errorf("broken link %s: %v", l[1], err)
		}
		distinct[string(l[1])] = true
	}
	return len(distinct)
}

// TestMatrixInterrupted: cancelling stops the matrix after the run under way; what
// finished is written, marked incomplete, and the runs not made show as such.
func TestMatrixInterrupted(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Matrix(ctx, MatrixOptions{
		Impls: []string{"setnx"}, Scenarios: []string{"baseline", "pause-past-ttl"}, Fencings: []string{"off"}, Repeat: 1, Out: out,
		Progress: func(MatrixEvent) { cancel() }, // after the first run
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if res.Meta.Complete || res.Meta.Runs != 1 || res.Meta.Planned != 2 {
		t.Fatalf("meta %+v: want 1 of 2 runs, incomplete", res.Meta)
	}
	if c, _ := res.Cell("pause-past-ttl", "setnx", "off"); c.Summary() != "…" || c.Errors != 0 {
		t.Errorf("the run not made shows %q with %d errors", c.Summary(), c.Errors)
	}
	loaded, err := LoadMatrix(out)
	if err != nil || loaded.Meta.Complete {
		t.Fatalf("written matrix: complete %v, err %v", loaded.Meta.Complete, err)
	}
	md, _ := os.ReadFile(filepath.Join(out, MatrixMD))
	if !bytes.Contains(md, []byte("**Incomplete:** interrupted after 1 of 2 runs")) {
		t.Errorf("matrix.md does not say it is incomplete:\n%s", md)
	}
}
