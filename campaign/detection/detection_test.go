package detection

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
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
