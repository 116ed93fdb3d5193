package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/timeline"
)

func newDemoCmd() *cobra.Command {
	var (
		out          string
		fencing      []string
		checkTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "demo [SCENARIO]",
		Short: "Run a catalog scenario with and without fencing and tell what happened",
		Long: `Demo runs a scenario of the catalog (locklab list) once per fencing mode — off and full
when the implementation grants fences — and prints the verdicts side by side with a
narration of each run: the leases, when they ran out by the server's clock, the faults,
and which writes the store accepted. It writes OUT/SCENARIO.html, one page with the runs'
timelines side by side (each run directory has its timeline.svg). Without a scenario it
lists them.

Exit status: 0 no violation, 1 violation found, 2 error, 3 a checker timed out.`,
		Example: "  locklab demo pause-past-ttl\n  locklab demo clock-jump --fencing off,writes,full",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			if len(args) == 0 {
				return listScenarios(cmd, reg)
			}
			sc, err := plan.Scenario(args[0], reg)
			if err != nil {
				return &statusError{exitError, err}
			}
			if len(fencing) == 0 {
				fencing = []string{"off"}
				if impl, err := reg.Get(sc.Impl); err == nil && impl.Fencing {
					fencing = append(fencing, "full")
				}
			}
			plans := make([]*plan.Resolved, len(fencing))
			for i, mode := range fencing {
				if plans[i], err = sc.WithFencing(strings.TrimSpace(mode)).Resolve(reg); err != nil {
					return &statusError{exitError, fmt.Errorf("flag --fencing: %w", err)}
				}
			}
			w := cmd.OutOrStdout()
			reports, err := runAll(cmd, plans, out, runner.Options{CheckTimeout: checkTimeout})
			if err != nil {
				if len(reports) > 0 {
					report.RunReports(w, sc, reports)
				}
				return err
			}
			fmt.Fprintf(w, "\n%s\n", wrap(sc.Description, 88))
			report.RunReports(w, sc, reports)
			demo := report.Demo{Scenario: sc.Name, Description: sc.Description, Command: demoCommand(sc.Name, fencing)}
			for _, rep := range reports {
				h, err := histories.Load(rep.Dir)
				if err != nil {
					return &statusError{exitError, err}
				}
				var story strings.Builder
				report.Narrate(&story, h)
				fmt.Fprintf(w, "\nWhat happened with fencing %s (times since the start of the run):\n%s", rep.Plan.Fencing, story.String())
				rel, err := filepath.Rel(out, rep.Dir)
				if err != nil {
					return &statusError{exitError, fmt.Errorf("demo page: %w", err)}
				}
				demo.Runs = append(demo.Runs, report.DemoRun{
					Title: runner.Title(rep.Plan), Fencing: rep.Plan.Fencing, Result: rep.Result, Narration: story.String(),
					Timeline:  filepath.ToSlash(filepath.Join(rel, timeline.File)),
					Porcupine: filepath.ToSlash(filepath.Join(rel, runner.HTMLFile)),
				})
			}
			page, err := report.DemoHTML(demo)
			if err != nil {
				return &statusError{exitError, err}
			}
			path := filepath.Join(out, sc.Name+".html")
			if err := os.WriteFile(path, page, 0o644); err != nil {
				return &statusError{exitError, fmt.Errorf("write the demo page: %w", err)}
			}
			fmt.Fprintf(w, "\nThe timelines side by side: %s\n", path)
			return verdictStatus(results(reports)...)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&fencing, "fencing", nil, "fencing modes to run (default: off, and full when the implementation grants fences)")
	f.StringVar(&out, "out", filepath.Join("out", "demo"), "directory for run directories")
	f.DurationVar(&checkTimeout, "check-timeout", 0, "checker timeout per property (0: default)")
	return cmd
}

// demoCommand is the command line that makes the page again.
func demoCommand(scenario string, fencing []string) string {
	return fmt.Sprintf("locklab demo %s --fencing %s", scenario, strings.Join(fencing, ","))
}

func listScenarios(cmd *cobra.Command, reg *lockimpl.Registry) error {
	plans, err := plan.Scenarios(reg)
	if err != nil {
		return &statusError{exitError, err}
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SCENARIO\tIMPL\tTOPOLOGY\tDESCRIPTION")
	for _, p := range plans {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Name, p.Impl, p.Topology, firstSentence(p.Description))
	}
	return w.Flush()
}

// wrap breaks text into lines of at most width characters, at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for _, word := range strings.Fields(text) {
		if line > 0 && line+1+len(word) > width {
			b.WriteByte('\n')
			line = 0
		} else if line > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}
