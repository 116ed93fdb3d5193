package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/report/tutorial"
	"github.com/locklab/locklab/runner"
)

func newTutorialCmd() *cobra.Command {
	var o tutorialOptions
	cmd := &cobra.Command{
		Use:   "tutorial",
		Short: "Run the tutorial's experiments and write docs/tutorial.md with their pictures and numbers",
		Long: `Tutorial executes the tutorial's template (docs/tutorial/tutorial.md.tmpl): every
experiment it asks for runs on real servers, --repeat times per fencing mode, and the
document gets the verdict counts, the checker's explanations, the narration and the
timeline of a representative run (copied into --pictures), and TLC's counterexamples from
tla/testdata. ` + "`make docs`" + ` runs it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			if o.repeat < 1 {
				return &statusError{exitError, fmt.Errorf("flag --repeat: %d runs per fencing mode; it must be at least 1", o.repeat)}
			}
			link, err := filepath.Rel(filepath.Dir(o.doc), o.pictures)
			if err != nil {
				return &statusError{exitError, fmt.Errorf("flags --doc and --pictures: %w", err)}
			}
			t := &tutorial.Tutorial{
				Run: func(source string, settings []string) (*tutorial.Experiment, error) {
					return o.experiment(cmd, reg, source, settings)
				},
				Pictures: o.pictures, Link: filepath.ToSlash(link), Root: o.root,
			}
			var doc bytes.Buffer
			if err := t.Write(&doc, o.template); err != nil {
				return &statusError{exitError, err}
			}
			if err := os.WriteFile(o.doc, doc.Bytes(), 0o644); err != nil {
				return &statusError{exitError, fmt.Errorf("write the tutorial: %w", err)}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (pictures in %s, runs in %s)\n", o.doc, o.pictures, o.out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.template, "template", filepath.Join("docs", "tutorial", "tutorial.md.tmpl"), "the tutorial's template (Go text/template)")
	f.StringVar(&o.doc, "doc", filepath.Join("docs", "tutorial.md"), "the document to write")
	f.StringVar(&o.pictures, "pictures", filepath.Join("docs", "tutorial"), "directory the timelines are copied into")
	f.StringVar(&o.out, "out", filepath.Join("out", "tutorial"), "directory for the run directories")
	f.StringVar(&o.root, "root", ".", "the repository's root (plan files and tla/testdata are relative to it)")
	f.IntVar(&o.repeat, "repeat", 3, "runs per experiment and fencing mode")
	f.DurationVar(&o.checkTimeout, "check-timeout", 0, "checker timeout per property (0: default)")
	return cmd
}

type tutorialOptions struct {
	template, doc, pictures, out, root string
	repeat                             int
	checkTimeout                       time.Duration
}

// experiment runs one experiment of the tutorial, repeat times per fencing mode.
func (o tutorialOptions) experiment(cmd *cobra.Command, reg *lockimpl.Registry, source string, settings []string) (*tutorial.Experiment, error) {
	e, p, err := o.prepare(reg, source, settings)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("experiment %q", source)
	dir := filepath.Join(o.out, e.Name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	for _, mode := range e.Fencings {
		for i := 1; i <= o.repeat; i++ {
			r, err := p.WithFencing(mode).Resolve(reg)
			if err != nil {
				return nil, fmt.Errorf("%s: fencing %s: %w", where, mode, err)
			}
			run := filepath.Join(dir, fmt.Sprintf("fencing-%s-%d", mode, i))
			fmt.Fprintf(cmd.ErrOrStderr(), "tutorial: %s, fencing %s, run %d of %d\n", e.Name, mode, i, o.repeat)
			rep, err := runner.Run(cmd.Context(), r, runner.Options{Dir: run, CheckTimeout: o.checkTimeout})
			if err != nil {
				return nil, fmt.Errorf("%s: fencing %s, run %d: %w", where, mode, i, err)
			}
			h, err := histories.Load(run)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			var story strings.Builder
			report.Narrate(&story, h)
			e.Runs[mode] = append(e.Runs[mode], tutorial.ExperimentRun{Dir: run, Result: rep.Result, Narration: story.String()})
		}
	}
	return e, nil
}

// prepare reads an experiment's plan: source (a catalog scenario, or a plan file when it
// ends in .json) with settings laid over it; the experiment has its name, command and
// fencing modes, and no runs yet.
func (o tutorialOptions) prepare(reg *lockimpl.Registry, source string, settings []string) (*tutorial.Experiment, plan.Plan, error) {
	where := fmt.Sprintf("experiment %q", source)
	var (
		p       plan.Plan
		err     error
		command []string
	)
	if strings.HasSuffix(source, ".json") {
		p, err = plan.Read(filepath.Join(o.root, source), reg)
		command = []string{"locklab run --plan", source}
	} else {
		p, err = plan.Scenario(source, reg)
		command = []string{"locklab run --scenario", source}
	}
	if err != nil {
		return nil, p, fmt.Errorf("%s: %w", where, err)
	}
	e := &tutorial.Experiment{Name: p.Name, Description: p.Description, Runs: map[string][]tutorial.ExperimentRun{}}
	var set []string
	for _, kv := range settings {
		key, val, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return nil, p, fmt.Errorf("%s: setting %q is not key=value", where, kv)
		case key == "name":
			e.Name = val
		case key == "fencing":
			e.Fencings = strings.Split(val, ",")
		default:
			set = append(set, kv)
			switch val {
			case "true":
				command = append(command, "--"+key)
			case "false":
				command = append(command, "--"+key+"=false")
			default:
				command = append(command, "--"+key, val)
			}
		}
	}
	if p, err = p.With(set, where+" settings "+strings.Join(set, " "), reg); err != nil {
		return nil, p, fmt.Errorf("%s: %w", where, err)
	}
	if len(e.Fencings) == 0 {
		e.Fencings = []string{"off"}
		if impl, err := reg.Get(p.Impl); err == nil && impl.Fencing {
			e.Fencings = append(e.Fencings, "full")
		}
	}
	e.Command = strings.Join(append(command, "--fencing", strings.Join(e.Fencings, ",")), " ")
	return e, p, nil
}
