package campaign

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/gate"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
)

// sampleSummary is a shard's summary with a safe-configuration violation, a finding, a
// passing run and an error, built the way Search builds it.
func sampleSummary(t *testing.T, shard Shard) *Summary {
	t.Helper()
	s := newSummary(SearchOptions{Seed: 9, Shard: shard}, Space{Impls: []string{"fenced", "setnx"}})
	safe := plan.Default()
	safe.Impl, safe.Fencing = "fenced", "full"
	safe.Faults = []plan.FaultSpec{{Kind: "client-pause", Target: "client:0", Point: "before-write", Duration: plan.D(time.Second)}}
	finding := plan.Default()
	finding.Faults = safe.Faults
	res := func(illegal ...lin.Property) lin.Result {
		r := lin.Result{Verdict: lin.OK}
		for _, p := range lin.AllProperties() {
			pr := lin.PropertyResult{Property: p, Verdict: lin.OK}
			for _, i := range illegal {
				if i == p {
					pr.Verdict, pr.Explanation, r.Verdict = lin.Illegal, "two writers <&> \"quoted\"", lin.Illegal
				}
			}
			r.Properties = append(r.Properties, pr)
		}
		return r
	}
	add := func(p plan.Plan, i int, illegal, safeProps []lin.Property) {
		rep := runner.Report{Plan: p, Result: res(illegal...), Ops: 100, RunTime: time.Second}
		rec := &RunRecord{Index: i, Illegal: illegal, Safe: safeProps}
		by := map[lin.Property]string{}
		for _, prop := range safeProps {
			by[prop] = "full-fencing-single-server"
		}
		s.addRun(p, rep, rec, by)
		if len(illegal) > 0 {
			f := s.addFailure(p, i, rep, rec, []string{"pause-past-ttl"}, by, time.Duration(i)*time.Second, "runs/0000"+string(rune('0'+i)))
			f.Saved, f.Report, f.Reproduced, f.Confirms, f.Target = "failures/x/plan.json", "failures/x/report", 1, 1, illegal[0]
			small := Size{Faults: 1, Clients: 2, Keys: 1, Ops: 40, Duration: plan.D(time.Second)}
			f.Shrunk = &small
		}
	}
	add(safe, shard.I, []lin.Property{lin.P1, lin.P2}, []lin.Property{lin.P2})
	add(finding, shard.I+shard.N, []lin.Property{lin.P1}, nil)
	add(plan.Default(), shard.I+2*shard.N, nil, nil)
	s.addError(plan.Default(), shard.I+3*shard.N, "runs/err", errors.New("start single topology: boom"))
	s.Elapsed = plan.D(time.Minute)
	s.finish()
	return s
}

// TestSummaryCounts: a summary counts what Search adds to it, and summary.json
// round-trips (report_test renders summaries).
func TestSummaryCounts(t *testing.T) {
	s := sampleSummary(t, Shard{0, 1})
	if s.Runs != 3 || s.Errors != 1 || s.SafeViolations != 1 || s.Findings != 1 || s.Violations[lin.P1] != 2 || s.OK() {
		t.Fatalf("counts: %+v", s)
	}
	if f := s.FirstViolation[lin.P1]; f.Run != 0 || f.Runs != 1 {
		t.Errorf("first P1: %+v", f)
	}
	// Only the claimed pair counts: fenced's P2, violated; nothing is claimed for setnx.
	if c := s.Claims["fenced"]; c != (ClaimCount{Violated: 1}) || len(s.Claims) != 1 {
		t.Errorf("claims %+v", s.Claims)
	}
	dir := t.TempDir()
	if err := WriteSummary(dir, s); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.SafeViolations != 1 || back.Violations[lin.P2] != 1 || len(back.Failures) != 2 || back.Failures[0].Shrunk == nil {
		t.Errorf("summary.json did not round-trip: %+v", back)
	}
}

// TestOnlyConfirmedDetectionsCount: a run that detects a class is a candidate; the class
// is found only once a re-run confirms it.
func TestOnlyConfirmedDetectionsCount(t *testing.T) {
	class := Class{ID: "pause-past-ttl"}
	s := newSummary(SearchOptions{Seed: 1, Class: &class}, Space{})
	p := plan.Default()
	rep := runner.Report{Plan: p, Result: lin.Result{Verdict: lin.Illegal}, Ops: 10}
	rec := &RunRecord{Index: 0, Illegal: []lin.Property{lin.P1}}
	s.addRun(p, rep, rec, nil)
	f := s.addFailure(p, 0, rep, rec, []string{"pause-past-ttl"}, nil, time.Second, "runs/00000")
	if s.Detected || len(s.FirstDetection) != 0 || s.OK() {
		t.Fatalf("an unconfirmed detection counted: detected %v, first %v, ok %v", s.Detected, s.FirstDetection, s.OK())
	}
	s.confirmDetection(f, "pause-past-ttl", false, 2*time.Second)
	if s.Detected || s.Unconfirmed["pause-past-ttl"] != 1 || s.OK() {
		t.Fatalf("a detection that did not reproduce counted: %+v", s)
	}
	s.confirmDetection(f, "pause-past-ttl", true, 3*time.Second)
	if !s.Detected || !s.OK() || s.FirstDetection["pause-past-ttl"].After.D() != 3*time.Second || len(f.Confirmed) != 1 {
		t.Fatalf("a confirmed detection did not count: %+v", s)
	}
}

