package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/internal/cmdline"
	"github.com/locklab/locklab/internal/gate"
	"github.com/locklab/locklab/internal/liveline"
	"github.com/locklab/locklab/internal/mdblock"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
)

// The lines of a Markdown file between which `locklab matrix --readme` puts the table.
const (
	matrixBegin = "<!-- matrix:begin -->"
	matrixEnd   = "<!-- matrix:end -->"
)

func newMatrixCmd() *cobra.Command {
	var (
		impls, scenarios, fencings []string
		repeat, parallel, nodes    int
		out, readme, backend       string
		checkTimeout               time.Duration
		th                         gate.Thresholds
	)
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Run every implementation × scenario × fencing mode R times and write the verdict matrix",
		Long: `Matrix runs every implementation of the registry on every scenario of the catalog
(the fault-free baseline first) with each fencing mode, R times per cell with seeds
the scenario's seed + 0 … R-1, each run on servers of its own. It writes matrix.json,
matrix.md, matrix.html and index.html (the tables with every run's timeline.svg and
history.html linked) to --out, with every run's report under
runs/<scenario>/<impl>/<fencing>/<run>/. A cell shows, per property, how many of the R
runs violated it; nothing in the table is written by hand.

An implementation without fencing tokens shows "none" under a fencing mode other than
off. An implementation for independent nodes plays a single-server scenario on --nodes
servers; a scenario that does not apply to an implementation is n/a, with the reason.

With --readme FILE the Markdown table replaces what is between the lines
` + matrixBegin + ` and ` + matrixEnd + ` in FILE.

A violation in a perturbed run (the harness stalled) is not counted in its cell: the
cell shows it as a finding under load ("P2 1/3 under load"), and a note names the stall.

Exit status: 0 the matrix was written (violations are its content), 2 an error: bad
flags, a run that failed to run (its cell says err), or an interruption (the runs that
finished are written, marked incomplete, and FILE is left alone), 3 inconclusive: the
runs decided fewer than --min-decided (run, property) pairs, or more than
--max-perturbed of them were perturbed (FILE is left alone).`,
		Example: `  locklab matrix --repeat 3 --out out/matrix
  locklab matrix --impl setnx,fenced --scenario baseline,pause-past-ttl --parallel 4
  locklab matrix --repeat 1 --out out/matrix --readme docs/matrix.md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkReadme(readme); err != nil { // before hours of runs, not after
				return err
			}
			// Zero means "the default" to campaign.Matrix, but typed on the command line it is a mistake.
			for _, c := range []struct {
				flag, what string
				v          int
			}{{"repeat", "run per cell", repeat}, {"parallel", "run at a time", parallel}, {"nodes", "node", nodes}} {
				if c.v < 1 {
					return &statusError{exitError, fmt.Errorf("flag --%s: want at least 1 %s, got %d", c.flag, c.what, c.v)}
				}
			}
			if err := th.Validate(); err != nil {
				return &statusError{exitError, err}
			}
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			stderr := cmd.ErrOrStderr()
			line := liveline.New(stderr)
			opts := matrix.Options{
				Registry: reg, Impls: campaignTrim(impls), Scenarios: campaignTrim(scenarios), Fencings: campaignTrim(fencings),
				Repeat: repeat, Nodes: nodes, Parallel: parallel, Out: out, CheckTimeout: checkTimeout, Backend: backend,
				Command: cmdline.Of(cmd), Progress: matrixProgress(line),
			}
			start := time.Now()
			res, err := matrix.Run(cmd.Context(), opts)
			line.End()
			var oe *matrix.OptionError
			if errors.As(err, &oe) {
				return &statusError{exitError, fmt.Errorf("flag --%s: %w", matrixFlag(oe.Option), oe.Err)}
			}
			return finishMatrix(cmd.OutOrStdout(), res, err, out, readme, th,
				fmt.Sprintf("%d of %d runs in %s", res.Meta.Runs, res.Meta.Planned, time.Since(start).Round(time.Second)))
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&impls, "impl", nil, "implementations to run (default: every one, see locklab list)")
	f.StringSliceVar(&scenarios, "scenario", nil, "catalog scenarios to run (default: every one, baseline first)")
	f.StringSliceVar(&fencings, "fencing", nil, "fencing modes: off, writes, full (default off,full)")
	f.IntVar(&repeat, "repeat", 1, "runs per cell (R); seeds are each scenario's seed + 0 … R-1")
	f.IntVar(&parallel, "parallel", 1, "runs at the same time, each on servers of its own")
	f.StringVar(&backend, "backend", "", `what runs every cell's servers: "process" or "docker" (default: each scenario's own; split-brain needs docker)`)
	f.IntVar(&nodes, "nodes", 5, "servers when an implementation for independent nodes (Redlock) plays a single-server scenario")
	f.StringVar(&out, "out", filepath.Join("out", "matrix"), "directory for matrix.json, matrix.md, matrix.html, index.html and the runs")
	f.StringVar(&readme, "readme", "", "Markdown file whose table between "+matrixBegin+" and "+matrixEnd+" is replaced")
	f.DurationVar(&checkTimeout, "check-timeout", 0, "checker timeout per property (0: default); a timeout shows as ?, never as a pass")
	gate.AddFlags(f, &th, "(run, property) pairs")
	cmd.AddCommand(newMatrixMergeCmd())
	return cmd
}

func newMatrixMergeCmd() *cobra.Command {
	var (
		out, readme  string
		th           gate.Thresholds
		recheck      bool
		checkTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Merge matrices run in pieces into one",
		Long: `Merge reads DIR/matrix.json of each directory and writes one matrix.json, matrix.md,
