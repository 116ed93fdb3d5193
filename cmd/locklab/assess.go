package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/assess"
	"github.com/locklab/locklab/internal/cmdline"
	"github.com/locklab/locklab/internal/gate"
	"github.com/locklab/locklab/internal/liveline"
	"github.com/locklab/locklab/report"
)

func newAssessCmd() *cobra.Command {
	var (
		impls, kinds, failOn []string
		scenarios            []string
		budget, checkTimeout time.Duration
		repeat, parallel     int
		seed                 int64
		out, backend         string
		th                   gate.Thresholds
	)
	cmd := &cobra.Command{
		Use:   "assess",
		Short: "Judge a lock in one command: conformance, its catalog row beside its family's reference, a campaign, and a verdict per finding",
		Long: `Assess answers "is this lock safe, and under what?" for each lock of --impl (any
registered implementation, or a client registered with --impl-cmd or --locks):

 1. conformance: black-box checks every lock client can take (a held lock refuses a
    second client; a holder whose lease expired cannot release or extend the new
    holder's lock; a lease whose holder is gone expires; an acquire no server answered
    is unknown, and what it may have taken expires);
 2. its row of the catalog, fencing off and full, --repeat runs per cell, beside the
    same row of its family's reference lock;
 3. a random campaign for what is left of --budget, findings confirmed and shrunk;
 4. a class for every violated property: inherent (the family's reference breaks on the
    same plan too: every lock of the family does), avoidable (the reference held it on
    the same plan), or unexpected (a rule of the models claims it for a lock of this
    family, or a conformance check failed); and what to do, in one line.

The family (lease, renewing, redlock, consensus; with fencing tokens or not) comes from
the lock's registration: its topology, whether it renews, whether its hello says it
fences. A client that renews its leases by itself says so with --kind NAME=renewing.

It writes report.html (self-contained: a card per lock, each finding with its picture,
plan and replay command), report.json and junit.xml into --out, with the runs under
catalog/, campaign/ and references/.

Exit status: 0 no finding of a class in --fail-on, 1 a finding of a class in --fail-on
(default unexpected,avoidable), 2 an error, an interruption, a run that failed to run,
or an inconclusive assessment (fewer than --min-decided (run, property) pairs decided,
or more than --max-perturbed of the runs perturbed).`,
		Example: `  locklab assess --impl redislock
  locklab assess --impl setnx,fenced,watchdog --budget 20m --out out/assess
  locklab assess --impl mylock --impl-cmd 'mylock=node clients/templates/node/adapter.mjs ./lock.mjs' --budget 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := th.Validate(); err != nil {
				return &statusError{exitError, err}
			}
			impls = campaignTrim(impls)
			if len(impls) == 0 {
				return &statusError{exitError, errors.New("flag --impl: name the lock to assess (see locklab list)")}
			}
			if budget <= 0 {
				return &statusError{exitError, fmt.Errorf("flag --budget: want a positive duration, got %s", budget)}
			}
			for _, c := range []struct {
				flag string
				v    int
			}{{"repeat", repeat}, {"parallel", parallel}} {
				if c.v < 1 {
					return &statusError{exitError, fmt.Errorf("flag --%s: want at least 1, got %d", c.flag, c.v)}
				}
			}
			var classes []assess.Class
			for _, s := range campaignTrim(failOn) {
				if s == "none" {
					classes = []assess.Class{}
					continue
				}
				c, err := assess.ParseClass(s)
				if err != nil {
					return &statusError{exitError, fmt.Errorf("flag --fail-on: %w", err)}
				}
				classes = append(classes, c)
			}
			kindOf, err := parseKinds(kinds, impls)
			if err != nil {
				return &statusError{exitError, err}
			}
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			bar := &assessBar{line: liveline.New(cmd.ErrOrStderr())}
			rep, err := assess.Run(cmd.Context(), assess.Options{
				Registry: reg, Impls: impls, Kinds: kindOf, Budget: budget, Repeat: repeat, Parallel: parallel,
				Seed: seed, Out: out, Backend: backend, Scenarios: campaignTrim(scenarios), FailOn: classes, CheckTimeout: checkTimeout, Thresholds: th,
				Command: cmdline.Of(cmd), Register: registration(cmd), Progress: bar.update,
				RenderCampaign: report.WriteCampaign, RenderMatrix: report.WriteMatrix,
			})
			bar.line.End()
			var oe *assess.OptionError
			if errors.As(err, &oe) {
				return &statusError{exitError, fmt.Errorf("flag --%s: %w", assessFlag(oe.Option), oe.Err)}
			}
			if rep != nil {
				if werr := report.WriteAssess(out, rep); werr != nil {
					err = errors.Join(err, werr)
				}
				report.AssessText(cmd.OutOrStdout(), out, rep)
			}
			switch {
			case err != nil:
				return &statusError{exitError, err}
			case rep.Failed():
				return &statusError{exitViolation, nil}
			case rep.Inconclusive != "":
				return &statusError{exitError, errors.New("assess " + rep.Inconclusive)}
			case len(rep.Errors) > 0:
				return &statusError{exitError, fmt.Errorf("assess: %s", strings.Join(rep.Errors, "; "))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&impls, "impl", nil, "the locks to assess (see locklab list; --impl-cmd and --locks register your own)")
	f.StringSliceVar(&kinds, "kind", nil, "NAME=KIND: the kind of a registered client its hello cannot say (lease, renewing, redlock, consensus); KIND alone for the only --impl")
	f.DurationVar(&budget, "budget", assess.DefaultBudget, "the whole assessment's time; the random campaign takes what the conformance checks and the catalog leave")
	f.IntVar(&repeat, "repeat", 1, "runs per catalog cell, and of the reference and the lock on each campaign finding's plan (at least 3 there)")
	f.IntVar(&parallel, "parallel", 2, "runs at the same time, each on servers of its own")
	f.StringSliceVar(&scenarios, "scenario", nil, "limit the catalog row to these scenarios (default: every one that applies; see locklab list)")
	f.Int64Var(&seed, "seed", 1, "the campaign's seed")
	f.StringVar(&out, "out", filepath.Join("out", "assess"), "directory for report.html, report.json, junit.xml and the runs")
	f.StringVar(&backend, "backend", "", `what runs the catalog's servers: "process" or "docker" (default: each scenario's own)`)
	f.StringSliceVar(&failOn, "fail-on", []string{string(assess.Unexpected), string(assess.Avoidable)}, "classes of finding that make the exit status 1: unexpected, avoidable, inherent, or none")
	f.DurationVar(&checkTimeout, "check-timeout", 0, "checker timeout per property (0: default); a timeout shows as ?, never as a pass")
	gate.AddFlags(f, &th, "(run, property) pairs")
	return cmd
}

// parseKinds reads --kind values: NAME=KIND, or KIND alone when one lock is assessed.
func parseKinds(values, impls []string) (map[string]assess.Kind, error) {
	out := map[string]assess.Kind{}
	for _, v := range values {
		name, kind, ok := strings.Cut(v, "=")
		if !ok {
			if len(impls) != 1 {
				return nil, fmt.Errorf("flag --kind %q: want NAME=KIND when several locks are assessed", v)
			}
			name, kind = impls[0], v
		}
		k, err := assess.ParseKind(strings.TrimSpace(kind))
		if err != nil {
			return nil, fmt.Errorf("flag --kind %q: %w", v, err)
		}
		out[strings.TrimSpace(name)] = k
	}
	return out, nil
}

func assessFlag(option string) string {
	switch option {
	case "impls":
		return "impl"
	case "scenarios":
		return "scenario"
	}
	return option
}

// registration is the flags of cmd that register lock clients, as typed: what a replay
// command needs to find the same locks.
func registration(cmd *cobra.Command) string {
	var parts []string
	if vals, err := cmd.Flags().GetStringArray(flagImplCmd); err == nil {
		for _, v := range vals {
			parts = append(parts, "--"+flagImplCmd, cmdline.Quote(v))
		}
	}
	if path, _ := cmd.Flags().GetString(flagLocks); path != "" {
		parts = append(parts, "--"+flagLocks, cmdline.Quote(path))
	}
	return strings.Join(parts, " ")
}

// assessBar is the progress of an assessment: a bar of the budget redrawn in place on a
// terminal, else a line per stage.
type assessBar struct {
	line  *liveline.Line
	stage string
}

func (b *assessBar) update(p assess.Progress) {
	if !b.line.Live() {
		if p.Stage != b.stage {
			b.line.Print(fmt.Sprintf("assess: %s (%s of %s)", p.Stage, p.Elapsed.Round(time.Second), p.Budget))
			b.stage = p.Stage
		}
		return
	}
	const width = 30
	done := min(width, int(float64(width)*p.Elapsed.Seconds()/max(p.Budget.Seconds(), 1)))
	count := fmt.Sprint(p.Done)
	if p.Total > 0 {
		count = fmt.Sprintf("%d/%d", p.Done, p.Total)
	}
	note := p.Note
	if len(note) > 60 {
		note = note[:60] + "…"
	}
	b.line.Show(fmt.Sprintf("[%s%s] %s/%s %s %s · %d findings · %s", strings.Repeat("=", done), strings.Repeat(" ", width-done),
		p.Elapsed.Round(time.Second), p.Budget, p.Stage, count, p.Findings, note))
}
