package main

import (
	"cmp"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/internal/liveline"
	"github.com/locklab/locklab/internal/planflags"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
)

func newSoakCmd() *cobra.Command {
	var (
		out, fencing string
		soakName     string
		checkTimeout time.Duration
		drawEvery    time.Duration
		drawKinds    []string
		soak         runner.Online
		flags        *planflags.Flags
	)
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run a plan for hours or days, checking it as it goes, in flat memory",
		Long: `Soak runs one plan for its duration (hours or days) under a steady load and its
faults, recurring ones too ("every" in a fault: strike again every so long). The history
is never held: it is written into compressed segments of the run directory
(history-NNNNNN.jsonl.gz) and each lock key's operations are cut into windows at instants
where every property can be checked on its own, each window checked while the run goes on.
A window with a violation is written at once into violations/: its history, verdicts,
timeline and a plan that replays the load and faults around it. A status line shows
operations per second, windows checked, the largest window still open, memory and the
violations so far. Ctrl-C or SIGTERM ends the run with everything recorded checked.
locklab check DIR checks the segments again offline, with the same verdicts.

With --draw-faults D the faults are drawn instead, as a campaign draws a plan's: one in
every D, of the kinds --fault-kinds names (default: all the implementation and topology
offer), each at a time in its slot and over, with two TTLs after it, before the next.

Without --plan or --scenario it runs a soak plan (--soak): steady, a correct lock under
faults it must survive (the nightly's), or planted, violations planted by construction
every 5 minutes.

Exit status: 0 no violation, 1 violation found, 2 error, 3 a checker timed out.`,
		Example: `  locklab soak --duration 1h
  locklab soak --impl redsync --duration 72h --out soaks
  locklab soak --impl redsync --topology replicated --duration 1h --draw-faults 30s
  locklab soak --impl fenced --fencing off --fault client-pause:at=1s,duration=2s,target=client:0,point=before-write,until=client:1@after-release,every=30s --duration 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			base, source, err := flags.Base(reg)
			if flags.PlanFile == "" && flags.Scenario == "" {
				base, source = plan.Plan{}, "soak "+soakName
				if base, err = plan.Soak(soakName, reg); err != nil {
					err = fmt.Errorf("flag --soak: %w", err)
				}
			}
			if err != nil {
				return &statusError{exitError, err}
			}
			pl, err := flags.Overlay(cmd.Flags(), base)
			if err != nil {
				return &statusError{exitError, err}
			}
			if cmd.Flags().Changed("fencing") {
				pl = pl.WithFencing(fencing)
			}
			if cmd.Flags().Changed("fault-kinds") && drawEvery == 0 {
				return &statusError{exitError, fmt.Errorf("flag --fault-kinds: only with --draw-faults")}
			}
			if drawEvery != 0 {
				if pl, err = campaign.Schedule(reg, pl, drawKinds, drawEvery, cmp.Or(pl.Seed, 1)); err != nil {
					return &statusError{exitError, fmt.Errorf("flag --draw-faults: %w", err)}
				}
			}
			r, err := pl.Resolve(reg)
			if err != nil {
				return &statusError{exitError, flags.Place(err, cmd.Flags(), source)}
			}
			dir := filepath.Join(out, fmt.Sprintf("%s-%s-fencing-%s", time.Now().Format("20060102-150405"), cmp.Or(pl.Name, "soak"), pl.Fencing))
			line := liveline.New(cmd.ErrOrStderr())
			soak.Progress = soakProgress(line, pl)
			fmt.Fprintf(cmd.ErrOrStderr(), "soaking %s with fencing %s for %s into %s ...\n", cmp.Or(pl.Name, "soak"), pl.Fencing, pl.Duration.D(), dir)
			rep, runErr := runner.Run(cmd.Context(), r, runner.Options{Dir: dir, CheckTimeout: checkTimeout, Online: &soak})
			line.End()
			w := cmd.OutOrStdout()
			if rep.Ops > 0 || runErr == nil {
				fmt.Fprintf(w, "%s: %d operations in %s, %d fault windows\n", dir, rep.Ops, rep.RunTime.Round(time.Second), rep.Faults)
				if st := rep.Online; st != nil {
					fmt.Fprintf(w, "checked in %d windows, the largest %d operations (at most %d operations of a key waited for their window); %d windows with a violation\n",
						st.Windows, st.LargestWindow, st.PeakPending, st.Violations)
				}
				fmt.Fprint(w, rep.Result.String())
				fmt.Fprintf(w, "violations: %s\n", filepath.Join(dir, runner.ViolationsDir))
			}
			if runErr != nil {
				// Cut short (Ctrl-C, SIGTERM) or failed: what was recorded is checked, and a
				// violation found is a violation all the same.
				code := exitError
				if rep.Result.Violation() {
					code = exitViolation
				}
				return &statusError{code, fmt.Errorf("soak: %w; evidence in %s", runErr, dir)}
			}
			return verdictStatus(rep.Result)
		},
	}
	f := cmd.Flags()
	flags = planflags.Register(f)
	f.StringVar(&soakName, "soak", "steady", "soak plan to run without --plan or --scenario: steady or planted")
	f.StringVar(&fencing, "fencing", "", "fencing mode of the store: off, writes, full (default: the plan's)")
	f.StringVar(&out, "out", "out", "directory for the soak's run directory")
	f.IntVar(&soak.SegmentOps, "segment-ops", runner.DefaultSegmentOps, "operations per history segment")
	f.IntVar(&soak.MaxViolations, "max-violations", 100, "violation directories written at most (the rest are counted)")
	f.DurationVar(&drawEvery, "draw-faults", 0, "draw the faults from a campaign's space instead of the plan's: one in every slot of this length, at a time within it (the plan's seed draws them; they are in the run's plan.json)")
	f.StringSliceVar(&drawKinds, "fault-kinds", nil, "fault kinds --draw-faults draws (default: every kind the implementation and topology offer)")
	f.DurationVar(&checkTimeout, "check-timeout", 0, "checker timeout per property of each window (0: default); a timeout is reported as unknown, never as a pass")
	return cmd
}

// soakProgress shows a soak's progress: a status line redrawn on a terminal, a line a
// minute elsewhere, and a line above it for each violation written.
func soakProgress(line *liveline.Line, pl plan.Plan) func(runner.Progress) {
	var lastOps int64
	var last time.Duration
	var lastPlain time.Duration
	written := 0
	return func(p runner.Progress) {
		if p.Written > written {
			written = p.Written
			line.Print(fmt.Sprintf("%s violation: %s", p.Elapsed.Round(time.Second), p.LastWritten))
		}
		live := line.Live()
		if !live && !p.Done && p.Elapsed-lastPlain < time.Minute {
			return
		}
		rate := 0.0 // since the line shown last
		if dt := (p.Elapsed - last).Seconds(); dt > 0 {
			rate = float64(p.Ops-lastOps) / dt
		}
		lastOps, last, lastPlain = p.Ops, p.Elapsed, p.Elapsed
		s := fmt.Sprintf("%s/%s  %d ops (%.0f/s)  %d windows checked  %d queued  largest open window %d ops  resident %d MB  heap %d MB  violations %d",
			p.Elapsed.Round(time.Second), pl.Duration.D(), p.Ops, rate, p.Windows, p.Queued, p.LargestPending, p.Resident>>20, p.Heap>>20, p.Violations)
		if live {
			line.Show(s)
		} else {
			line.Print(s)
		}
	}
}
