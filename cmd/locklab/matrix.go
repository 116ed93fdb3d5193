package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locklab/locklab/internal/gate"
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
			if readme != "" {
				// Before hours of runs, not after.
				if err := mdblock.Check(readme, matrixBegin, matrixEnd); err != nil {
					return &statusError{exitError, fmt.Errorf("flag --readme: %w", err)}
				}
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
			progress := newProgress(stderr)
			opts := matrix.Options{
				Registry: reg, Impls: campaignTrim(impls), Scenarios: campaignTrim(scenarios), Fencings: campaignTrim(fencings),
				Repeat: repeat, Nodes: nodes, Parallel: parallel, Out: out, CheckTimeout: checkTimeout, Backend: backend,
				Command: commandLine(cmd), Progress: progress.event,
			}
			start := time.Now()
			res, err := matrix.Run(cmd.Context(), opts)
			progress.end()
			var oe *matrix.OptionError
			if errors.As(err, &oe) {
				return &statusError{exitError, fmt.Errorf("flag --%s: %w", matrixFlag(oe.Option), oe.Err)}
			}
			w := cmd.OutOrStdout()
			if res.Meta.Planned > 0 || res.Meta.Complete {
				// matrix.json is written; the pages for people go beside it, also when interrupted.
				if rerr := report.WriteMatrix(out, res); rerr != nil {
					return &statusError{exitError, rerr}
				}
				fmt.Fprintf(w, "matrix: %d of %d runs in %s, %d failed to run; wrote %s, %s, %s, %s\n",
					res.Meta.Runs, res.Meta.Planned, time.Since(start).Round(time.Second), res.Meta.Errors,
					filepath.Join(out, matrix.MarkdownFile), filepath.Join(out, matrix.JSONFile), filepath.Join(out, matrix.HTMLFile),
					filepath.Join(out, report.IndexFile))
			}
			if err != nil {
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
	return cmd
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

// commandLine is the command as it could be typed again: the flags the user set, in a
// fixed order. A bool flag is written as --name (or --name=false): "--name true" would
// parse as the flag and a stray argument.
func commandLine(cmd *cobra.Command) string {
	parts := strings.Fields(cmd.CommandPath()) // "locklab bench jobs"
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Value.Type() == "bool" {
			if v := f.Value.String(); v == "true" {
				parts = append(parts, "--"+f.Name)
			} else {
				parts = append(parts, "--"+f.Name+"="+v)
			}
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		parts = append(parts, "--"+f.Name, shellQuote(v))
	})
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// progress reports finished runs on w: a line each, or one line rewritten in place when
// w is a terminal (runs that failed to run keep a line of their own there too).
type progress struct {
	w    io.Writer
	live bool
	open bool // a live line is on screen
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, live: isTerminal(w)}
}

func (p *progress) event(e matrix.Event) {
	if !p.live || e.Err != nil {
		if p.open {
			fmt.Fprint(p.w, "\r\033[K")
			p.open = false
		}
		fmt.Fprintln(p.w, e)
		return
	}
	fmt.Fprint(p.w, "\r\033[K", e)
	p.open = true
}

func (p *progress) end() {
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// updateReadme replaces the matrix table in the Markdown file readme with res, without
// links: the runs are under the output directory, not part of the document.
func updateReadme(readme string, res matrix.Result) error {
	return mdblock.Update(readme, report.MatrixMarkdown(res, false), matrixBegin, matrixEnd)
}
