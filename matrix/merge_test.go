package matrix

import (
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
