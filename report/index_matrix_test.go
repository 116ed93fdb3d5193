package report

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/internal/browsertest"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report/reporttest"
	"github.com/locklab/locklab/timeline"
)

// sampleMatrix: two implementations (one with a hostile name) on two scenarios, fencing
// off; the run of baseline × setnx has a picture, the run of pause × setnx is an old
// directory without one, the hostile implementation's pause run failed to run.
func sampleMatrix() matrix.Result {
	ok := map[lin.Property]lin.Verdict{lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.NA, lin.L1: lin.OK}
	bad := map[lin.Property]lin.Verdict{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.NA, lin.L1: lin.OK}
	run := func(dir string, v map[lin.Property]lin.Verdict, verdict lin.Verdict) []matrix.CellRun {
		return []matrix.CellRun{{Index: 0, Seed: 7, Dir: dir, Link: dir + "/history.html", Verdict: verdict, Verdicts: v}}
	}
	cells := []matrix.Cell{
		{Scenario: "baseline", Impl: "setnx", Fencing: "off", Status: matrix.CellPlanned, Runs: run("runs/baseline/setnx/off/0", ok, lin.OK)},
		{Scenario: "baseline", Impl: reporttest.Hostile, Fencing: "off", Status: matrix.CellPlanned, Runs: run("runs/baseline/h/off/0", ok, lin.OK)},
		{Scenario: "pause", Impl: "setnx", Fencing: "off", Status: matrix.CellPlanned, Runs: run("runs/pause/setnx/off/0", bad, lin.Illegal)},
		{Scenario: "pause", Impl: reporttest.Hostile, Fencing: "off", Status: matrix.CellPlanned,
			Runs: []matrix.CellRun{{Index: 0, Seed: 7, Dir: "runs/pause/h/off/0", Link: "runs/pause/h/off/0/error.txt", Error: "start: " + reporttest.Hostile}}},
	}
	m := matrix.Result{
		Meta:      matrix.Meta{Command: "locklab matrix --impl setnx", Date: "2026-01-02T03:04:05Z", Repeat: 1, Runs: 4, Planned: 4, Errors: 1, Complete: true},
		Impls:     []matrix.Impl{{Name: "setnx", FenceSource: matrix.FenceSourceNone}, {Name: reporttest.Hostile, Description: reporttest.Hostile, FenceSource: matrix.FenceSourceLock}},
		Scenarios: []matrix.Scenario{{Name: "baseline"}, {Name: "pause", Description: reporttest.Hostile}},
		Fencings:  []string{"off"},
		Cells:     cells,
	}
	for i := range m.Cells {
		m.Cells[i].Counts = map[lin.Property]matrix.VerdictCounts{}
		for _, r := range m.Cells[i].Runs {
			for p, v := range r.Verdicts {
				c := m.Cells[i].Counts[p]
				switch v {
				case lin.OK:
					c.OK++
				case lin.Illegal:
					c.Illegal++
				}
				m.Cells[i].Counts[p] = c
			}
			if r.Error != "" {
				m.Cells[i].Errors++
			}
		}
	}
	return m
}

