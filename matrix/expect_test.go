package matrix_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locklab/locklab/campaign/expect"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
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

// violated matches a cell's "P1 3/3" entries; undecided its "P1 ?1/3" ones (alone or
// after a count of violations: "P1 1/3 ?1/3").
var (
	violated  = regexp.MustCompile(`\b(P[1-6]|L1) [1-9][0-9]*/[0-9]+`)
	undecided = regexp.MustCompile(`\b(P[1-6]|L1) (?:[0-9]+/[0-9]+ )?\?[0-9]+/[0-9]+`)
)

// cellVerdicts reads a published cell: per property, lin.Illegal when a run violated
// it, lin.OK when every run decided it and none violated it, absent when that is not
// known. A cell with runs that failed to run or were perturbed says nothing of which
// properties those runs held, so it holds none (its violations, from the other runs,
// stand); nor is P3 decided for an implementation that grants no fences (n/a, shown as ✓).
func cellVerdicts(cell string, impl lockimpl.Impl) map[lin.Property]lin.Verdict {
	out := map[lin.Property]lin.Verdict{}
	incomplete := strings.Contains(cell, "err ") || strings.Contains(cell, "perturbed ")
	unknown := map[string]bool{}
	for _, m := range undecided.FindAllStringSubmatch(cell, -1) {
		unknown[m[1]] = true
	}
	bad := map[string]bool{}
	for _, m := range violated.FindAllStringSubmatch(cell, -1) {
		bad[m[1]] = true
	}
	for _, prop := range []lin.Property{lin.P1, lin.P2, lin.P3, lin.L1, lin.P6} {
		switch {
		case bad[string(prop)]:
			out[prop] = lin.Illegal
		case incomplete, unknown[string(prop)], prop == lin.P3 && !impl.Fencing:
		default:
			out[prop] = lin.OK
		}
	}
	return out
}

// evidenceRuns is where real runs that exercise rules no matrix cell reaches are
// committed, each a run directory as locklab run wrote it (its README says how).
const evidenceRuns = "../campaign/expect/testdata/runs"

// evidenceRun is one committed run: its plan and its verdicts (none when the run was
// perturbed or interrupted: its verdicts say nothing of the lock).
type evidenceRun struct {
	dir      string
	plan     plan.Plan
	verdicts map[lin.Property]lin.Verdict
}

