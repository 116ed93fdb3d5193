package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/campaign/merge"
	"github.com/locklab/locklab/internal/gate"
	"github.com/locklab/locklab/internal/liveline"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/rerun"
	"github.com/locklab/locklab/runner"
)

func newCampaignCmd() *cobra.Command {
	var (
		o                                      campaign.SearchOptions
		impls, faultKinds, fencing, topologies []string
		maxFaults                              int
		ttl                                    time.Duration
		extend                                 []float64
		seed                                   int64
		shard, class, backend                  string
		calm, failOnFindings                   bool
		th                                     gate.Thresholds
	)
	cmd := &cobra.Command{
		Use:   "campaign",
		Short: "Run randomly generated plans under faults; confirm, shrink and save every violation",
		Long: `Campaign draws plans with rapid (implementation, topology, clients, keys, TTL, workload,
fencing mode and up to --max-faults faults of every kind available, timed relative to the
TTL or triggered at a client's point), runs each on real Redis and checks it, until
--duration ends or --max-runs plans ran. A failing plan is re-run to confirm it, then
shrunk by rapid (each candidate confirmed by re-running it); the smallest confirmed plan
is saved as failures/NNNNN/plan.json with its report. It writes summary.json, summary.md,
junit.xml and index.html (the page linking every failing run's timeline.svg and
history.html) into --out, also when interrupted (Ctrl-C).

A violation of a property the models say holds for the plan (a safe configuration, e.g.
P2 for fenced with fencing full when no fault can lose the fence counter) fails the
campaign; other violations are findings. --class searches one known bug class (see
locklab list) and stops at its first detection.

Findings are grouped by what they show (the lock, each property's violation shape, the
fault kinds); the first of each kind is confirmed and shrunk, and with --compare-with
NAME@VERSION its plan runs 3 times on that release: "also in" or "fixed in" it.

The same --seed draws the same plans; --shard i/n runs every n-th plan from the i-th, so
n runners with the same seed split one campaign; "locklab campaign merge" merges their
summaries.

A violation in a perturbed run (the harness stalled) is a finding under load: listed
with the stall, counted neither as a finding nor as a pass. A campaign that decided
fewer than --min-decided claimed (plan, property) pairs (with --class: pairs of any
property), or whose runs were perturbed in a larger share than --max-perturbed, is
inconclusive.

Exit status: 0 no safe-configuration violation, enough decided (and, with --class, the
class found), 1 a safe-configuration violation (or the class not found, or a finding
with --fail-on-findings), 2 error or interrupted, 3 inconclusive (a class search that
found its class is never inconclusive).`,
		Example: `  locklab campaign --duration 10m --impl fenced --fencing full --parallel 2
  locklab campaign --class pause-past-ttl --max-runs 40
  locklab campaign --impl node-redlock@3.1.2 --compare-with node-redlock@4.0.0 --extend 1 --duration 5m
  locklab campaign --seed 42 --shard 0/4 --duration 1h --out out/shard0
  locklab campaign merge --out out/all out/shard0 out/shard1 out/shard2 out/shard3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			fs := cmd.Flags()
			if err := th.Validate(); err != nil {
				return &statusError{exitError, err}
			}
			o.Registry, o.Thresholds = reg, &th
			o.Space = campaign.Space{Impls: campaignTrim(impls), Faults: campaignTrim(faultKinds), Fencings: campaignTrim(fencing), Topologies: campaignTrim(topologies), MaxFaults: maxFaults, Calm: calm, Backend: backend, TTL: plan.D(ttl), Extend: extend}
			if fs.Changed("max-faults") && maxFaults == 0 {
				o.Space.MaxFaults = -1
			}
			if class != "" {
				for _, name := range []string{"impl", "faults", "fencing", "topology", "max-faults", "calm", "ttl", "extend"} {
					if fs.Changed(name) {
						return &statusError{exitError, fmt.Errorf("flag --%s: --class sets the space itself", name)}
					}
				}
				c, err := campaign.ClassByID(reg, class)
				if err != nil {
					return &statusError{exitError, fmt.Errorf("flag --class: %w", err)}
				}
				o.Class, o.StopAtDetection = &c, true
			}
			if err := o.Space.CheckTTL(); err != nil {
				return &statusError{exitError, fmt.Errorf("flag --ttl: %w", err)}
			}
			if _, err := campaign.PlanGen(reg, o.Space); err != nil && o.Class == nil {
				return &statusError{exitError, fmt.Errorf("flags --impl/--faults/--fencing/--topology/--extend: %w", err)}
			}
			if sp := o.Space; o.CompareWith != "" && o.Class == nil {
				if err := rerun.CheckCompareWith(reg, o.CompareWith, sp.Impls); err != nil {
					return &statusError{exitError, fmt.Errorf("flag --compare-with: %w", err)}
				}
			}
			o.Shard = campaign.Shard{I: 0, N: 1}
			if shard != "" {
				s, err := campaign.ParseShard(shard)
				if err != nil {
					return &statusError{exitError, fmt.Errorf("flag --shard: %w", err)}
				}
				o.Shard = s
			}
			switch {
			case o.Duration < 0:
				return &statusError{exitError, errors.New("flag --duration: must not be negative")}
			case o.MaxRuns < 0:
				return &statusError{exitError, errors.New("flag --max-runs: must not be negative")}
			case o.Parallel < 1:
				return &statusError{exitError, fmt.Errorf("flag --parallel: want at least 1, got %d", o.Parallel)}
			case o.Duration == 0 && o.MaxRuns == 0:
				return &statusError{exitError, errors.New("flags --duration and --max-runs: one must bound the campaign")}
			}
			if backend == plan.BackendDocker { // one engine connection and pair of networks for every run
				if o.Backend, err = runner.NewBackend(cmd.Context(), backend); err != nil {
					return &statusError{exitError, fmt.Errorf("flag --backend: %w", err)}
				}
				defer o.Backend.Close()
			}
			if !fs.Changed("seed") {
				seed = time.Now().UnixNano() % 1_000_000_000
			}
			o.Seed = seed
			w := cmd.ErrOrStderr()
			fmt.Fprintf(w, "campaign seed %d (rerun with --seed %d), shard %s, output %s\n", seed, seed, o.Shard, o.Out)
			line := liveline.New(w)
			o.Progress = campaignProgress(line)
			o.Render = report.WriteCampaign
			sum, err := campaign.Search(cmd.Context(), o)
			if err != nil {
				return &statusError{exitError, err}
			}
			line.Clear()
			report.CampaignText(cmd.OutOrStdout(), o.Out, sum)
			return campaignStatus(sum, failOnFindings)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Duration, "duration", time.Minute, "start no new plan after this long (0: only --max-runs bounds it)")
	f.IntVar(&o.MaxRuns, "max-runs", 0, "run at most this many plans (of this shard; 0: no limit)")
	f.StringSliceVar(&impls, "impl", nil, "implementations to draw from (default: all; see locklab list)")
	f.StringSliceVar(&faultKinds, "faults", nil, `fault kinds to draw from (default: all; "none" for fault-free plans)`)
	f.StringSliceVar(&fencing, "fencing", nil, "fencing modes to draw from: off, writes, full (default: all an implementation supports)")
	f.StringSliceVar(&topologies, "topology", nil, "topology kinds to draw from: single, replicated, nodes, etcd, cluster, zookeeper (default: every one an implementation runs on)")
	f.IntVar(&maxFaults, "max-faults", campaign.DefaultMaxFaults, "faults per plan at most")
	f.BoolVar(&calm, "calm", false, "only calm workloads: work at most a quarter of the TTL")
	f.Float64SliceVar(&extend, "extend", nil, "probabilities that a critical section extends its lease, drawn per plan (default 0,0.5,1)")
	f.DurationVar(&ttl, "ttl", 0, "every plan's TTL, in whole milliseconds (default: drawn from 200ms to 1s per plan); work and fault times follow it")
	f.Int64Var(&seed, "seed", 0, "campaign seed (default: from the time, printed); the same seed draws the same plans")
	f.StringVar(&o.Out, "out", "out/campaign", "output directory: runs/, failures/, summary.json, summary.md, junit.xml, index.html")
	f.IntVar(&o.Parallel, "parallel", 1, "plans run at once")
	f.StringVar(&backend, "backend", "", `what runs the servers: "process" (default) or "docker" (containers; adds partitions between servers to the fault kinds)`)
	f.StringVar(&shard, "shard", "", "run shard i/n of the plan sequence (0 ≤ i < n), for splitting a campaign across runners")
	f.IntVar(&o.Confirm, "confirm", campaign.DefaultConfirm, "re-runs that confirm a failing plan (and each shrink candidate); 0: none and no shrinking")
	f.DurationVar(&o.ShrinkTime, "shrink-time", campaign.DefaultShrinkTime, "time to shrink one confirmed failure (0: no shrinking)")
	f.StringVar(&class, "class", "", "search one bug class (its implementation and fault kinds) and stop at its first detection")
	f.BoolVar(&o.KeepPassing, "keep-passing", false, "keep the run directories of passing runs")
	f.DurationVar(&o.CheckTimeout, "check-timeout", campaign.DefaultCheckTimeout, "checker timeout per property; a timeout is unknown, never a pass")
	f.BoolVar(&failOnFindings, "fail-on-findings", false, "exit 1 also for violations the models do not rule out")
	gate.AddFlags(f, &th, "claimed (plan, property) pairs (with --class: pairs of any property)")
	f.StringVar(&o.CompareWith, "compare-with", "", "NAME@VERSION: run each confirmed failure's saved plan on this release of its library too, and label it \"also in\" or \"fixed in\" it")
	f.BoolVar(&o.SafeOnly, "safe-only", false, "confirm and shrink only safe-configuration violations (and --class detections), not findings")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		// 0 on the command line means none; internally 0 means the default.
		if f.Changed("confirm") && o.Confirm < 0 {
			return &statusError{exitError, fmt.Errorf("flag --confirm: must not be negative, got %d", o.Confirm)}
		}
		if f.Changed("confirm") && o.Confirm == 0 {
			o.Confirm = -1
		}
		if f.Changed("shrink-time") && o.ShrinkTime <= 0 {
			o.ShrinkTime = -1
		}
		return nil
	}
	cmd.AddCommand(newCampaignMergeCmd())
	return cmd
}

func newCampaignMergeCmd() *cobra.Command {
	var out string
	var failOnFindings bool
	var th gate.Thresholds
	cmd := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Merge the summaries of campaign shards (or campaigns) into one",
		Long: `Merge reads DIR/summary.json of each directory and writes one summary.json, summary.md,
junit.xml and index.html into --out, with counts added up, the earliest first violations,
and paths (and the page's links) relative to --out. --min-decided and --max-perturbed
judge the merged counts. Exit status as for campaign.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			if err := th.Validate(); err != nil {
				return &statusError{exitError, err}
			}
			sums := make([]*campaign.Summary, len(dirs))
			for i, d := range dirs {
				s, err := campaign.ReadSummary(d)
				if err != nil {
					return &statusError{exitError, err}
				}
				if filepath.Base(d) == campaign.SummaryFile {
					dirs[i] = filepath.Dir(d)
				}
				sums[i] = s
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return &statusError{exitError, err}
			}
			m := merge.Merge(out, dirs, sums)
			m.Thresholds = &th
			if err := writeSummary(out, m); err != nil {
				return &statusError{exitError, err}
			}
			report.CampaignText(cmd.OutOrStdout(), out, m)
			return campaignStatus(m, failOnFindings)
		},
	}
	cmd.Flags().StringVar(&out, "out", "out/campaign-merged", "directory for the merged summary")
	cmd.Flags().BoolVar(&failOnFindings, "fail-on-findings", false, "exit 1 also for violations the models do not rule out")
	gate.AddFlags(cmd.Flags(), &th, "claimed (plan, property) pairs (of class searches: pairs of any property)")
	return cmd
}

