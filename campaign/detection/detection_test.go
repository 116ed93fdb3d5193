package detection

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/campaign/expect"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/internal/gate"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// TestDetectionCountsConfirmedDetectionsAndClaimedPairs: a class search finds the
// check-then-set mutant with a confirmed detection, and the false alarms of setnx are
// measured over at least the asked number of claimed (plan, property) pairs.
func TestDetectionCountsConfirmedDetectionsAndClaimedPairs(t *testing.T) {
	clustertest.Backend(t) // skips with the reason when redis-server is missing
	// The class search stops at its first confirmed detection: idle within a few plans;
	// on a loaded machine most runs come out perturbed and count for nothing, so it may
	// take many more (10 of 12 were, beside two CPU burners and a detection run).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Registry: locks.All(), Classes: []string{"check-then-set"}, Seeds: 1, MaxRuns: 60,
		ClaimedPairs: 12, Impls: []string{"setnx"}, Parallel: 2, Out: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0].Found != 1 || len(res.Rows[0].Times) != 1 {
		t.Fatalf("rows %+v: want check-then-set found and confirmed by its one seed", res.Rows)
	}
	if len(res.FalseAlarms) != 1 {
		t.Fatalf("false alarms %+v: want setnx's alone", res.FalseAlarms)
	}
	fa := res.FalseAlarms[0]
	if fa.Impl != "setnx" || fa.Claims.Decided() < 12 || fa.Claims.Violated != 0 || fa.Plans == 0 {
		t.Errorf("setnx: %+v; want at least 12 claimed pairs decided and no false alarm", fa)
	}
	// setnx grants no fences: P3 has nothing to check, so a plan decides at most 3 pairs.
	if fa.Claims.Decided()+fa.Claims.Undecided > 3*fa.Plans {
		t.Errorf("setnx: %d pairs from %d plans", fa.Claims.Decided()+fa.Claims.Undecided, fa.Plans)
	}
}

// TestFamiliesClaimWhatTheyCount: every family names rules that exist, and the plans its
// space draws (no server needed) give its rules claims often enough to count them.
func TestFamiliesClaimWhatTheyCount(t *testing.T) {
	reg := locks.All()
	rules := map[string]bool{}
	for _, r := range expect.Rules() {
		rules[r.Name] = true
	}
	for _, f := range Families() {
		for _, r := range f.Rules {
			if !rules[r] {
				t.Errorf("family %s: no rule %s in campaign/expect", f.Name, r)
			}
		}
		gen, err := campaign.PlanGen(reg, f.Space)
		if err != nil {
			t.Fatalf("family %s: %v", f.Name, err)
		}
		const n = 200
		withClaims := 0
		for i := range n {
			p := campaign.PlanAt(gen, 1, i)
			impl, _ := reg.Get(p.Impl)
			for _, c := range expect.Claims(p, impl) {
				if slices.Contains(f.Rules, c.Rule) {
					withClaims++
					break
				}
			}
		}
		t.Logf("family %s: %d of %d plans drawn have a claim of its rules", f.Name, withClaims, n)
		if withClaims < n/10 {
			t.Errorf("family %s: only %d of %d plans drawn have a claim of its rules", f.Name, withClaims, n)
		}
	}
	if all, err := FamilyNames([]string{"all"}); err != nil || len(all) != len(Families()) {
		t.Errorf("FamilyNames(all): %v, %v", all, err)
	}
	if _, err := FamilyNames([]string{"renewal", "no-such-family"}); err == nil || !strings.Contains(err.Error(), "fencing-full") {
		t.Errorf("FamilyByName of an unknown name: %v, want an error listing the families", err)
	}
}

// TestClaimedCountsTheFamilysRulesOnly: a run's pairs count for a family only where its
// rules claim them, once per property, n/a never; Shortfalls adds faulted false alarms.
func TestClaimedCountsTheFamilysRulesOnly(t *testing.T) {
	reg := locks.All()
	p := plan.Default()
	p.Impl, p.Fencing = "fenced", "full"
	p.Faults = []plan.FaultSpec{{Kind: "client-pause", Target: "client:0", Point: "before-write", Duration: plan.D(time.Second)}}
	r := lin.Result{Properties: []lin.PropertyResult{
		{Property: lin.P1, Verdict: lin.Illegal}, {Property: lin.P2, Verdict: lin.OK},
		{Property: lin.P3, Verdict: lin.Illegal}, {Property: lin.L1, Verdict: lin.Unknown},
	}}
	if got := claimed(reg, p, r, []string{"full-fencing-single-server"}); got != (campaign.ClaimCount{Held: 1}) {
		t.Errorf("fencing-full's rule: %+v, want P2 held alone", got)
	}
	// Any rule: P2 (full fencing), P3 (fences), L1 (progress); P1 is claimed by none.
	if got := claimed(reg, p, r, nil); got != (campaign.ClaimCount{Held: 1, Violated: 1, Undecided: 1}) {
		t.Errorf("any rule: %+v, want P2 held, P3 violated, L1 undecided", got)
	}
	res := Result{Faulted: []FamilyAlarms{{Family: "renewal", Claims: campaign.ClaimCount{Violated: 2}}}, FalseAlarms: []FalseAlarms{{Claims: campaign.ClaimCount{Violated: 1}}}}
	if missed, alarms := res.Missed(), res.Alarms(); len(missed) != 0 || alarms != 3 {
		t.Errorf("Missed, Alarms: %v, %d; want none missed, 3 alarms", missed, alarms)
	}
}

// TestResultCounts: the benchmark's decided pairs add its class searches' pairs and its
// false-alarm campaigns' claimed pairs, perturbed plans counted apart; Missed and Alarms
// say what fails it.
func TestResultCounts(t *testing.T) {
	r := Result{
		Rows: []Row{
			{Class: "pause-past-ttl", Seeds: 2, Found: 2, Runs: 5, Perturbed: 1, Pairs: campaign.ClaimCount{Held: 10, Violated: 2, Undecided: 1, Perturbed: 4}},
			{Class: "slow-write", Seeds: 2, Found: 1, Runs: 3, Pairs: campaign.ClaimCount{Held: 6, Undecided: 6}},
		},
		FalseAlarms: []FalseAlarms{{Impl: "setnx", Plans: 4, Perturbed: 4, Claims: campaign.ClaimCount{Held: 8, Violated: 1, Perturbed: 16}}},
	}
	want := gate.Counts{Decided: 27, Undecided: 7, Perturbed: 20, Runs: 17, PerturbedRuns: 5}
	if got := r.Decided(); got != want {
		t.Errorf("decided %+v, want %+v", got, want)
	}
	if got := r.Missed(); len(got) != 1 || got[0] != "slow-write (1/2)" {
		t.Errorf("missed %v", got)
	}
	if r.Alarms() != 1 {
		t.Errorf("alarms %d, want 1", r.Alarms())
	}
	// Too little decided, or too many plans perturbed, makes it inconclusive.
	if err := (gate.Thresholds{MinDecided: 28, MaxPerturbed: 1}).Check(r.Decided(), "pairs"); err == nil {
		t.Errorf("27 pairs decided passed --min-decided 28")
	}
	if err := (gate.Thresholds{MinDecided: 1, MaxPerturbed: 0.25}).Check(r.Decided(), "pairs"); err == nil {
		t.Errorf("5 of 17 plans perturbed passed --max-perturbed 0.25")
	}
}
