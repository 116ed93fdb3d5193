package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/jobsbench"
)

// JobsBenchMarkdown is the double-processing experiment's table: the published numbers
// beside the measured ones, with the command that produced them.
func JobsBenchMarkdown(r jobsbench.Result, command string) string {
	o := r.Options
	nl, wl := r.NoLock, r.WithLock
	var b strings.Builder
	fmt.Fprintf(&b, "Produced by `%s` on %s: %d workers, %g jobs a minute for %s per phase, work %s, visibility timeout %s, lock %s (TTL %s, on taken: %s), latency %s ± %s on every worker's link to the queue.\n\n",
		command, r.Started.Format(time.RFC3339), o.Workers, o.PerMinute, o.Duration, o.Work, o.Visibility, o.Impl, o.TTL, o.OnTaken, o.Latency, o.Jitter)
	b.WriteString("| measure | published | locklab |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| jobs executed twice or more, no lock | 11.7 %% | %.1f %% (%d of %d jobs run) |\n", nl.DuplicatePercent(), nl.Duplicated, nl.Ran)
	fmt.Fprintf(&b, "| duplicates with a lock (%s, TTL %s) | 0 in 72 h | %d jobs of %d (%.1f %%) in %s |\n", o.Impl, o.TTL, wl.Duplicated, wl.Ran, wl.DuplicatePercent(), o.Duration)
	fmt.Fprintf(&b, "| jobs lost (enqueued, never run), no lock → with lock | not reported | %d of %d → %d of %d |\n", nl.Lost, nl.Enqueued, wl.Lost, wl.Enqueued)
	fmt.Fprintf(&b, "| lock acquire latency | P50 0.6 ms, P99 2.1 ms | P50 %s, P99 %s (%d granted, %d refused) |\n", ms(wl.AcquireP50), ms(wl.AcquireP99), wl.Granted, wl.Refused)
	fmt.Fprintf(&b, "| throughput without → with lock | 1,200 → 1,180 jobs/min (−1.6 %%) | %.0f → %.0f jobs/min (%+.1f %%) |\n", nl.PerMinute, wl.PerMinute, 100*(r.ThroughputRatio()-1))
	if s := r.SameKey; s != nil {
		fmt.Fprintf(&b, "| check: %d workers, %d jobs with the same key | 1 runs, 99 report `skipped` | %d runs, %d report `skipped`, %d lost |\n", s.Plan.Clients, s.Enqueued, s.Effects, s.Skipped, s.Lost)
	}
	var notes []string
	for _, p := range []*jobsbench.Phase{&r.NoLock, &r.WithLock, r.SameKey} {
		if p == nil {
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: %d re-deliveries, %d skipped, plan `%s/plan.json`", p.Name, p.Redelivers, p.Skipped, p.Dir))
		if p.Perturbed != "" {
			notes = append(notes, fmt.Sprintf("%s: **the harness itself stalled** (%s): its numbers say more about this machine than about the lock", p.Name, p.Perturbed))
		}
	}
	b.WriteString("\n" + strings.Join(notes, "; ") + ".\n")
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
