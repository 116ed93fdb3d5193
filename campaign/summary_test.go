package campaign

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestMergeShards: merged counts add up, first violations are the earliest, and paths
// point into the shards' directories from the merged one.
func TestMergeShards(t *testing.T) {
	a, b := sampleSummary(t, Shard{0, 2}), sampleSummary(t, Shard{1, 2})
	m := Merge("out/all", []string{"out/s0", "out/s1"}, []*Summary{a, b})
	if m.Runs != 6 || m.Errors != 2 || m.SafeViolations != 2 || m.Findings != 2 || m.Violations[lin.P1] != 4 || len(m.Failures) != 4 || len(m.Shards) != 2 {
		t.Fatalf("merged: %+v", m)
	}
	if f := m.FirstViolation[lin.P1]; f.Run != 0 || f.Plan != "../s0/runs/00000/plan.json" {
		t.Errorf("first P1: %+v", f)
	}
	for _, f := range m.Failures {
		if !strings.HasPrefix(f.Saved, "../s") || !strings.HasPrefix(f.Dir, "../s") {
			t.Errorf("path not rewritten: %+v", f)
		}
	}
}

// TestOnlyConfirmedDetectionsCount: a run that detects a class is a candidate; the class
// is found only once a re-run confirms it, and a merge of a class search that found its
// class with one that did not still fails for the missing one.
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

	other := Class{ID: "slow-write"}
	missed := newSummary(SearchOptions{Seed: 1, Class: &other}, Space{})
	m := Merge("out", []string{"a", "b"}, []*Summary{s, missed})
	if m.OK() || !slices.Equal(m.Missed(), []string{"slow-write"}) || !m.Searched["pause-past-ttl"] {
		t.Errorf("merged: ok %v, missed %v, searched %v; want slow-write missed", m.OK(), m.Missed(), m.Searched)
	}
	// A summary written before Searched existed still says which class it looked for.
	old := &Summary{Class: "no-expiry"}
	if m := Merge("out", []string{"c"}, []*Summary{old}); m.OK() || !slices.Equal(m.Missed(), []string{"no-expiry"}) {
		t.Errorf("merged old summary: ok %v, missed %v", m.OK(), m.Missed())
	}
}
