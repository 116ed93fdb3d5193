package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/jobsbench"
)

// jobsGroupRow is the bold row that opens a row group of the jobs table: title (aside).
const jobsGroupRow = "| **%s** (%s) | | |\n"

// JobsBenchMarkdown is the double-processing experiment's table: a row group per regime
// of the re-delivery and per fix, the published numbers beside the measured ones where the
// write-up has them, and the command that produced them.
func JobsBenchMarkdown(r jobsbench.Result, command string) string {
	o := r.Options
	held, rel := r.Held, r.Released
	var b strings.Builder
	fmt.Fprintf(&b, "Produced by `%s` on %s: %d workers, %g jobs a minute for %s per phase, work %s, visibility timeout %s, lock %s (TTL %s, on taken: %s), latency %s ± %s on every worker's link to the queue. ",
		command, r.Started.Format(time.RFC3339), o.Workers, o.PerMinute, o.Duration, o.Work, o.Visibility, o.Impl, o.TTL, o.OnTaken, o.Latency, o.Jitter)
	fmt.Fprintf(&b, "In %g %% of the jobs the first run stalls until the queue has re-delivered the job, then %s more, and %g %% of those runs then fail without acknowledging it; the stall falls in the job, its lock held (held), or between the release and the acknowledgement (released).\n\n",
		100*o.StallRate, o.StallAfter, 100*o.StallFail)
	b.WriteString("| measure | published | locklab |\n|---|---|---|\n")
	lock := fmt.Sprintf("%s, TTL %s", o.Impl, o.TTL)

	fmt.Fprintf(&b, jobsGroupRow, "re-delivered while the first run holds the lock", "the write-up's case")
	fmt.Fprintf(&b, "| jobs executed twice or more, no lock | 11.7 %% | %s |\n", jobsTwice(held.NoLock))
	fmt.Fprintf(&b, "| duplicates with a lock (%s) | 0 in 72 h | %s in %s; %d re-deliveries skipped |\n", lock, jobsDups(held.WithLock), o.Duration, held.WithLock.Skipped)
	fmt.Fprintf(&b, "| jobs lost with the lock: the re-delivery skipped, then the first run failed | not reported | %s (%d stalled runs failed; no lock: %s) |\n",
		jobsLost(held.WithLock), held.WithLock.Failed, jobsLost(held.NoLock))

	fmt.Fprintf(&b, jobsGroupRow, "re-delivered after the first run released the lock", "a late acknowledgement")
	fmt.Fprintf(&b, "| jobs executed twice or more, no lock | – | %s |\n", jobsTwice(rel.NoLock))
	fmt.Fprintf(&b, "| duplicates with a lock (%s) | – | %s in %s; %d re-deliveries skipped |\n", lock, jobsDups(rel.WithLock), o.Duration, rel.WithLock.Skipped)
	fmt.Fprintf(&b, "| jobs lost with the lock | – | %s |\n", jobsLost(rel.WithLock))

	fmt.Fprintf(&b, jobsGroupRow, "fix: an idempotency record written with the side effect", "no lock")
	fmt.Fprintf(&b, "| side effects twice or more, held → released | – | %s → %s (%d → %d second side effects refused) |\n",
		jobsDups(held.Idempotent), jobsDups(rel.Idempotent), held.Idempotent.Done, rel.Idempotent.Done)
	fmt.Fprintf(&b, "| jobs lost, held → released | – | %s → %s |\n", jobsLost(held.Idempotent), jobsLost(rel.Idempotent))

	fmt.Fprintf(&b, jobsGroupRow, "fix: the lock held until the acknowledgement", lock)
	fmt.Fprintf(&b, "| jobs executed twice or more, held → released | – | %s → %s (%d → %d re-deliveries skipped) |\n",
		jobsDups(held.UntilAck), jobsDups(rel.UntilAck), held.UntilAck.Skipped, rel.UntilAck.Skipped)
	fmt.Fprintf(&b, "| jobs lost, held → released | – | %s → %s |\n", jobsLost(held.UntilAck), jobsLost(rel.UntilAck))

	fmt.Fprintf(&b, jobsGroupRow, "what the lock costs", "released, where every run takes the lock; the workers carry the stalls too")
	nl, wl := rel.NoLock, rel.WithLock
	fmt.Fprintf(&b, "| lock acquire latency | P50 0.6 ms, P99 2.1 ms | P50 %s, P99 %s (%d granted, %d refused) |\n", ms(wl.AcquireP50), ms(wl.AcquireP99), wl.Granted, wl.Refused)
	fmt.Fprintf(&b, "| throughput without → with lock | 1,200 → 1,180 jobs/min (−1.6 %%) | %.0f → %.0f jobs/min (%+.1f %%) |\n", nl.PerMinute, wl.PerMinute, 100*(r.ThroughputRatio()-1))
	if s := r.SameKey; s != nil {
		fmt.Fprintf(&b, "| check: %d workers, %d jobs with the same key | 1 runs, 99 report `skipped` | %d runs, %d report `skipped`, %d lost |\n", s.Plan.Clients, s.Enqueued, s.Effects, s.Skipped, s.Lost)
	}

	var notes []string
	for _, p := range []*jobsbench.Phase{&held.NoLock, &held.WithLock, &held.Idempotent, &held.UntilAck,
		&rel.NoLock, &rel.WithLock, &rel.Idempotent, &rel.UntilAck, r.SameKey} {
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

// jobsTwice is a phase's jobs run twice or more, as a share of the jobs run; jobsDups the
// same counted first; jobsLost its jobs enqueued and never run.
func jobsTwice(p jobsbench.Phase) string {
	return fmt.Sprintf("%.1f %% (%d of %d jobs run)", p.DuplicatePercent(), p.Duplicated, p.Ran)
}
func jobsDups(p jobsbench.Phase) string {
	return fmt.Sprintf("%d jobs of %d (%.1f %%)", p.Duplicated, p.Ran, p.DuplicatePercent())
}
func jobsLost(p jobsbench.Phase) string { return fmt.Sprintf("%d of %d", p.Lost, p.Enqueued) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
