package detection

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/internal/gate"
	"github.com/locklab/locklab/locks"
)

// TestDetectionCountsConfirmedDetectionsAndClaimedPairs: a class search finds the
// check-then-set mutant with a confirmed detection, and the false alarms of setnx are
// measured over at least the asked number of claimed (plan, property) pairs.
func TestDetectionCountsConfirmedDetectionsAndClaimedPairs(t *testing.T) {
	clustertest.Backend(t) // skips with the reason when redis-server is missing
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Registry: locks.All(), Classes: []string{"check-then-set"}, Seeds: 1, MaxRuns: 12,
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
