package matrix

import (
	lin "github.com/locklab/locklab/linearizability"

	"strings"
	"testing"
)

// A row comes whole from the last part that has it, its runs under that part's
// directory, and the counts are the kept rows'.
func TestMergeTakesEachRowFromTheLastPartWithIt(t *testing.T) {
	part := func(cmd string, repeat int, scenarios ...string) Result {
		r := Result{Meta: Meta{Command: cmd, Date: "2026-01-0" + cmd + "T00:00:00Z", Repeat: repeat, Complete: true},
			Impls: []Impl{{Name: "setnx"}}, Fencings: []string{"off"}}
		for _, s := range scenarios {
			r.Scenarios = append(r.Scenarios, Scenario{Name: s})
			c := Cell{Scenario: s, Impl: "setnx", Fencing: "off", Status: CellPlanned, Note: cmd}
			for k := range repeat {
				c.Runs = append(c.Runs, CellRun{Index: k, Dir: "runs/" + s, Link: "runs/" + s + "/history.html"})
			}
			r.Cells = append(r.Cells, c)
		}
		return r
	}
	m, err := Merge("out/m", []string{"out/a", "out/m/b"}, []Result{part("1", 3, "baseline", "slow-write"), part("2", 1, "baseline", "clock-jump")})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, s := range m.Scenarios {
		rows = append(rows, s.Name)
	}
	if got := strings.Join(rows, ","); got != "baseline,clock-jump,slow-write" {
		t.Errorf("rows %s, want baseline,clock-jump,slow-write", got)
	}
	base, _ := m.Cell("baseline", "setnx", "off")
	slow, _ := m.Cell("slow-write", "setnx", "off")
	if base.Note != "2" || len(base.Runs) != 1 || base.Runs[0].Link != "b/runs/baseline/history.html" {
		t.Errorf("baseline from %s with %d runs, link %q; want part 2's 1 run under b/", base.Note, len(base.Runs), base.Runs[0].Link)
	}
	if slow.Note != "1" || slow.Runs[0].Dir != "../a/runs/slow-write" {
		t.Errorf("slow-write from %s, dir %q; want part 1's under ../a/", slow.Note, slow.Runs[0].Dir)
	}
	if m.Meta.Runs != 5 || m.Meta.Planned != 5 || !m.Meta.Complete || m.Meta.Date != "2026-01-01T00:00:00Z" || m.Meta.Repeat != 1 {
		t.Errorf("meta %+v: want 5 of 5 runs, complete, the first date, the smallest repeat", m.Meta)
	}
	if len(m.Meta.Parts) != 2 || strings.Join(m.Meta.Parts[0].Scenarios, ",") != "slow-write" || strings.Join(m.Meta.Parts[1].Scenarios, ",") != "baseline,clock-jump" {
		t.Errorf("parts %+v: want part 1 giving slow-write, part 2 baseline and clock-jump", m.Meta.Parts)
	}
}

