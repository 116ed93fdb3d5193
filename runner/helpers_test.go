package runner

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// testBackends are what the fault scenarios run on, each with the same asserted
// verdicts: local processes, and containers (without a Docker engine or the image the
// docker subtests skip, except where clustertest.EnvRequireDocker or CI is set).
var testBackends = []string{plan.BackendProcess, plan.BackendDocker}

// implCase is one run of a scenario: its implementation and fencing mode replaced, and
// the verdicts expected.
type implCase struct {
	impl, fencing string
	want          verdicts
}

// runImplCases runs each case of a catalog scenario on every test backend, in parallel.
func runImplCases(t *testing.T, scenarioName string, cases []implCase) {
	t.Helper()
	for _, backend := range testBackends {
		for _, c := range cases {
			t.Run(backend+"/"+c.impl+"/"+c.fencing, func(t *testing.T) {
				t.Parallel()
				p := scenario(t, scenarioName, onBackend(backend, func(p *plan.Plan) { p.Impl, p.Fencing = c.impl, c.fencing }))
				rep := runPlan(t, nil, p)
				for try := 2; try <= violationTries; try++ {
					missed := missedViolations(rep, c.want)
					if len(missed) == 0 {
						break
					}
					t.Logf("try %d of %d: %s not violated while every other verdict is as wanted: the timing this violation needs (a delay, not a hold) did not come on this machine; running it again",
						try-1, violationTries, strings.Join(missed, ", "))
					rep = runPlan(t, nil, p)
				}
				assertVerdicts(t, rep, c.want)
				assertFaultsFired(t, rep)
			})
		}
	}
}

// violationTries is how many times a scenario runs when a violation it must show did not
// come while every other verdict was as wanted. A violation made by construction (holds,
// gates) comes on the first; one that needs a network delay to outlast a lease can miss
// on a loaded machine, and then the run is made again rather than the test failing on
// the machine's load. A safe verdict is never retried: one violation where none may be
// fails at once.
const violationTries = 3

// missedViolations are the properties want expects violated that rep shows held or
// undecided, when no other verdict differs from want; nil otherwise.
func missedViolations(rep Report, want verdicts) []string {
	var missed []string
	for prop, v := range want {
		pr, ok := rep.Result.Property(prop)
		switch {
		case !ok:
			return nil
		case pr.Verdict == v:
		case v == linearizability.Illegal && (pr.Verdict == linearizability.OK || pr.Verdict == linearizability.Unknown):
			missed = append(missed, string(prop))
		default:
			return nil
		}
	}
	slices.Sort(missed)
	return missed
}

// dockerRuns bounds the docker runs of this package's tests at a time.
var dockerRuns = make(chan struct{}, 2)

// onBackend is edit (may be nil) with the plan's servers on backend.
func onBackend(backend string, edit func(*plan.Plan)) func(*plan.Plan) {
	return func(p *plan.Plan) {
		p.Backend = backend
		if edit != nil {
			edit(p)
		}
	}
}

// verdicts is what a test expects of some properties; properties left out are not asserted.
type verdicts map[linearizability.Property]linearizability.Verdict

// runPlan runs p on real Redis servers from backend b (a fresh one when nil), writing the
// run directory under the test's temp dir.
func runPlan(t testing.TB, b cluster.Backend, p plan.Plan) Report {
	t.Helper()
	return runPlanIn(t, b, locks.All(), p)
}

// runPlanIn is runPlan with p's implementation looked up in reg.
func runPlanIn(t testing.TB, b cluster.Backend, reg *lockimpl.Registry, p plan.Plan) Report {
	t.Helper()
	if b == nil {
		if p.Backend == plan.BackendDocker {
			// Containers cost the machine more than processes: two docker runs at a time
			// keep Sentinel's elections as quick as on the process backend.
			dockerRuns <- struct{}{}
			defer func() { <-dockerRuns }()
			b = clustertest.DockerBackend(t)
		} else {
			b = clustertest.Backend(t)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := p.Resolve(reg)
	if err != nil {
		t.Fatalf("resolve %s (impl %s, fencing %s): %v", p.Name, p.Impl, p.Fencing, err)
	}
	rep, err := Run(ctx, r, Options{Backend: b, Dir: t.TempDir()})
	if err != nil {
		logSentinels(t, rep.Dir)
		t.Fatalf("run %s (impl %s, fencing %s): %v", p.Name, p.Impl, p.Fencing, err)
	}
	t.Logf("%s/%s/fencing %s: harness stall %s %s", p.Name, p.Impl, p.Fencing, rep.Stall, rep.Perturbed)
	return rep
}

// assertVerdicts fails the test unless every property in want has its verdict.
func assertVerdicts(t testing.TB, rep Report, want verdicts) {
	t.Helper()
	for prop, v := range want {
		pr, ok := rep.Result.Property(prop)
		if !ok {
			t.Errorf("%s/%s/fencing %s: no verdict for %s", rep.Plan.Name, rep.Plan.Impl, rep.Plan.Fencing, prop)
			continue
		}
		if pr.Verdict != v {
			t.Errorf("%s/%s/fencing %s: %s = %s, want %s (%s)\n%s", rep.Plan.Name, rep.Plan.Impl, rep.Plan.Fencing,
				prop, pr.Verdict, v, pr.Explanation, rep.Result)
		}
	}
}

// scenario loads a catalog scenario, optionally changed by edit.
func scenario(t testing.TB, name string, edit func(*plan.Plan)) plan.Plan {
	t.Helper()
	p, err := plan.Scenario(name, locks.All())
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&p)
	}
	return p
}

// assertFaultsFired fails the test unless every fault of the plan left a window: a safe
// verdict from a run whose fault never struck would prove nothing.
func assertFaultsFired(t testing.TB, rep Report) {
	t.Helper()
	if rep.Faults != len(rep.Plan.Faults) {
		t.Errorf("%s/%s: %d fault windows recorded, plan has %d faults", rep.Plan.Name, rep.Plan.Impl, rep.Faults, len(rep.Plan.Faults))
	}
}

// logSentinels logs the events (the "#" lines: +sdown, +odown, elections, aborts, TILT)
// of each Sentinel log a run kept, which say why a failover did or did not come.
func logSentinels(t testing.TB, dir string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "sentinel-*.log"))
	for _, name := range logs {
		f, err := os.Open(name)
		if err != nil {
			t.Log(err)
			continue
		}
		var b strings.Builder
		for sc := bufio.NewScanner(f); sc.Scan(); {
			if strings.Contains(sc.Text(), " # ") {
				b.WriteString(sc.Text() + "\n")
			}
		}
		f.Close()
		t.Logf("events of %s:\n%s", filepath.Base(name), b.String())
	}
}
