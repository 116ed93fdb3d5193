package campaign

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/rerun"
	"github.com/locklab/locklab/runner"
)

// Shows is what a run's violations are made of, one entry per illegal property in report
// order: "P6: extend ok after another's grant" (the property and its lin shape).
func Shows(r lin.Result) []string {
	var out []string
	for _, pr := range r.Properties {
		if pr.Verdict != lin.Illegal {
			continue
		}
		s := string(pr.Property)
		if pr.Shape != "" {
			s += ": " + pr.Shape
		}
		out = append(out, s)
	}
	return out
}

// kindOf is what a failure shows, the key findings are grouped, confirmed and shrunk by:
// its lock, the violations' shapes and the fault kinds of its plan. Two failures of a
// kind break the same properties the same way under the same kinds of fault; a lost
// update under a pause and an impossible extend ok under the same pause are two kinds.
func kindOf(impl string, shows []string, faults string) string {
	return fmt.Sprintf("%s · %s · faults %s", impl, strings.Join(shows, " + "), faults)
}

// Kind is the failures of one kind: the first taken up stands for the others.
type Kind struct {
	Kind   string   `json:"kind"`
	Impl   string   `json:"impl"`
	Shows  []string `json:"shows"`
	Faults string   `json:"faults"`
	Safe   bool     `json:"safe_configuration,omitempty"`
	Runs   []int    `json:"runs"` // its failing runs
	// Taken is the run confirmed (and shrunk) for the kind, -1 when none reproduced.
	Taken   int               `json:"taken"`
	Compare *rerun.Comparison `json:"compare,omitempty"`
}

// compare runs the plan of a confirmed failure on the other release and labels it by
// the properties the failure broke.
func (s *searcher) compare(ctx context.Context, i int, p plan.Plan, props []lin.Property) *rerun.Comparison {
	rp := p
	rp.Impl = s.o.CompareWith
	dir := filepath.Join(s.o.Out, CompareDir, fmt.Sprintf("%05d", i))
	s.emit(fmt.Sprintf("#%05d: running its plan on %s", i, s.o.CompareWith), nil)
	t := rerun.Repeat(ctx, s.o.Registry, rp, rerun.CompareRuns, dir, runner.Options{Backend: s.o.Backend, CheckTimeout: s.o.CheckTimeout, Pictures: s.kept}, nil)
	s.mu.Lock()
	s.sum.Reruns += t.Runs
	s.mu.Unlock()
	c := rerun.Compare(s.o.CompareWith, props, t)
	c.Dir = s.rel(c.Dir)
	return c
}