// TestMergeAddsAColumnToRowsRunBefore: a part that ran one more implementation over every
// row gives the merged matrix that column, and the rows keep their other cells; a row
// run again later replaces every cell of it, the new column's too.
func TestMergeAddsAColumnToRowsRunBefore(t *testing.T) {
	part := func(cmd string, impls []string, scenarios ...string) Result {
		r := Result{Meta: Meta{Command: cmd, Date: "2026-01-0" + cmd + "T00:00:00Z", Repeat: 1, Complete: true}, Fencings: []string{"off"}}
		for _, i := range impls {
			r.Impls = append(r.Impls, Impl{Name: i})
		}
		for _, s := range scenarios {
			r.Scenarios = append(r.Scenarios, Scenario{Name: s})
			for _, i := range impls {
				r.Cells = append(r.Cells, Cell{Scenario: s, Impl: i, Fencing: "off", Status: CellPlanned, Note: cmd,
					Runs: []CellRun{{Dir: "runs/" + s + "/" + i}}})
			}
		}
		return r
	}
	old := part("1", []string{"setnx", "fenced"}, "baseline", "slow-write")
	column := part("2", []string{"unsafe-extend"}, "baseline", "slow-write")
	row := part("3", []string{"setnx", "unsafe-extend", "fenced"}, "late-extend")
	m, err := Merge("out/m", []string{"out/a", "out/b", "out/c"}, []Result{old, column, row})
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, i := range m.Impls {
		cols = append(cols, i.Name)
	}
	if got := strings.Join(cols, ","); got != "setnx,unsafe-extend,fenced" {
		t.Errorf("columns %s, want the last part's order setnx,unsafe-extend,fenced", got)
	}
	for _, c := range []struct{ scenario, impl, from string }{
		{"baseline", "setnx", "1"}, {"baseline", "unsafe-extend", "2"}, {"slow-write", "fenced", "1"}, {"late-extend", "unsafe-extend", "3"},
	} {
		if cell, ok := m.Cell(c.scenario, c.impl, "off"); !ok || cell.Note != c.from {
			t.Errorf("%s × %s from part %q, want %s", c.scenario, c.impl, cell.Note, c.from)
		}
	}
	if !m.Meta.Complete || m.Meta.Runs != 9 || len(m.Cells) != 9 {
		t.Errorf("meta %+v with %d cells: want 9 runs, every cell, complete", m.Meta, len(m.Cells))
	}
	if p := m.Meta.Parts[1]; strings.Join(p.Impls, ",") != "unsafe-extend" || strings.Join(p.Scenarios, ",") != "baseline,slow-write" {
		t.Errorf("part 2 %+v: want it to give column unsafe-extend in rows baseline and slow-write", p)
	}
	if len(m.Meta.Parts[2].Impls) != 0 {
		t.Errorf("part 3 gave every column, yet names %v", m.Meta.Parts[2].Impls)
	}
	// Without the column part, its cells are pending: the matrix is incomplete.
	if m, _ := Merge("out/m", []string{"out/a", "out/c"}, []Result{old, row}); m.Meta.Complete {
		t.Error("rows without the new column's cells: want an incomplete matrix")
	}
	other := part("4", []string{"setnx"}, "baseline")
	other.Fencings = []string{"off", "full"}
	if _, err := Merge("out/m", []string{"out/a", "out/d"}, []Result{old, other}); err == nil || !strings.Contains(err.Error(), "fencing modes off against off,full") {
		t.Errorf("other fencing modes: %v, want them refused", err)
	}
}

// TestReleaseDiffs: columns of one library's releases disagree where their runs broke
// different properties; other columns, and cells alike, are no difference.
func TestReleaseDiffs(t *testing.T) {
	cell := func(scenario, impl string, illegal ...lin.Property) Cell {
		c := Cell{Scenario: scenario, Impl: impl, Fencing: "off", Status: CellPlanned, Counts: map[lin.Property]VerdictCounts{},
			Runs: []CellRun{{Dir: "runs/" + scenario + "/" + impl + "/off/0", Link: "runs/" + scenario + "/" + impl + "/off/0/history.html"}}}
		for _, p := range illegal {
			c.Counts[p] = VerdictCounts{Illegal: 1}
			c.Runs[0].Verdicts = map[lin.Property]lin.Verdict{p: lin.Illegal}
		}
		return c
	}
	m := Result{Impls: []Impl{{Name: "setnx"}, {Name: "node-redlock@3.1.2"}, {Name: "node-redlock@4.0.0"}}, Fencings: []string{"off"},
		Scenarios: []Scenario{{Name: "baseline"}, {Name: "late-extend"}},
		Cells: []Cell{
			cell("baseline", "setnx"), cell("baseline", "node-redlock@3.1.2"), cell("baseline", "node-redlock@4.0.0"),
			cell("late-extend", "setnx", lin.P1), cell("late-extend", "node-redlock@3.1.2", lin.P1, lin.P6), cell("late-extend", "node-redlock@4.0.0", lin.P1),
		}}
	diffs := m.ReleaseDiffs()
	if len(diffs) != 1 || diffs[0].Scenario != "late-extend" || diffs[0].Impl != "node-redlock" || len(diffs[0].Cells) != 2 {
		t.Fatalf("diffs %+v: want late-extend between the two node-redlock releases", diffs)
	}
	if tl := diffs[0].Cells[0].Timeline(); tl != "runs/late-extend/node-redlock@3.1.2/off/0/timeline.svg" {
		t.Errorf("timeline %q", tl)
	}
}
