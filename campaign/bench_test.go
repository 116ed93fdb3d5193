package campaign

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/plan"
)

// Plan throughput as BenchmarkPlanThroughput measures it: a campaign of benchPlans plans
// of an in-process lock at a 100 ms TTL, under every fault kind.
const (
	benchPlans = 30 // enough that the last plans' checks are a small part of the time
	benchTTL   = 100 * time.Millisecond
	benchImpl  = "fenced"
)

// BenchmarkPlanThroughput runs the campaign `locklab campaign --impl fenced --ttl 100ms
// --max-runs 30 --confirm 0 --seed 1` does, at --parallel 1, 2 and 4 (the same plans each
// time), and reports generated plans run and checked per minute as the campaign counts
// them (perturbed runs left out), and the perturbed runs. Confirmation and shrinking are
// off: they re-run plans rather than run new ones. Each run starts its servers afresh.
func BenchmarkPlanThroughput(b *testing.B) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		b.Skip("redis-server not installed")
	}
	// go-redis logs Sentinel's switches and failed dials, which faults cause on purpose.
	redis.SetLogger(quietLogger{})
	for _, parallel := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("parallel-%d", parallel), func(b *testing.B) {
			var plans, perturbed int
			var elapsed time.Duration
			for b.Loop() {
				sum := benchCampaign(b, parallel)
				plans += sum.Runs + sum.Errors
				perturbed += sum.Perturbed
				elapsed += sum.Elapsed.D()
			}
			b.ReportMetric(float64(plans)/elapsed.Minutes(), "plans/min")
			b.ReportMetric(float64(perturbed)/float64(b.N), "perturbed/op")
		})
	}
}

// benchCampaign runs one campaign of the benchmark and fails b on a setup error or a run
// that could not run.
func benchCampaign(b *testing.B, parallel int) *Summary {
	b.Helper()
	sum, err := Search(context.Background(), SearchOptions{
		Space: Space{Impls: []string{benchImpl}, TTL: plan.D(benchTTL)},
		Seed:  1, MaxRuns: benchPlans, Parallel: parallel, Confirm: -1, Out: b.TempDir(),
	})
	if err != nil {
		b.Fatal(err)
	}
	if sum.Errors > 0 {
		b.Fatalf("%d of %d plans failed to run: %+v", sum.Errors, benchPlans, sum.RunErrors)
	}
	return sum
}

// quietLogger drops go-redis's log lines, as the CLI does.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
