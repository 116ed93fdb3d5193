package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/internal/browsertest"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/matrix"
)

// fencingMatrix is a small matrix as data: the textbook lock and its fenced variant on the
// baseline and Kleppmann's pause, fencing off and full; one cell violated, one run failed
// to run, one cell n/a and the fences setnx cannot try.
func fencingMatrix() matrix.Result {
	verdicts := func(p1, p2 lin.Verdict) map[lin.Property]lin.Verdict {
		return map[lin.Property]lin.Verdict{lin.P1: p1, lin.P2: p2, lin.P3: lin.OK, lin.L1: lin.OK}
	}
	run := func(scenario, impl, fencing string, v lin.Verdict, p1, p2 lin.Verdict) matrix.CellRun {
		dir := strings.Join([]string{matrix.RunsDir, scenario, impl, fencing, "0"}, "/")
		return matrix.CellRun{Index: 0, Seed: 1, Dir: dir, Link: dir + "/history.html", Verdict: v, Verdicts: verdicts(p1, p2), Ops: 12}
	}
	cell := func(scenario, impl, fencing string, runs ...matrix.CellRun) matrix.Cell {
		c := matrix.Cell{Scenario: scenario, Impl: impl, Fencing: fencing, Status: matrix.CellPlanned, Topology: "single", Runs: runs}
		c.Counts = map[lin.Property]matrix.VerdictCounts{}
		for _, r := range runs {
			for p, v := range r.Verdicts {
				vc := c.Counts[p]
				switch v {
				case lin.OK:
					vc.OK++
				case lin.Illegal:
					vc.Illegal++
				}
				c.Counts[p] = vc
			}
		}
		return c
	}
	failed := run("baseline", "fenced", "full", "", "", "")
	failed.Verdicts, failed.Error, failed.Link = nil, "start single topology: boom", failed.Dir+"/"+matrix.ErrorFile
	return matrix.Result{
		Meta: matrix.Meta{Command: "locklab matrix --test", Date: "2026-01-02T03:04:05Z", Repeat: 1, Nodes: 1, Parallel: 2,
			GoVersion: "go1.26.8", RedisVersion: "7.0.15", Complete: true, Runs: 5, Planned: 5, Errors: 1},
		Impls: []matrix.Impl{
			{Name: "setnx", Description: "SET NX PX <with> \"quotes\"", Topology: "single", FenceSource: matrix.FenceSourceNone},
			{Name: "fenced", Description: "setnx with an INCR fence", Topology: "single", FenceSource: matrix.FenceSourceLock},
		},
		Scenarios: []matrix.Scenario{
			{Name: "baseline", Description: "no faults", Topology: "single"},
			{Name: "pause-past-ttl", Description: "Kleppmann's pause", Topology: "single", Faults: 1},
			{Name: "failover-loss", Description: "a failover loses the lock", Topology: "replicated", Faults: 1},
		},
		Fencings: []string{"off", "full"},
		Cells: []matrix.Cell{
			cell("baseline", "setnx", "off", run("baseline", "setnx", "off", lin.OK, lin.OK, lin.OK)),
			cell("baseline", "fenced", "off", run("baseline", "fenced", "off", lin.OK, lin.OK, lin.OK)),
			cell("pause-past-ttl", "setnx", "off", run("pause-past-ttl", "setnx", "off", lin.Illegal, lin.Illegal, lin.Illegal)),
			cell("pause-past-ttl", "fenced", "off", run("pause-past-ttl", "fenced", "off", lin.Illegal, lin.Illegal, lin.Illegal)),
			{Scenario: "failover-loss", Impl: "setnx", Fencing: "off", Status: matrix.CellNA, Reason: "needs a replicated topology"},
			{Scenario: "failover-loss", Impl: "fenced", Fencing: "off", Status: matrix.CellNA, Reason: "needs a replicated topology"},
			{Scenario: "baseline", Impl: "setnx", Fencing: "full", Status: matrix.CellNoFencing, Reason: "no fencing token"},
			cell("baseline", "fenced", "full", failed),
			{Scenario: "pause-past-ttl", Impl: "setnx", Fencing: "full", Status: matrix.CellNoFencing, Reason: "no fencing token"},
			cell("pause-past-ttl", "fenced", "full", run("pause-past-ttl", "fenced", "full", lin.Illegal, lin.Illegal, lin.OK)),
			{Scenario: "failover-loss", Impl: "setnx", Fencing: "full", Status: matrix.CellNoFencing, Reason: "no fencing token"},
			{Scenario: "failover-loss", Impl: "fenced", Fencing: "full", Status: matrix.CellNA, Reason: "needs a replicated topology"},
		},
	}
}

// TestMatrixHTMLInBrowser: matrix.html runs in Chromium without a script error and shows
// a verdict table per fencing mode, coloured cells linking to their runs, and the notes.
func TestMatrixHTMLInBrowser(t *testing.T) {
	dir := t.TempDir()
	if err := WriteMatrix(dir, fencingMatrix()); err != nil {
		t.Fatal(err)
	}
	p := browsertest.Open(t, filepath.Join(dir, matrix.HTMLFile))
	p.MustHave("h1", "table th.scenario", "td.illegal > a[href$='/history.html']", "td.ok > a[href]",
		"td.error > a[href$='/error.txt']", "td.na", "td.none", "td .runs a.illegal[title]", "ol li")
	if n := p.Count("table"); n != 2 {
		t.Errorf("%d tables, want one per fencing mode, 2", n)
	}
	if got, want := p.Text("td.illegal > a"), "P1 1/1 · P2 1/1"; got != want {
		t.Errorf("the violated cell says %q, want %q", got, want)
	}
	p.Screenshot()
}

// TestMatrixUnderLoad: a cell whose only violation came in a perturbed run shows it as a
// finding under load in matrix.md and matrix.html, with the stall in its note, coloured
// apart from violations, and the intro says what the matrix decided.
func TestMatrixUnderLoad(t *testing.T) {
	m := fencingMatrix()
	stall := "the harness stalled for 180ms (redis lock-0)"
	for i, c := range m.Cells {
		if c.Scenario == "baseline" && c.Impl == "setnx" && c.Fencing == "off" {
			r := &m.Cells[i].Runs[0]
			r.Verdict, r.Perturbed = lin.Illegal, stall
			r.Verdicts[lin.P2] = lin.Illegal
		}
	}
	m.Meta.Decided = m.Decided()
	md := MatrixMarkdown(m, false)
	for _, want := range []string{"perturbed 1/1 · P2 1/1 under load", "run 0 violated P2 under load (a finding under load, not counted): " + stall,
		"Decided: 16 pairs decided, 0 undecided, 4 in perturbed runs; 1 of 5 runs perturbed", "P2 1/3 under load:"} {
		if !strings.Contains(md, want) {
			t.Errorf("matrix.md lacks %q:\n%s", want, md)
		}
	}
	html, err := MatrixHTML(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `<td class="underload"`) || !strings.Contains(string(html), `<a class="underload"`) {
		t.Errorf("matrix.html does not colour the cell and run under load:\n%s", html)
	}
}
