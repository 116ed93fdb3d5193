package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/bisect"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/releases"
)

func newBisectCmd() *cobra.Command {
	var (
		impl, good, bad, planPath string
		versions, props           []string
		repeat                    int
	)
	cmd := &cobra.Command{
		Use:   "bisect --impl NAME --good VERSION --bad VERSION --plan PLAN.json",
		Short: "Name the first release of a library where a plan's verdict changes",
		Long: `Bisect runs the plan --repeat times on release --good and on --bad of the library that
--impl runs, learns which properties tell them apart (broken in some repeat on one, in
none on the other), then halves the releases served between them until it finds two
neighbours that differ: the first release like --bad. --bad may be older than --good
(to find the fix). The Go module proxy lists only the releases it was asked for: name
the releases to search with --versions when its list is short. A perturbed run (the
harness stalled) counts for nothing. Exit status: 0 found, 2 error (also when the plan
does not tell --good from --bad). A property that breaks by chance on some runs can
make a release look like the wrong end: --property names the ones to judge by.`,
		Example: `  locklab bisect --impl node-redlock --good 4.2.0 --bad 2.1.0 --property P6 --plan docs/track-record/node-redlock-unlock-votes-missing-keys.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case impl == "" || good == "" || bad == "" || planPath == "":
				return &statusError{exitError, fmt.Errorf("flags --impl, --good, --bad and --plan are all needed")}
			case repeat < 1:
				return &statusError{exitError, fmt.Errorf("flag --repeat: want at least 1, got %d", repeat)}
			}
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			if len(versions) == 0 {
				if versions, err = releases.Versions(cmd.Context(), impl); err != nil {
					return &statusError{exitError, fmt.Errorf("flag --impl %q: %w", impl, err)}
				}
			}
			w := cmd.OutOrStdout()
			p, err := plan.Read(planPath, nil)
			if err != nil {
				return &statusError{exitError, err}
			}
			var only []lin.Property
			for _, p := range props {
				if !slices.Contains(lin.AllProperties(), lin.Property(p)) {
					return &statusError{exitError, fmt.Errorf("flag --property %q: want one of %s", p, lin.JoinProperties(lin.AllProperties(), ", "))}
				}
				only = append(only, lin.Property(p))
			}
			res, err := bisect.Bisect(cmd.Context(), versions, good, bad, only, bisect.PlanRun(reg, p, impl, repeat, w), w)
			if err != nil {
				return &statusError{exitError, fmt.Errorf("bisect %s from %s to %s: %w", impl, good, bad, err)}
			}
			fmt.Fprintf(w, "%s: the verdict changes between %s (like --good %s) and %s (like --bad %s), on %s; %d releases tried\n",
				impl, res.LastGood, good, res.FirstBad, bad, lin.JoinProperties(res.Differs, ", "), len(res.Steps))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&impl, "impl", "", "the implementation whose library's releases are searched (e.g. redsync, node-redlock)")
	f.StringVar(&good, "good", "", "a release the plan finds good")
	f.StringVar(&bad, "bad", "", "a release the plan finds bad (older or newer)")
	f.StringVar(&planPath, "plan", "", "the plan to run (its impl is replaced by each release)")
	f.StringSliceVar(&versions, "versions", nil, "the releases to search (default: those the registry lists)")
	f.IntVar(&repeat, "repeat", 3, "runs per release; a property counts as broken when any run broke it")
	f.StringSliceVar(&props, "property", nil, "judge the releases by these properties only (e.g. P6; default: every property that tells --good from --bad)")
	return cmd
}
