package matrix

import (
	"path"
	"strings"

	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/timeline"
)

// ReleaseDiff is a cell where releases of one library disagree: under one row and
// fencing mode, columns of the same implementation (NAME@A, NAME@B, or NAME and NAME@B)
// whose runs violated different properties.
type ReleaseDiff struct {
	Scenario, Fencing, Impl string // Impl: the implementation without a version
	Cells                   []Cell // one per release, in column order
}

// ReleaseDiffs are the cells where the releases among m's columns disagree, in table
// order: a version diff (locklab matrix --impl redsync@vA,redsync@vB).
func (m Result) ReleaseDiffs() []ReleaseDiff {
	groups := map[string][]string{} // implementation → its columns
	var order []string
	for _, i := range m.Impls {
		base, _, _ := strings.Cut(i.Name, "@")
		if len(groups[base]) == 0 {
			order = append(order, base)
		}
		groups[base] = append(groups[base], i.Name)
	}
	var out []ReleaseDiff
	for _, fencing := range m.Fencings {
		for _, s := range m.Scenarios {
			for _, base := range order {
				if len(groups[base]) < 2 {
					continue
				}
				d := ReleaseDiff{Scenario: s.Name, Fencing: fencing, Impl: base}
				broke := map[string]bool{}
				for _, name := range groups[base] {
					if c, ok := m.Cell(s.Name, name, fencing); ok && c.Status == CellPlanned && len(c.Runs) > 0 {
						d.Cells = append(d.Cells, c)
						broke[c.Violated()] = true
					}
				}
				if len(d.Cells) >= 2 && len(broke) > 1 {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// Violated is the properties some counted run of c violated, "P1,P6".
func (c Cell) Violated() string {
	var ps []linearizability.Property
	for _, p := range linearizability.AllProperties() {
		if c.Counts[p].Illegal > 0 {
			ps = append(ps, p)
		}
	}
	return linearizability.JoinProperties(ps, ",")
}

// Timeline is the picture of the run a cell leads to (Link), beside its history.html.
func (c Cell) Timeline() string {
	if l := c.Link(); path.Base(l) == runner.HTMLFile {
		return path.Join(path.Dir(l), timeline.File)
	}
	return ""
}