matrix.html and index.html into --out, for a matrix run in pieces: a shard of the
scenarios per machine, rows run again after their scenarios changed, or columns added (an
implementation run on rows run before). Each cell comes from the last DIR that has both
its row and its column; every DIR must have the same fencing modes. Runs stay where they are, linked relative to --out. --recheck checks every
run's saved history again with this locklab's checker (a property added or a checker
fixed since the runs were made), without running any server; the runs' own reports are
left as they were. --readme, --min-decided and --max-perturbed as for matrix, judged on
the merged rows. Exit status as for matrix.`,
		Example: `  locklab matrix merge --out out/matrix-all --readme docs/matrix.md out/matrix out/matrix-cluster`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			if err := th.Validate(); err != nil {
				return &statusError{exitError, err}
			}
			if err := checkReadme(readme); err != nil {
				return err
			}
			parts := make([]matrix.Result, len(dirs))
			for i, d := range dirs {
				var err error
				if parts[i], err = matrix.Load(d); err != nil {
					return &statusError{exitError, fmt.Errorf("%s: %w", d, err)}
				}
			}
			res, err := matrix.Merge(out, dirs, parts)
			if err != nil {
				return &statusError{exitError, err}
			}
			res.Meta.Command = cmdline.Of(cmd) + " " + strings.Join(dirs, " ")
			if recheck {
				if err := matrix.Recheck(out, &res, checkTimeout); err != nil {
					return &statusError{exitError, err}
				}
			}
			if err := matrix.Write(out, res); err != nil {
				return &statusError{exitError, err}
			}
			if !res.Meta.Complete {
				err = errors.New("an interrupted matrix was merged: its cells marked … were not run")
			}
			return finishMatrix(cmd.OutOrStdout(), res, err, out, readme, th,
				fmt.Sprintf("%d matrices merged, %d of %d runs", len(dirs), res.Meta.Runs, res.Meta.Planned))
		},
	}
	cmd.Flags().StringVar(&out, "out", filepath.Join("out", "matrix-merged"), "directory for the merged matrix.json, matrix.md, matrix.html and index.html")
	cmd.Flags().StringVar(&readme, "readme", "", "Markdown file whose table between "+matrixBegin+" and "+matrixEnd+" is replaced")
	cmd.Flags().BoolVar(&recheck, "recheck", false, "check every run's saved history again with this locklab's checker")
	cmd.Flags().DurationVar(&checkTimeout, "check-timeout", 0, "with --recheck: checker timeout per property (0: default); a timeout is unknown, never a pass")
	gate.AddFlags(cmd.Flags(), &th, "(run, property) pairs")
	return cmd
}

// checkReadme checks that the file of --readme has the matrix's markers, if one is named.
func checkReadme(readme string) error {
	if readme == "" {
		return nil
	}
	if err := mdblock.Check(readme, matrixBegin, matrixEnd); err != nil {
		return &statusError{exitError, fmt.Errorf("flag --readme: %w", err)}
	}
	return nil
}

// finishMatrix writes a matrix's pages into out and says what it holds; it replaces the
// table in readme unless the matrix is incomplete (runErr), failed runs or decided too
// little (th), and returns the exit status that says which.
func finishMatrix(w io.Writer, res matrix.Result, runErr error, out, readme string, th gate.Thresholds, what string) error {
	if res.Meta.Planned > 0 || res.Meta.Complete {
		// matrix.json is written; the pages for people go beside it, also when interrupted.
		if rerr := report.WriteMatrix(out, res); rerr != nil {
			return &statusError{exitError, rerr}
		}
		fmt.Fprintf(w, "matrix: %s, %d failed to run; wrote %s, %s, %s, %s\n", what, res.Meta.Errors,
			filepath.Join(out, matrix.MarkdownFile), filepath.Join(out, matrix.JSONFile), filepath.Join(out, matrix.HTMLFile),
			filepath.Join(out, report.IndexFile))
	}
	if err := runErr; err != nil {
		if readme != "" {
			err = fmt.Errorf("%w; %s left alone", err, readme)
		}
		return &statusError{exitError, err}
	}
	fmt.Fprintf(w, "decided: %s\n", res.Meta.Decided)
	inconclusive := th.Check(res.Meta.Decided, "(run, property) pairs")
	if inconclusive != nil && res.Meta.Errors == 0 {
		if readme != "" {
			inconclusive = fmt.Errorf("%w; %s left alone", inconclusive, readme)
		}
		return &statusError{exitUnknown, fmt.Errorf("matrix %w", inconclusive)}
	}
	if readme != "" && inconclusive == nil {
		if err := updateReadme(readme, res); err != nil {
			return &statusError{exitError, err}
		}
		fmt.Fprintf(w, "%s: matrix table replaced\n", readme)
	}
	if res.Meta.Errors > 0 {
		return &statusError{exitError, fmt.Errorf("%d of %d runs failed to run: their cells say err, the notes of %s say why",
			res.Meta.Errors, res.Meta.Runs, filepath.Join(out, matrix.MarkdownFile))}
	}
	return nil
}

// matrixFlag is the flag of a matrix.Options field named by an OptionError.
func matrixFlag(option string) string {
	switch option {
	case "impls":
		return "impl"
	case "scenarios":
		return "scenario"
	case "fencings":
		return "fencing"
	}
	return option // repeat, nodes, parallel, out
}

// matrixProgress reports finished runs on line: a line each, or the status line redrawn
// in place on a terminal (runs that failed to run keep a line of their own there too).
func matrixProgress(line *liveline.Line) func(matrix.Event) {
	return func(e matrix.Event) {
		if !line.Live() || e.Err != nil {
			line.Print(e.String())
			return
		}
		line.Show(e.String())
	}
}

// updateReadme replaces the matrix table in the Markdown file readme with res, without
// links: the runs are under the output directory, not part of the document.
func updateReadme(readme string, res matrix.Result) error {
	return mdblock.Update(readme, report.MatrixMarkdown(res, false), matrixBegin, matrixEnd)
}
