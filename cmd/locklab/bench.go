package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/internal/cmdline"
	"github.com/locklab/locklab/internal/jsonfile"
	"github.com/locklab/locklab/internal/mdblock"
	"github.com/locklab/locklab/jobsbench"
	"github.com/locklab/locklab/report"
)

// The lines of a Markdown file between which `locklab bench jobs --markdown` puts the table.
const jobsBegin, jobsEnd = "<!-- bench-jobs:begin -->", "<!-- bench-jobs:end -->"

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Experiments that measure a workload on real servers",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchJobsCmd())
	return cmd
}

func newBenchJobsCmd() *cobra.Command {
	o := jobsbench.Defaults()
	var markdown string
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "The double-processing experiment: a job queue whose jobs are re-delivered while their lock is held and after its release, without and with a lock and with the two fixes",
		Long: `Jobs runs a Redis job queue (BLMOVE workers, a reaper that re-delivers a job past its
visibility timeout, a ledger of side effects) where --stall-rate of the jobs' first runs
stall until re-delivered, in two regimes: held (the stall in the job, its lock held: the
write-up's case) and released (after the release, before the ack). Each runs without a
lock, with --impl, with an idempotency record instead and with the lock held until the
ack; then the same-key check. Every phase is a plan (plan.json under --out, replayable
with locklab run --plan) streamed into counters and ledger.jsonl, in constant memory.
--markdown FILE puts the table between ` + jobsBegin + ` and ` + jobsEnd + ` in FILE.
Exit status: 0 the experiment ran (duplicates are its findings), 2 an error or an interruption.`,
		Example: `  locklab bench jobs
  locklab bench jobs --duration 10m --impl setnx --on-taken retry --stall-fail 0
  locklab bench jobs --duration 72h --out out/soak`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if markdown != "" {
				if err := mdblock.Check(markdown, jobsBegin, jobsEnd); err != nil {
					return &statusError{exitError, fmt.Errorf("flag --markdown: %w", err)}
				}
			}
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			o.Registry = reg
			if _, err := o.Registry.Get(o.Impl); err != nil {
				return &statusError{exitError, fmt.Errorf("flag --impl: %w", err)}
			}
			if err := o.Validate(); err != nil {
				return &statusError{exitError, fmt.Errorf("flag --%w", err)}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w := cmd.ErrOrStderr()
			o.Progress = func(line string) { fmt.Fprintln(w, line) }
			res, err := jobsbench.Run(ctx, o)
			if err != nil {
				if errors.Is(err, context.Canceled) || ctx.Err() != nil {
					return &statusError{exitError, fmt.Errorf("interrupted: %w", err)}
				}
				return &statusError{exitError, err}
			}
			md := report.JobsBenchMarkdown(res, cmdline.Of(cmd))
			if err := jsonfile.Write(filepath.Join(o.Out, "bench-jobs.json"), res); err != nil {
				return &statusError{exitError, err}
			}
			if err := os.WriteFile(filepath.Join(o.Out, "bench-jobs.md"), []byte(md), 0o644); err != nil {
				return &statusError{exitError, err}
			}
			fmt.Fprint(cmd.OutOrStdout(), md)
			if markdown != "" {
				if err := mdblock.Update(markdown, md, jobsBegin, jobsEnd); err != nil {
					return &statusError{exitError, err}
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Impl, "impl", o.Impl, "the per-job lock (see locklab list)")
	f.IntVar(&o.Workers, "workers", o.Workers, "concurrent workers")
	f.Float64Var(&o.PerMinute, "rate", o.PerMinute, "jobs enqueued per minute")
	f.DurationVar(&o.Duration, "duration", o.Duration, "how long jobs are enqueued, per phase (eight phases and the same-key check)")
	f.DurationVar(&o.Work, "work", o.Work, "each job's processing time (jittered ±50%)")
	f.DurationVar(&o.TTL, "ttl", o.TTL, "the lock's lease")
	f.DurationVar(&o.Visibility, "visibility", o.Visibility, "a job not acknowledged within it is re-delivered")
	f.DurationVar(&o.Latency, "latency", o.Latency, "network latency added to each worker's link to the queue, both ways")
	f.DurationVar(&o.Jitter, "jitter", o.Jitter, "± around --latency (network jitter)")
	f.StringVar(&o.OnTaken, "on-taken", o.OnTaken, "a job whose lock is taken: drop (acknowledge it, as the write-up's withLock) or retry (the reaper re-delivers it)")
	f.Float64Var(&o.StallRate, "stall-rate", o.StallRate, "share (0-1) of the jobs whose first run stalls past the visibility timeout (in the job: held; before the ack: released)")
	f.DurationVar(&o.StallAfter, "stall-after", o.StallAfter, "how long a stalled run stalls on after the queue re-delivered its job")
	f.Float64Var(&o.StallFail, "stall-fail", o.StallFail, "share (0-1) of the stalled runs that then fail, never acknowledging the job")
	f.IntVar(&o.SameKey, "same-key", o.SameKey, "jobs of the same-key check, pushed at once with one lock key (0: skip the check)")
	f.Int64Var(&o.Seed, "seed", o.Seed, "seed of the plans")
	f.StringVar(&o.Out, "out", o.Out, "output directory")
	f.StringVar(&markdown, "markdown", "", "Markdown file whose table between "+jobsBegin+" and "+jobsEnd+" is replaced")
	return cmd
}
