package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/campaign/detection"
	"github.com/locklab/locklab/internal/cmdline"
	"github.com/locklab/locklab/internal/gate"
	"github.com/locklab/locklab/internal/mdblock"
	"github.com/locklab/locklab/report"
)

// markerName is what --marker accepts: the NAME of <!-- NAME:begin --> and <!-- NAME:end -->.
var markerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

func newDetectionCmd() *cobra.Command {
	var (
		o                        detection.Options
		classes, impls, families []string
		markdown                 string
		marker                   string
		seeds, claimed           int // as typed; commandLine reprints the flags, so never rewrite them
		faultFree                bool
		th                       gate.Thresholds
	)
	cmd := &cobra.Command{
		Use:   "detection",
		Short: "Time to detection: random class searches from several seeds per bug class, and false alarms",
		Long: `Detection measures how fast random search finds each bug class of the catalog and
each mutant: for every class, --seeds class searches (seeds --seed, --seed+1, …), each
drawing plans only from the class's space (its implementation and fault kinds) until
the class's first detection confirmed by a re-run, or --max-runs plans. It reports the
median and worst time and number of plans to the first confirmed detection, the shrunk
size of the first seed's counterexample (with --shrink), the detections that did not
reproduce, and per correct implementation the false alarms of fault-free calm plans,
run until --claimed-pairs (plan, property) pairs that an expectation rule claims were
decided (--impl: of these only; --fault-free=false: none). --families counts false
alarms under faults: per rule family (fencing-full, renewal, etcd-fences, zookeeper; all), random
plans with its faults until --claimed-pairs pairs that its rules claim were decided.
--seeds 0 measures false alarms only. It writes detection.json, detection.md and
index.html (the tables, linking each search's own index.html in <class>/<seed>/,
fault-free/<impl>/<seed>/ and faulted/<family>/<seed>/, and the run of each first
detection) to --out; with --markdown FILE the table replaces what is between the
lines <!-- MARKER:begin --> and <!-- MARKER:end --> in FILE (--marker, default
detection).

Exit status: 0 every class was found by every seed and there was no false alarm, 1 a
false alarm seen or a class missed, 2 an error or an interruption, 3 inconclusive:
without a false alarm, the searches decided fewer than --min-decided (plan, property)
pairs, or more than --max-perturbed of their plans were perturbed (a missed class then
says nothing).`,
		Example: `  locklab detection --seeds 10 --shrink --markdown BENCHMARKS.md
  locklab detection --class pause-past-ttl,check-then-set --seeds 3
  locklab detection --seeds 0 --impl seed-withlock --parallel 4
  locklab detection --seeds 0 --fault-free=false --families all --claimed-pairs 30`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !markerName.MatchString(marker) {
				return &statusError{exitError, fmt.Errorf("flag --marker: want letters, digits and dashes, got %q", marker)}
			}
			begin, end := "<!-- "+marker+":begin -->", "<!-- "+marker+":end -->"
			if markdown != "" {
				if err := mdblock.Check(markdown, begin, end); err != nil {
					return &statusError{exitError, fmt.Errorf("flag --markdown: %w", err)}
				}
			}
			for _, c := range campaignTrim(classes) {
				if _, err := campaign.ClassByID(nil, c); err != nil {
					return &statusError{exitError, fmt.Errorf("flag --class: %w", err)}
				}
				o.Classes = append(o.Classes, c)
			}
			if err := th.Validate(); err != nil {
				return &statusError{exitError, err}
			}
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			for _, name := range campaignTrim(impls) {
				impl, err := reg.Get(name)
				if err == nil && impl.Mutant {
					err = fmt.Errorf("%s is a mutant: false alarms are counted on correct implementations only", name)
				}
				if err != nil {
					return &statusError{exitError, fmt.Errorf("flag --impl: %w", err)}
				}
				o.Impls = append(o.Impls, name)
			}
			if o.Families, err = detection.FamilyNames(campaignTrim(families)); err != nil { // families as typed: commandLine reprints it
				return &statusError{exitError, fmt.Errorf("flag --families: %w", err)}
			}
			o.Registry, o.NoFaultFree = reg, !faultFree
			if seeds == 0 && (claimed == 0 || !faultFree && len(o.Families) == 0) {
				return &statusError{exitError, errors.New("flags --seeds 0 and --claimed-pairs 0 (or --fault-free=false without --families): nothing to measure")}
			}
			o.Seeds = seeds
			if seeds == 0 {
				o.Seeds = -1 // none: detection.Options reads 0 as its default
			}
			o.ClaimedPairs = claimed
			if claimed == 0 {
				o.ClaimedPairs = -1 // none: detection.Options reads 0 as its default
			}
			if seeds < 0 || o.MaxRuns < 1 || o.Parallel < 1 || claimed < 0 {
				return &statusError{exitError, errors.New("flags --max-runs and --parallel must be at least 1, --seeds and --claimed-pairs at least 0")}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w := cmd.ErrOrStderr()
			o.Progress = func(line string) { fmt.Fprintln(w, line) }
			o.Render = report.WriteCampaign
			res, err := detection.Run(ctx, o)
			if err != nil {
				return &statusError{exitError, err}
			}
			res.Thresholds = &th
			md, err := report.WriteDetection(o.Out, res, cmdline.Of(cmd))
			if err != nil {
				return &statusError{exitError, err}
			}
			fmt.Fprint(cmd.OutOrStdout(), md)
			if res.Interrupted {
				return &statusError{exitError, fmt.Errorf("interrupted: %w", context.Canceled)}
			}
			if markdown != "" {
				if err := mdblock.Update(markdown, md, begin, end); err != nil {
					return &statusError{exitError, err}
				}
			}
			missed, alarms := res.Missed(), res.Alarms()
			fmt.Fprintf(cmd.ErrOrStderr(), "decided: %s\n", res.Decided())
			if err := res.Inconclusive(); err != nil {
				return &statusError{exitUnknown, fmt.Errorf("detection %w", err)}
			}
			if len(missed) > 0 || alarms > 0 {
				return &statusError{exitViolation, fmt.Errorf("missed: %s; false alarms: %d", strings.Join(missed, ", "), alarms)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&classes, "class", nil, "bug classes to measure (default: every class)")
	f.IntVar(&seeds, "seeds", 10, "class searches per class (0: none, false alarms only)")
	f.StringSliceVar(&impls, "impl", nil, "correct implementations whose false alarms are counted (default: every one)")
	f.StringVar(&marker, "marker", "detection", "with --markdown: the name in the markers <!-- NAME:begin --> and <!-- NAME:end -->")
	f.Int64Var(&o.Seed, "seed", 1, "the first seed")
	f.IntVar(&o.MaxRuns, "max-runs", 60, "plans per class search at most")
	f.IntVar(&claimed, "claimed-pairs", 1000, "per correct implementation (fault-free calm plans) and per --families family, claimed (plan, property) pairs to decide, for false alarms (0: skip)")
	f.StringSliceVar(&families, "families", nil, "rule families whose false alarms under faults are counted: fencing-full, renewal, etcd-fences, zookeeper, or all (default: none)")
	f.BoolVar(&faultFree, "fault-free", true, "count the false alarms of fault-free calm plans")
	f.IntVar(&o.Parallel, "parallel", 1, "plans at once within a search")
	f.BoolVar(&o.Shrink, "shrink", false, "shrink the first seed's detection of each class")
	f.DurationVar(&o.ShrinkTime, "shrink-time", 0, "time to spend shrinking one detection (0: the campaign default)")
	f.StringVar(&o.Out, "out", "out/detection", "output directory")
	f.StringVar(&markdown, "markdown", "", "Markdown file whose table between the --marker lines is replaced")
	gate.AddFlags(f, &th, "(plan, property) pairs (of class searches: any; of false alarms: claimed)")
	return cmd
}