// verdicts is a result with the given verdict on every property.
func verdicts(v lin.Verdict) lin.Result {
	r := lin.Result{Verdict: v}
	for _, p := range lin.AllProperties() {
		r.Properties = append(r.Properties, lin.PropertyResult{Property: p, Verdict: v})
	}
	return r
}

// TestNothingDecidedIsInconclusive: a campaign whose claimed pairs were all undecided
// (the checker timed out), or whose runs were all perturbed, is inconclusive, and says
// how many pairs it decided; one that decided its claims is not.
func TestNothingDecidedIsInconclusive(t *testing.T) {
	p := plan.Default()
	p.Impl, p.Fencing = "fenced", "full"
	all := map[lin.Property]string{lin.P1: "r", lin.P2: "r", lin.P3: "r", lin.L1: "r"}
	th := &gate.Thresholds{MinDecided: 1, MaxPerturbed: 0.5}
	timedOut := newSummary(SearchOptions{Thresholds: th}, Space{})
	for i := range 3 {
		timedOut.addRun(p, runner.Report{Plan: p, Result: verdicts(lin.Unknown)}, &RunRecord{Index: i}, all)
	}
	if c := timedOut.Counts(); c.Decided != 0 || c.Undecided != 12 || c.Runs != 3 {
		t.Errorf("timed out: counts %+v", c)
	}
	if err := timedOut.Inconclusive(); err == nil || !strings.Contains(err.Error(), "0 claimed pairs decided (12 undecided") {
		t.Errorf("every claim undecided: %v", err)
	}
	if !timedOut.OK() {
		t.Errorf("an inconclusive campaign is no failure")
	}

	perturbed := newSummary(SearchOptions{Thresholds: th}, Space{})
	perturbed.addRun(p, runner.Report{Plan: p, Result: verdicts(lin.OK)}, &RunRecord{Index: 0}, all)
	for i := 1; i <= 2; i++ {
		perturbed.addPerturbed(p, i, runner.Report{Plan: p, Result: verdicts(lin.OK), Perturbed: "stalled"}, all, "runs/x")
	}
	if c := perturbed.Counts(); c.Decided != 4 || c.Perturbed != 8 || c.PerturbedRuns != 2 || c.Runs != 3 {
		t.Errorf("perturbed: counts %+v", c)
	}
	if err := perturbed.Inconclusive(); err == nil || !strings.Contains(err.Error(), "2 of 3 runs perturbed") {
		t.Errorf("2 of 3 runs perturbed: %v", err)
	}
	perturbed.Thresholds = &gate.Thresholds{MinDecided: 4, MaxPerturbed: 0.7}
	if err := perturbed.Inconclusive(); err != nil {
		t.Errorf("4 decided, 2 of 3 perturbed, within 0.7: %v", err)
	}

	// A class search is measured by all its pairs (the rules claim nothing of a mutant),
	// and one that found its class is conclusive whatever it decided.
	class := Class{ID: "pause-past-ttl"}
	search := newSummary(SearchOptions{Thresholds: th, Class: &class}, Space{})
	search.addRun(p, runner.Report{Plan: p, Result: verdicts(lin.OK)}, &RunRecord{Index: 0}, nil)
	if c := search.Counts(); c.Decided != len(lin.AllProperties()) || search.Inconclusive() != nil || search.OK() {
		t.Errorf("class search: counts %+v, inconclusive %v, ok %v (want decided, not found)", c, search.Inconclusive(), search.OK())
	}
	search.Searched[class.ID] = true
	search.Thresholds = &gate.Thresholds{MinDecided: 100}
	if search.Inconclusive() != nil || !search.OK() {
		t.Errorf("a class search that found its class: %v", search.Inconclusive())
	}
}

// TestViolationsUnderLoad: a perturbed run's violation is neither a finding nor dropped:
// it is a finding under load with the stall, its safe-configuration properties named.
func TestViolationsUnderLoad(t *testing.T) {
	s := newSummary(SearchOptions{}, Space{})
	p := plan.Default()
	p.Impl = "fenced"
	res := verdicts(lin.OK)
	res.Properties[1].Verdict = lin.Illegal // P2
	stall := "the harness stalled for 180ms (redis store)"
	u := s.addPerturbed(p, 7, runner.Report{Plan: p, Result: res, Perturbed: stall}, map[lin.Property]string{lin.P2: "r"}, "runs/00007")
	if u == nil || len(s.UnderLoad) != 1 || s.UnderLoad[0] != u {
		t.Fatalf("under load: %+v", s.UnderLoad)
	}
	if u.Run != 7 || !slices.Equal(u.Illegal, []lin.Property{lin.P2}) || !slices.Equal(u.Safe, []lin.Property{lin.P2}) || u.Stall != stall || u.Dir != "runs/00007" {
		t.Errorf("finding under load %+v", u)
	}
	if s.Findings != 0 || s.SafeViolations != 0 || s.Violations[lin.P2] != 0 || s.Perturbed != 1 || s.PerturbedRuns[0].Error != stall {
		t.Errorf("a perturbed run counted as a violation: %+v", s)
	}
	if s.addPerturbed(p, 8, runner.Report{Plan: p, Result: verdicts(lin.OK), Perturbed: stall}, nil, "runs/00008") != nil || len(s.UnderLoad) != 1 {
		t.Errorf("a perturbed run without a violation is no finding under load")
	}
}