// campaignTrim is a list flag's values without surrounding spaces and without empty ones.
func campaignTrim(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// campaignStatus is the exit status of a finished campaign: a violation before an
// error, an error before too little decided (inconclusive), that before a class missed.
func campaignStatus(s *campaign.Summary, failOnFindings bool) error {
	switch {
	case s.SafeViolations > 0, failOnFindings && s.Findings > 0:
		return &statusError{code: exitViolation}
	case s.Interrupted:
		return &statusError{exitError, errors.New("campaign interrupted; summary written")}
	case s.Runs == 0 && s.Errors > 0:
		return &statusError{exitError, fmt.Errorf("no plan could run (%d errors; see summary.md)", s.Errors)}
	case s.Inconclusive() != nil:
		return &statusError{code: exitUnknown}
	case !s.OK():
		return &statusError{code: exitViolation}
	}
	return nil
}

// campaignProgress shows a campaign's progress: on a terminal one status line redrawn in
// place, with notes (confirmations, shrinks, detections) above it; elsewhere one line per
// finished run and per note.
func campaignProgress(line *liveline.Line) func(campaign.Progress) {
	return func(p campaign.Progress) {
		status := campaignStatusLine(p)
		if p.Note != "" {
			line.Print(p.Note)
		}
		if line.Live() {
			line.Show(status)
			return
		}
		if r := p.Finished; r != nil {
			verdict := "ok"
			switch {
			case r.Error != "":
				verdict = "ERROR " + campaignFirstLine(r.Error)
			case len(r.Illegal) > 0:
				verdict = linearizability.JoinProperties(r.Illegal, ",") + " ILLEGAL"
			}
			line.Print(fmt.Sprintf("%s: %s | %s", r.Plan, verdict, status))
		}
	}
}

func campaignStatusLine(p campaign.Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs", p.Runs)
	if p.MaxRuns > 0 {
		fmt.Fprintf(&b, "/%d", p.MaxRuns)
	}
	for _, prop := range linearizability.AllProperties() {
		fmt.Fprintf(&b, " %s:%d", prop, p.Violations[prop])
	}
	fmt.Fprintf(&b, " safe:%d findings:%d errors:%d", p.Safe, p.Findings, p.Errors)
	eta := time.Duration(-1)
	switch {
	case p.Duration > 0:
		eta = max(p.Duration-p.Elapsed, 0)
	case p.MaxRuns > 0 && p.Runs > 0:
		eta = p.Elapsed / time.Duration(p.Runs) * time.Duration(p.MaxRuns-p.Runs)
	}
	fmt.Fprintf(&b, " | %s", p.Elapsed.Round(time.Second))
	if eta >= 0 {
		fmt.Fprintf(&b, " ETA %s", eta.Round(time.Second))
	}
	if p.Current != "" {
		fmt.Fprintf(&b, " | %s", p.Current)
	}
	return b.String()
}

func campaignFirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 160 {
		line = line[:160] + "…"
	}
	return line
}

// writeSummary writes a summary's record and its renderings into dir.
func writeSummary(dir string, s *campaign.Summary) error {
	if err := campaign.WriteSummary(dir, s); err != nil {
		return err
	}
	return report.WriteCampaign(dir, s)
}
