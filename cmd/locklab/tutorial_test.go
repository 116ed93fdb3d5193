package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/report/tutorial"
	"github.com/locklab/locklab/timeline"
)

// TestTutorialTemplateExecutes executes docs/tutorial/tutorial.md.tmpl without servers:
// every experiment it asks for must name a scenario or plan that parses, with settings
// the plan takes, and every fencing mode it pictures must be one the experiment runs.
// make docs runs the same template on real servers.
func TestTutorialTemplateExecutes(t *testing.T) {
	reg := locks.All()
	o := tutorialOptions{root: filepath.Join("..", ".."), repeat: 1}
	svg := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(svg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(svg, timeline.File), []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	tu := &tutorial.Tutorial{
		Run: func(source string, settings []string) (*tutorial.Experiment, error) {
			e, _, err := o.prepare(reg, source, settings)
			if err != nil {
				return nil, err
			}
			if names[e.Name] {
				t.Errorf("two experiments are named %s: their pictures would overwrite each other", e.Name)
			}
			names[e.Name] = true
			for _, f := range e.Fencings {
				e.Runs[f] = []tutorial.ExperimentRun{{Dir: svg, Result: lin.Result{Verdict: lin.OK}}}
			}
			return e, nil
		},
		Pictures: t.TempDir(), Link: "tutorial", Root: o.root, Unchecked: true, // the runs are made up
	}
	var doc bytes.Buffer
	if err := tu.Write(&doc, filepath.Join(o.root, "docs", "tutorial", "tutorial.md.tmpl")); err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Errorf("the tutorial ran %d experiments, want every section's", len(names))
	}
	if !strings.Contains(doc.String(), "locklab run --scenario slow-grant --careless=false --fencing off,full") {
		t.Errorf("the careful slow-grant experiment's command is not as a reader would type it")
	}
}

func TestTutorialSettingsAreChecked(t *testing.T) {
	reg := locks.All()
	o := tutorialOptions{root: filepath.Join("..", ".."), repeat: 1}
	for _, c := range []struct {
		source   string
		settings []string
		want     string
	}{
		{"no-such-scenario", nil, "no-such-scenario"},
		{"pause-past-ttl", []string{"persistence"}, `setting "persistence" is not key=value`},
		{"pause-past-ttl", []string{"persistance=none"}, "persistance"},
		{"docs/tutorial/plans/missing.json", nil, "missing.json"},
	} {
		_, _, err := o.prepare(reg, c.source, c.settings)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("prepare(%s, %q) = %v, want an error naming %q", c.source, c.settings, err, c.want)
		}
	}
	e, p, err := o.prepare(reg, "failover-loss", []string{"name=x", "persistence=aof-always"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "x" || p.Persistence != "aof-always" || strings.Join(e.Fencings, ",") != "off,full" {
		t.Errorf("experiment %s, persistence %q, fencing %v", e.Name, p.Persistence, e.Fencings)
	}
}