func readEvidenceRuns(t *testing.T, reg *lockimpl.Registry) []evidenceRun {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(evidenceRuns, "*", runner.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []evidenceRun
	for _, resultFile := range dirs {
		dir := filepath.Dir(resultFile)
		p, err := plan.Read(filepath.Join(dir, runner.PlanFile), reg)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		data, err := os.ReadFile(resultFile)
		if err != nil {
			t.Fatal(err)
		}
		var rep runner.Report
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatalf("%s: %v", resultFile, err)
		}
		if rep.Plan.Impl != p.Impl || rep.Plan.Seed != p.Seed {
			t.Fatalf("%s: result.json is of plan %s seed %d, plan.json of %s seed %d", dir, rep.Plan.Impl, rep.Plan.Seed, p.Impl, p.Seed)
		}
		r := evidenceRun{dir: dir, plan: p, verdicts: map[lin.Property]lin.Verdict{}}
		if rep.Perturbed == "" && !rep.Interrupted {
			for _, pr := range rep.Result.Properties {
				r.verdicts[pr.Property] = pr.Verdict
			}
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		t.Fatalf("no run directory with %s under %s", runner.ResultFile, evidenceRuns)
	}
	return out
}

// TestExpectationsAgreeWithMatrix holds the expectation rules to committed results that
// could contradict them: the published verdict matrix (the matrix runs the catalog
// scenarios as PlanCell plans them) and the real runs under evidenceRuns, for the rules
// no cell reaches. No rule may claim a property such a result saw violated; every rule
// must have had at least one (plan, property) pair whose verdict was known (a checker
// timeout, a run that failed or was perturbed, a property with nothing to check count
// for nothing); and every correct implementation has its column.
func TestExpectationsAgreeWithMatrix(t *testing.T) {
	reg := locks.All()
	published := publishedMatrix(t)
	scenarios, err := plan.Scenarios(reg)
	if err != nil {
		t.Fatal(err)
	}
	faulted := map[string]bool{} // rules that speak of faults
	for _, r := range expect.Rules() {
		faulted[r.Name] = len(r.Faults) > 0
	}
	// A rule about faults matches every fault-free plan too (it has no fault to refuse):
	// such a plan is no test of it, and its pairs count for the fault-free rules alone. Any
	// violated claim fails the test.
	pairs := map[string]int{} // rule → decided (plan, property) pairs it claimed
	judge := func(where string, p plan.Plan, impl lockimpl.Impl, verdicts map[lin.Property]lin.Verdict) {
		for _, c := range expect.Claims(p, impl) {
			v := verdicts[c.Property]
			if v == lin.Illegal {
				t.Errorf("%s: rule %s claims %s, which was violated", where, c.Rule, c.Property)
			}
			if (v == lin.OK || v == lin.Illegal) && (len(p.Faults) > 0 || !faulted[c.Rule]) {
				pairs[c.Rule]++
			}
		}
	}
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
				judge(fmt.Sprintf("docs/matrix.md: %s × %s × fencing %s (%s)", impl.Name, s.Name, fencing, cell), p, impl, cellVerdicts(cell, impl))
			}
		}
	}
	for _, r := range readEvidenceRuns(t, reg) {
		impl, err := reg.Get(r.plan.Impl)
		if err != nil {
			t.Fatalf("%s: %v", r.dir, err)
		}
		judge(r.dir, r.plan, impl, r.verdicts)
	}
	for _, r := range expect.Rules() {
		t.Logf("rule %s: %d claimed (plan, property) pairs decided", r.Name, pairs[r.Name])
		if pairs[r.Name] == 0 {
			t.Errorf("rule %s: no committed result decided a property it claims: nothing could have contradicted it (add a run to %s)", r.Name, evidenceRuns)
		}
	}
}

// TestCellVerdicts: only what a cell shows decided counts; undecided runs, runs that
// failed or were perturbed, and P3 without fences decide nothing.
func TestCellVerdicts(t *testing.T) {
	reg := locks.All()
	fenced, _ := reg.Get("fenced")
	setnx, _ := reg.Get("setnx")
	for _, c := range []struct {
		cell string
		impl lockimpl.Impl
		want map[lin.Property]lin.Verdict
	}{
		{"✓", fenced, map[lin.Property]lin.Verdict{lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK, lin.P6: lin.OK}},
		{"✓¹", setnx, map[lin.Property]lin.Verdict{lin.P1: lin.OK, lin.P2: lin.OK, lin.L1: lin.OK, lin.P6: lin.OK}},
		{"P1 3/3 · P2 ?1/3", fenced, map[lin.Property]lin.Verdict{lin.P1: lin.Illegal, lin.P3: lin.OK, lin.L1: lin.OK, lin.P6: lin.OK}},
		{"P2 1/3 ?1/3 · P6 1/3", fenced, map[lin.Property]lin.Verdict{lin.P1: lin.OK, lin.P2: lin.Illegal, lin.P3: lin.OK, lin.L1: lin.OK, lin.P6: lin.Illegal}},
		{"P1 1/3 · err 1/3", fenced, map[lin.Property]lin.Verdict{lin.P1: lin.Illegal}},
		{"perturbed 2/3", fenced, map[lin.Property]lin.Verdict{}},
	} {
		got := cellVerdicts(c.cell, c.impl)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("cell %q of %s: %v, want %v", c.cell, c.impl.Name, got, c.want)
		}
	}
}
