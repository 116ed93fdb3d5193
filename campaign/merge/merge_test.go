package merge

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/internal/gate"
	lin "github.com/locklab/locklab/linearizability"
)

// shard is a shard's summary as a campaign writes it: a safe-configuration violation and
// a finding among 3 runs, an error, 2 perturbed runs of which underLoad violated P2.
func shard(i, n, underLoad int) *campaign.Summary {
	run := func(k int) string { return fmt.Sprintf("runs/%05d", k) }
	s := &campaign.Summary{
		Seed: 9, Shard: fmt.Sprintf("%d/%d", i, n), Runs: 3, Errors: 1, SafeViolations: 1, Findings: 1, Perturbed: 2,
		Violations:     map[lin.Property]int{lin.P1: 2, lin.P2: 1},
		FirstViolation: map[lin.Property]campaign.First{lin.P1: {Run: i, Runs: 1, Plan: run(i) + "/plan.json"}},
		Claims:         map[string]campaign.ClaimCount{"fenced": {Held: 3, Violated: 1, Perturbed: 4}},
		Pairs:          campaign.ClaimCount{Held: 8, Violated: 3, Undecided: 1, Perturbed: 8},
		Failures: []*campaign.Failure{
			{Run: i, Impl: "fenced", Illegal: []lin.Property{lin.P1, lin.P2}, Safe: []lin.Property{lin.P2}, Dir: run(i), Plan: run(i) + "/plan.json", Saved: "failures/x/plan.json"},
			{Run: i + n, Impl: "setnx", Illegal: []lin.Property{lin.P1}, Dir: run(i + n), Plan: run(i+n) + "/plan.json"},
		},
		PerturbedRuns: []*campaign.RunError{{Run: i + 3*n, Dir: run(i + 3*n), Error: "the harness stalled for 180ms"}},
	}
	for k := range underLoad {
		s.UnderLoad = append(s.UnderLoad, &campaign.UnderLoad{Run: i + (4+k)*n, Impl: "fenced", Illegal: []lin.Property{lin.P2},
			Dir: run(i + (4+k)*n), Plan: run(i+(4+k)*n) + "/plan.json", Stall: "the harness stalled for 150ms (redis lock-0)"})
	}
	return s
}

// TestMergeShards: merged counts add up, first violations are the earliest, paths point
// into the shards' directories from the merged one, and every finding under load is
// kept, more than a summary lists of perturbed runs.
func TestMergeShards(t *testing.T) {
	a, b := shard(0, 2, campaign.MaxRunErrors), shard(1, 2, 1)
	m := Merge("out/all", []string{"out/s0", "out/s1"}, []*campaign.Summary{a, b})
	if m.Runs != 6 || m.Errors != 2 || m.SafeViolations != 2 || m.Findings != 2 || m.Violations[lin.P1] != 4 || len(m.Failures) != 4 || len(m.Shards) != 2 {
		t.Fatalf("merged: %+v", m)
	}
	if f := m.FirstViolation[lin.P1]; f.Run != 0 || f.Plan != "../s0/runs/00000/plan.json" {
		t.Errorf("first P1: %+v", f)
	}
	for _, f := range m.Failures {
		if !strings.HasPrefix(f.Dir, "../s") || (f.Saved != "" && !strings.HasPrefix(f.Saved, "../s")) {
			t.Errorf("path not rewritten: %+v", f)
		}
	}
	if m.Pairs != (campaign.ClaimCount{Held: 16, Violated: 6, Undecided: 2, Perturbed: 16}) || m.Claims["fenced"] != (campaign.ClaimCount{Held: 6, Violated: 2, Perturbed: 8}) {
		t.Errorf("pairs %+v, claims %+v", m.Pairs, m.Claims)
	}
	if len(m.UnderLoad) != campaign.MaxRunErrors+1 || m.Perturbed != 4 {
		t.Fatalf("%d findings under load of %d perturbed runs, want %d of 4", len(m.UnderLoad), m.Perturbed, campaign.MaxRunErrors+1)
	}
	for _, u := range m.UnderLoad {
		if !strings.HasPrefix(u.Dir, "../s") || !strings.HasPrefix(u.Plan, "../s") || u.Stall == "" {
			t.Errorf("finding under load: %+v", u)
		}
	}
}

// TestMergedThresholds: the rule is applied to the merged counts. Two shards that each
// decided too few claimed pairs decide enough together; two whose runs were mostly
// perturbed stay inconclusive; a safe-configuration violation is a failure, not
// inconclusive.
func TestMergedThresholds(t *testing.T) {
	part := func(held, runs, perturbed int) *campaign.Summary {
		return &campaign.Summary{Runs: runs, Perturbed: perturbed, Claims: map[string]campaign.ClaimCount{"fenced": {Held: held}}}
	}
	th := &gate.Thresholds{MinDecided: 6, MaxPerturbed: 0.5}
	for _, c := range []struct {
		name  string
		parts []*campaign.Summary
		want  string // "" conclusive
	}{
		{"each too few, enough together", []*campaign.Summary{part(4, 1, 0), part(4, 1, 0)}, ""},
		{"too few together", []*campaign.Summary{part(2, 1, 0), part(3, 1, 0)}, "5 claimed pairs decided"},
		{"mostly perturbed", []*campaign.Summary{part(8, 2, 1), part(0, 0, 3)}, "4 of 6 runs perturbed"},
	} {
		for _, p := range c.parts {
			p.Thresholds = &gate.Thresholds{MinDecided: 1000} // the parts' own thresholds do not judge the merge
		}
		m := Merge("out", []string{"a", "b"}, c.parts)
		if err := m.Inconclusive(); err != nil {
			t.Errorf("%s: a merge without thresholds is inconclusive: %v", c.name, err)
		}
		m.Thresholds = th
		err := m.Inconclusive()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	m := Merge("out", []string{"a"}, []*campaign.Summary{{SafeViolations: 1}})
	m.Thresholds = th
	if m.Inconclusive() != nil || m.OK() {
		t.Errorf("a safe-configuration violation: inconclusive %v, ok %v", m.Inconclusive(), m.OK())
	}
}

// TestMergeClasses: a merge of a class search that found its class with one that did
// not still fails for the missing one; a summary written before Searched existed still
// says which class it looked for.
func TestMergeClasses(t *testing.T) {
	found := &campaign.Summary{Class: "pause-past-ttl", Detected: true, Searched: map[string]bool{"pause-past-ttl": true}}
	missed := &campaign.Summary{Class: "slow-write", Searched: map[string]bool{"slow-write": false}}
	m := Merge("out", []string{"a", "b"}, []*campaign.Summary{found, missed})
	if m.OK() || !slices.Equal(m.Missed(), []string{"slow-write"}) || !m.Searched["pause-past-ttl"] {
		t.Errorf("merged: ok %v, missed %v, searched %v; want slow-write missed", m.OK(), m.Missed(), m.Searched)
	}
	old := &campaign.Summary{Class: "no-expiry"}
	if m := Merge("out", []string{"c"}, []*campaign.Summary{old}); m.OK() || !slices.Equal(m.Missed(), []string{"no-expiry"}) {
		t.Errorf("merged old summary: ok %v, missed %v", m.OK(), m.Missed())
	}
}
