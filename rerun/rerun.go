// Package rerun runs one plan again, several times, and says what the runs decided:
// campaign's and assess's confirmations on another lock or release (Repeat, Tally), and
// the label a finding gets from another release of its library (Compare: also in, fixed
// in, undecided).
package rerun

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/releases"
	"github.com/locklab/locklab/runner"
)

// Comparison is a finding's plan run on another release of its library (campaign
// --compare-with, assess with several releases): what each property the finding broke
// did there.
type Comparison struct {
	With       string               `json:"with"` // the other release, NAME@VERSION
	Runs       int                  `json:"runs"` // runs of the plan on With
	Perturbed  int                  `json:"perturbed,omitempty"`
	Properties []PropertyComparison `json:"properties"` // each property the finding broke
	Label      string               `json:"label"`      // Fixed, Also or Undecided
	Why        string               `json:"why,omitempty"`
	Dir        string               `json:"dir,omitempty"` // the first run on With that broke one, else the first run
}

// PropertyComparison is what one property did in a Comparison's runs.
type PropertyComparison struct {
	Property lin.Property `json:"property"`
	Violated int          `json:"violated"` // runs that broke it
	Held     int          `json:"held"`     // runs that decided it held
	Label    string       `json:"label"`    // Also: broken again; Fixed: held in every decided run, at least two
}

// Labels of a Comparison: Fixed when some property the finding broke held on the other
// release in every decided run (at least two): the finding, as it is, is not there;
// Also when every one broke again; else Undecided.
const (
	Also      = "also in"
	Fixed     = "fixed in"
	Undecided = "undecided"
)

// String is the label with its evidence: "fixed in node-redlock@4.0.0: P6 held in 3 of 3
// runs; P1 broke in 1 of 3".
func (c *Comparison) String() string {
	if c.Why != "" && c.Label == Undecided {
		return fmt.Sprintf("undecided in %s: %s", c.With, c.Why)
	}
	var parts []string
	for _, p := range c.Properties {
		if p.Label == Also {
			parts = append(parts, fmt.Sprintf("%s broke in %d of %d runs", p.Property, p.Violated, c.Runs))
		} else {
			parts = append(parts, fmt.Sprintf("%s held in %d of %d runs", p.Property, p.Held, c.Runs))
		}
	}
	if c.Perturbed > 0 {
		parts = append(parts, fmt.Sprintf("%d perturbed", c.Perturbed))
	}
	label := c.Label
	if label == Undecided {
		label += " in"
	}
	return fmt.Sprintf("%s %s: %s", label, c.With, strings.Join(parts, "; "))
}

// CompareRuns is how many times a finding's plan runs on the release compared with.
const CompareRuns = 3

// CheckCompareWith says whether other is a release a campaign of impls can run its
// failures on: NAME@VERSION of a library one of impls runs.
func CheckCompareWith(reg *lockimpl.Registry, other string, impls []string) error {
	lib, _, err := releases.Parse(other)
	if err != nil {
		return fmt.Errorf("compare with %s: %w", other, err)
	}
	if !slices.ContainsFunc(impls, func(n string) bool { return SameLibrary(n, other) }) {
		return fmt.Errorf("compare with %s: no implementation of the campaign runs %s (it runs %s); name one with --impl, e.g. %s@VERSION",
			other, lib.Package, strings.Join(impls, ", "), lib.Impl)
	}
	if _, err := reg.Get(other); err != nil {
		return fmt.Errorf("compare with %s: %w", other, err)
	}
	return nil
}

// SameLibrary reports whether a failure of impl is re-run on other: another release (or
// the pinned one) of the same library.
func SameLibrary(impl, other string) bool {
	base, _, _ := releases.Split(impl)
	obase, _, _ := releases.Split(other)
	return impl != other && base == obase
}

// Compare labels what the runs t of a finding's plan on the release with did with the
// properties props the finding broke (see the labels). Dir is the first run that broke
// one of them, else the first run.
func Compare(with string, props []lin.Property, t Tally) *Comparison {
	c := &Comparison{With: with, Runs: t.Runs, Perturbed: t.Perturbed, Why: t.Why, Label: Undecided}
	also := len(props) > 0
	for _, prop := range props {
		pc := PropertyComparison{Property: prop, Violated: t.Violated[prop], Held: t.Held[prop], Label: Undecided}
		switch {
		case pc.Violated > 0:
			pc.Label = Also
			if c.Dir == "" {
				c.Dir = t.FirstViolating(prop)
			}
		case pc.Held >= 2 && t.Why == "":
			pc.Label = Fixed
		}
		also = also && pc.Label == Also
		if pc.Label == Fixed {
			c.Label = Fixed
		}
		c.Properties = append(c.Properties, pc)
	}
	if also {
		c.Label = Also
	}
	if c.Dir == "" && len(t.Dirs) > 0 {
		c.Dir = t.Dirs[0]
	}
	return c
}

// Tally is what runs of one plan decided, per property.
type Tally struct {
	Runs      int
	Held      map[lin.Property]int
	Violated  map[lin.Property]int
	Perturbed int
	Why       string   // set when the plan could not be run
	Dirs      []string // the runs' directories, in order
	violating map[lin.Property]string
}

// FirstViolating is the directory of the first run that broke prop, or "".
func (t Tally) FirstViolating(prop lin.Property) string { return t.violating[prop] }

// Repeat runs p n times into dir/0, dir/1, …, each resolved afresh (a resolved plan's
// faults fire once), and counts the verdicts; a perturbed run counts for nothing. before,
// when set, is asked before each run and stops the runs when it says no. A plan the
// implementation cannot play, or a run that fails to run, ends the runs with Why set.
func Repeat(ctx context.Context, reg *lockimpl.Registry, p plan.Plan, n int, dir string, o runner.Options, before func(k int) bool) Tally {
	t := Tally{Held: map[lin.Property]int{}, Violated: map[lin.Property]int{}, violating: map[lin.Property]string{}}
	for k := range n {
		if ctx.Err() != nil {
			t.Why = "interrupted before these runs"
			break
		}
		if before != nil && !before(k) {
			break
		}
		r, err := p.Resolve(reg)
		if err != nil {
			t.Why = fmt.Sprintf("it cannot play this plan: %v", err)
			return t
		}
		o.Dir = filepath.Join(dir, strconv.Itoa(k))
		rep, err := runner.Run(ctx, r, o)
		if err != nil && !errors.Is(err, runner.ErrEndedEarly) {
			if ctx.Err() != nil {
				t.Why = "interrupted"
			} else {
				t.Why = fmt.Sprintf("its run failed to run: %v", err)
			}
			return t
		}
		t.Runs++
		t.Dirs = append(t.Dirs, o.Dir)
		if rep.Perturbed != "" {
			t.Perturbed++
			continue
		}
		for _, pr := range rep.Result.Properties {
			switch pr.Verdict {
			case lin.OK:
				t.Held[pr.Property]++
			case lin.Illegal:
				t.Violated[pr.Property]++
				if t.violating[pr.Property] == "" {
					t.violating[pr.Property] = o.Dir
				}
			}
		}
	}
	return t
}