// TestMatrixIndex: index.html has one verdict table per fencing mode, links each run's
// picture and Porcupine page where they exist (and only there), lists every run, and
// shows a hostile name as text.
func TestMatrixIndex(t *testing.T) {
	dir := t.TempDir()
	reporttest.Touch(t, dir,
		"runs/baseline/setnx/off/0/"+timeline.File, "runs/baseline/setnx/off/0/history.html", "runs/baseline/setnx/off/0/plan.json",
		"runs/baseline/h/off/0/"+timeline.File, "runs/baseline/h/off/0/history.html",
		"runs/pause/setnx/off/0/history.html", // an old run directory: no picture
		"runs/pause/h/off/0/error.txt")
	m := sampleMatrix()
	if err := WriteMatrix(dir, m); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, matrix.HTMLFile)); err != nil {
		t.Errorf("matrix.html is no longer written: %v", err)
	}
	root := reporttest.ParsePage(t, page)
	reporttest.AssertLinksResolve(t, dir, root)

	table := root.ByID(t, "verdicts-off")
	if !table.HasClass("verdicts") || table.Attr["data-fencing"] != "off" {
		t.Errorf("verdict table: attributes %v", table.Attr)
	}
	if got, want := table.Hrefs("timeline"), []string{"runs/baseline/setnx/off/0/timeline.svg", "runs/baseline/h/off/0/timeline.svg"}; !slices.Equal(got, want) {
		t.Errorf("timeline links in the verdict table: %q, want %q", got, want)
	}
	if got, want := table.Hrefs("porcupine"), []string{"runs/baseline/setnx/off/0/history.html", "runs/baseline/h/off/0/history.html", "runs/pause/setnx/off/0/history.html"}; !slices.Equal(got, want) {
		t.Errorf("porcupine links in the verdict table: %q, want %q", got, want)
	}
	cells := table.All(func(n *reporttest.Node) bool { return n.Name == "td" && n.HasClass("cell") })
	if len(cells) != 4 {
		t.Fatalf("%d cells, want 4", len(cells))
	}
	pause := cells[2]
	if pause.Attr["data-scenario"] != "pause" || pause.Attr["data-impl"] != "setnx" || !pause.HasClass("illegal") ||
		!strings.Contains(pause.Text.String(), "P1 1/1") {
		t.Errorf("pause × setnx cell: %v %q", pause.Attr, pause.Text.String())
	}
	if n := len(pause.All(func(n *reporttest.Node) bool { return n.HasClass("no-picture") })); n != 1 {
		t.Errorf("pause × setnx (no timeline.svg): %d no-picture marks, want 1", n)
	}
	if cells[1].Attr["data-impl"] != reporttest.Hostile {
		t.Errorf("reporttest.Hostile implementation's cell: data-impl %q", cells[1].Attr["data-impl"])
	}
	if got := cells[3].Hrefs("error-file"); !slices.Equal(got, []string{"runs/pause/h/off/0/error.txt"}) {
		t.Errorf("a run that failed to run links %q, want its error.txt", got)
	}

	runs := root.ByID(t, "runs").Rows("data-dir")
	if len(runs) != 4 {
		t.Fatalf("runs table: %d rows, want 4", len(runs))
	}
	if r := runs[0]; r.Attr["data-dir"] != "runs/baseline/setnx/off/0" || !slices.Equal(r.Hrefs("timeline"), []string{"runs/baseline/setnx/off/0/timeline.svg"}) ||
		!slices.Equal(r.Hrefs("porcupine"), []string{"runs/baseline/setnx/off/0/history.html"}) || !slices.Equal(r.Hrefs("plan"), []string{"runs/baseline/setnx/off/0/plan.json"}) {
		t.Errorf("first run's row: %v, links %q %q", r.Attr, r.Hrefs("timeline"), r.Hrefs("porcupine"))
	}
	if r := runs[3]; !strings.Contains(r.Text.String(), "failed to run: start: "+reporttest.Hostile) || len(r.Hrefs("porcupine")) != 0 {
		t.Errorf("failed run's row: %q", r.Text.String())
	}
	head := root.All(func(n *reporttest.Node) bool { return n.Name == "th" && n.Attr["data-impl"] == reporttest.Hostile })
	if len(head) != 1 || !strings.HasPrefix(head[0].Text.String(), reporttest.Hostile) {
		t.Errorf("reporttest.Hostile implementation's heading not shown as text: %d headings", len(head))
	}
	if !strings.Contains(root.ByID(t, "intro").Text.String(), "locklab matrix --impl setnx") {
		t.Errorf("intro: %q", root.ByID(t, "intro").Text.String())
	}

	// In a real browser: no script error, the tables and links are there.
	b := browsertest.Open(t, filepath.Join(dir, IndexFile))
	b.MustHave("section#verdicts table.verdicts#verdicts-off", "td.cell.illegal", "a.timeline[href$='/timeline.svg']", "a.porcupine", "table#runs", "span.no-picture")
	b.Screenshot()
}

// TestEmptyMatrixIndex: the index of an empty matrix renders, well-formed, saying so.
func TestEmptyMatrixIndex(t *testing.T) {
	dir := t.TempDir()
	m, err := MatrixIndex(matrix.Result{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := reporttest.ParsePage(t, m).ByID(t, "runs").Text.String(); got != "No run finished." {
		t.Errorf("empty matrix: runs %q", got)
	}
}
