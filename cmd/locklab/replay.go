package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
)

func newReplayCmd() *cobra.Command {
	var (
		repeat       int
		out, impl    string
		checkTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "replay PLAN.json|DIR",
		Short: "Re-run a saved plan (e.g. a campaign's failures/NNNNN/plan.json) and say how often it reproduces",
		Long: `Replay runs a plan file (or DIR/plan.json) --repeat times on real Redis, prints each
run's verdicts, and at the end how often a violation reproduced, per property. Real runs
are not perfectly deterministic: a plan that reproduces 2 times in 3 is a real bug.

Exit status: 1 a violation reproduced at least once, 0 never, 2 error.`,
		Example: `  locklab replay out/campaign/failures/00012/plan.json --repeat 5
  locklab replay out/campaign/failures/00012 --out out/replay
  locklab replay docs/track-record/redsync-extend-cleanup-deletes-lock.json --impl redsync@v4.12.1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if repeat < 1 {
				return &statusError{exitError, fmt.Errorf("flag --repeat: want at least 1, got %d", repeat)}
			}
			path := args[0]
			if st, err := os.Stat(path); err == nil && st.IsDir() {
				path = filepath.Join(path, runner.PlanFile)
			}
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			p, err := readPlanAs(path, impl, reg)
			if err != nil {
				return &statusError{exitError, err}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "replaying %s: %s, %d clients, %d keys, ttl %s, fencing %s, %d faults, %d times\n",
				path, p.Impl, p.Clients, p.Keys, p.TTL.D(), p.Fencing, len(p.Faults), repeat)
			stamp := time.Now().Format("20060102-150405")
			perProp := map[linearizability.Property]int{}
			reproduced := 0
			for k := 1; k <= repeat; k++ {
				opts := runner.Options{CheckTimeout: checkTimeout}
				if out != "" {
					opts.Dir = filepath.Join(out, fmt.Sprintf("%s-replay-%d", stamp, k))
				}
				r, err := p.Resolve(reg) // each run its own faults; the file validated above
				if err != nil {
					return &statusError{exitError, fmt.Errorf("%s: %w", path, err)}
				}
				rep, err := runner.Run(cmd.Context(), r, opts)
				if err != nil {
					return &statusError{exitError, fmt.Errorf("replay %d of %s: %w", k, path, err)}
				}
				var cells []string
				for _, pr := range rep.Result.Properties {
					cells = append(cells, fmt.Sprintf("%s %s", pr.Property, report.ShownVerdict(pr.Verdict)))
					if pr.Verdict == linearizability.Illegal {
						perProp[pr.Property]++
					}
				}
				if rep.Result.Violation() {
					reproduced++
				}
				line := fmt.Sprintf("run %d/%d: %s (%d ops)", k, repeat, strings.Join(cells, ", "), rep.Ops)
				if opts.Dir != "" {
					line += " " + opts.Dir
				}
				fmt.Fprintln(w, line)
				report.Explanations(w, "  ", rep.Result)
			}
			var parts []string
			for _, prop := range linearizability.AllProperties() {
				parts = append(parts, fmt.Sprintf("%s %d/%d", prop, perProp[prop], repeat))
			}
			fmt.Fprintf(w, "reproduced %d/%d (%s)\n", reproduced, repeat, strings.Join(parts, ", "))
			if reproduced > 0 {
				return &statusError{code: exitViolation}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&repeat, "repeat", 3, "how many times to run the plan")
	cmd.Flags().StringVar(&impl, "impl", "", "run this implementation (NAME or NAME@VERSION) instead of the plan's")
	cmd.Flags().StringVar(&out, "out", "", "write each run's directory under this directory (default: none)")
	cmd.Flags().DurationVar(&checkTimeout, "check-timeout", 0, "checker timeout per property (0: default)")
	return cmd
}

// readPlanAs reads the plan at path for implementation impl (the plan's own when ""):
// the plan is read as written, then checked with the implementation it runs, so that
// one plan runs against another lock or release (redsync@v4.12.1 for a plan pinned to
// redsync@v4.12.0).
func readPlanAs(path, impl string, reg *lockimpl.Registry) (plan.Plan, error) {
	if impl == "" {
		return plan.Read(path, reg)
	}
	p, err := plan.Read(path, nil)
	if err != nil {
		return p, err
	}
	p.Impl = impl
	if err := p.Validate(reg); err != nil {
		return p, fmt.Errorf("flag --impl %q with plan %s: %w", impl, path, err)
	}
	return p, nil
}
