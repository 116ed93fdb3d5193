package main

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/internal/planflags"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
)

func newRunCmd() *cobra.Command {
	var (
		fencing          []string
		out              string
		checkTimeout     time.Duration
		external         externalFlags
		allowDestructive bool
		flags            *planflags.Flags
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a plan (from flags, a plan file or a catalog scenario) on real Redis and check it",
		Long: `Run starts the servers, runs the clients and faults, records every operation, checks
the history (P1 mutual exclusion, P2 resource safety, P3 fence monotonicity, L1 progress;
with workload "jobs" also P4 at most once and P5 at least once)
and writes a run directory per fencing mode. Flags override the plan file or scenario.

Exit status: 0 no violation, 1 violation found, 2 error, 3 a checker timed out.`,
		Example: `  locklab run --scenario pause-past-ttl --fencing off,full
  locklab run --impl fenced --clients 4 --ttl 300ms --fault client-pause:at=0s,duration=1s,target=client:0
  locklab run --plan my-plan.json --out runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			var scrub *access.Scrubber // the secrets known: none reaches a message
			defer func() { err = scrubError(err, scrub) }()
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			base, source, err := flags.Base(reg)
			if err != nil {
				return &statusError{exitError, err}
			}
			// Without --topology, --impl plays the plan where the matrix would; a --topology it
			// cannot run on stays an error naming the flag, and external servers stay as given.
			var move *plan.TopologyMove
			if fs := cmd.Flags(); fs.Changed("impl") && !fs.Changed("topology") && !fs.Changed("external-lock") && base.External == nil {
				base, move = base.OnImpl(reg, flags.P.Impl)
			}
			pl, err := flags.Overlay(cmd.Flags(), base)
			if err != nil {
				return &statusError{exitError, err}
			}
			// The external servers before the plan is resolved: the plan records them.
			backend, scrub, err := externalBackend(cmd.Flags(), &pl, external, source)
			if err != nil {
				return &statusError{exitError, err}
			}
			if len(fencing) == 0 {
				fencing = []string{pl.Fencing}
			}
			plans := make([]*plan.Resolved, len(fencing))
			for i, mode := range fencing {
				if plans[i], err = pl.WithFencing(strings.TrimSpace(mode)).Resolve(reg); err != nil {
					return &statusError{exitError, flags.Place(err, cmd.Flags(), source)}
				}
			}
			if move != nil { // the first line says where the plan's topology came from
				whose := cmp.Or(map[string]string{"defaults": "the default"}[source], strings.TrimPrefix(source, "scenario ")+"'s")
				fmt.Fprintln(cmd.ErrOrStderr(), move.Header(whose, pl.Impl))
			}
			opts := runner.Options{CheckTimeout: checkTimeout, AllowDestructive: allowDestructive}
			if backend != nil {
				defer backend.Close()
				opts.Backend = backend
			}
			reports, err := runAll(cmd, plans, out, opts)
			if len(reports) > 0 {
				report.RunReports(cmd.OutOrStdout(), pl, reports)
			}
			if err != nil {
				return err
			}
			return verdictStatus(results(reports)...)
		},
	}
	f := cmd.Flags()
	flags = planflags.Register(f)
	f.StringSliceVar(&fencing, "fencing", nil, "fencing mode(s) of the store: off, writes, full; a list runs the plan once per mode, side by side")
	f.StringVar(&out, "out", "out", "directory for run directories")
	f.StringArrayVar(&external.lock, "external-lock", nil, "run against an existing lock server instead of starting Redis (repeatable, one server each, taken whole): host:port, redis://[user[:password]@]host:port[/db] or rediss://... (a password left out comes from $LOCKLAB_REDIS_PASSWORD)")
	f.StringVar(&external.store, "external-store", "", "with --external-lock: the existing server for the protected store (host:port or URL, as --external-lock)")
	f.StringVar(&external.ca, "external-ca", "", "CA bundle (PEM) that rediss:// servers' certificates are checked against (default: the system's)")
	f.BoolVar(&allowDestructive, "allow-destructive", false, "let faults that can destroy data (pause, crash, clock, TTL shaving) touch external servers")
	f.DurationVar(&checkTimeout, "check-timeout", 0, "linearizability checker timeout per property (0: default); a timeout is reported as unknown, never as a pass")
	return cmd
}

// runAll runs resolved plans one after the other, each into its own directory under
// out. The report of a run that ended early (interrupted, failed) is returned too, with
// the error: its history was saved and checked.
func runAll(cmd *cobra.Command, plans []*plan.Resolved, out string, opts runner.Options) ([]runner.Report, error) {
	stamp := time.Now().Format("20060102-150405")
	reports := make([]runner.Report, 0, len(plans))
	for _, r := range plans {
		pl := r.Plan
		name := pl.Name
		if name == "" {
			name = "run"
		}
		opts.Dir = filepath.Join(out, fmt.Sprintf("%s-%s-fencing-%s", stamp, name, pl.Fencing))
		fmt.Fprintf(cmd.ErrOrStderr(), "running %s with fencing %s for %s ...\n", name, pl.Fencing, pl.Duration.D())
		rep, err := runner.Run(cmd.Context(), r, opts)
		if errors.Is(err, runner.ErrEndedEarly) {
			reports = append(reports, rep)
			return reports, &statusError{exitError, fmt.Errorf("run %s with fencing %s: %w; evidence in %s", name, pl.Fencing, err, opts.Dir)}
		}
		if err != nil {
			return reports, &statusError{exitError, fmt.Errorf("run %s with fencing %s: %w", name, pl.Fencing, err)}
		}
		reports = append(reports, rep)
	}
	return reports, nil
}

func results(reps []runner.Report) []linearizability.Result {
	out := make([]linearizability.Result, len(reps))
	for i, r := range reps {
		out[i] = r.Result
	}
	return out
}

// verdictStatus turns results into the exit status: any violation wins over unknown.
func verdictStatus(rs ...linearizability.Result) error {
	unknown := false
	for _, r := range rs {
		if r.Violation() {
			return &statusError{code: exitViolation}
		}
		unknown = unknown || r.Unknown()
	}
	if unknown {
		return &statusError{code: exitUnknown}
	}
	return nil
}
