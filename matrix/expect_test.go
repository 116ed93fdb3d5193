package matrix_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/locklab/locklab/campaign/expect"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/plan"
)

// publishedMatrix is docs/matrix.md's table: cell text by fencing mode, scenario and
// implementation.
func publishedMatrix(t *testing.T) map[string]map[string]map[string]string {
	t.Helper()
	data, err := os.ReadFile("../docs/matrix.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]map[string]string{}
	var fencing string
	var impls []string
	text, _, _ := strings.Cut(string(data), "<!-- matrix:end -->")
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case line == "**Fencing off**":
			fencing = "off"
		case line == "**Fencing full**":
			fencing = "full"
		case fencing == "" || !strings.HasPrefix(line, "|"):
			continue
		case strings.HasPrefix(line, "| scenario |"):
			impls = nil
			for _, c := range splitRow(line)[1:] {
				impls = append(impls, strings.TrimSuffix(c, " (mutant)"))
			}
			out[fencing] = map[string]map[string]string{}
		case strings.HasPrefix(line, "|---"), strings.HasPrefix(line, "| *"):
		default:
			cells := splitRow(line)
			row := map[string]string{}
			for k, c := range cells[1:] {
				if k < len(impls) {
					row[impls[k]] = c
				}
			}
			out[fencing][cells[0]] = row
		}
	}
	if len(out["off"]) == 0 || len(out["full"]) == 0 {
		t.Fatal("docs/matrix.md: no fencing off and full tables between its markers")
	}
	return out
}

func splitRow(line string) []string {
	cells := strings.Split(strings.Trim(line, "|"), "|")
	for k := range cells {
		cells[k] = strings.TrimSpace(cells[k])
	}
	return cells
}

// violated matches a cell's "P1 3/3" entries.
var violated = regexp.MustCompile(`\b(P[1-5]|L1) [1-9][0-9]*/[0-9]+`)

// TestExpectationsAgreeWithMatrix holds the expectation rules to the published verdict
// matrix: no rule may claim a property that the matrix saw violated in a cell of a
// correct implementation (the matrix runs the catalog scenarios as PlanCell plans them),
// and every correct implementation has its column.
func TestExpectationsAgreeWithMatrix(t *testing.T) {
	reg := locks.All()
	published := publishedMatrix(t)
	scenarios, err := plan.Scenarios(reg)
	if err != nil {
		t.Fatal(err)
	}
	claims := 0
	for _, impl := range reg.List() {
		if impl.Mutant {
			continue
		}
		for _, fencing := range []string{"off", "full"} {
			for _, s := range scenarios {
				if s.Workload == plan.WorkloadJobs {
					continue
				}
				row, ok := published[fencing][s.Name]
				if !ok {
					t.Errorf("docs/matrix.md has no row %s (fencing %s): regenerate it with make matrix", s.Name, fencing)
					continue
				}
				cell, ok := row[impl.Name]
				if !ok {
					t.Errorf("docs/matrix.md has no column %s: regenerate it with make matrix", impl.Name)
					break
				}
				c, p := matrix.PlanCell(reg, s, impl, fencing, 5)
				if c.Status != matrix.CellPlanned {
					continue
				}
				bad := map[string]bool{}
				for _, m := range violated.FindAllStringSubmatch(cell, -1) {
					bad[m[1]] = true
				}
				for prop, rule := range expect.ExpectedBy(p, impl) {
					claims++
					if bad[string(prop)] {
						t.Errorf("%s × %s × fencing %s: rule %s claims %s, the matrix saw it violated (%s)", impl.Name, s.Name, fencing, rule, prop, cell)
					}
				}
			}
		}
	}
	if claims == 0 {
		t.Error("no rule claims anything in any cell of the matrix")
	}
	t.Logf("%d claimed (cell, property) pairs checked against docs/matrix.md", claims)
}
