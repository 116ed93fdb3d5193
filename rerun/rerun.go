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

// Comparison is a finding's plan run on another release of its library
// (SearchOptions.CompareWith): whether the property it was confirmed on breaks there too.
type Comparison struct {
	With      string       `json:"with"`     // the other release, NAME@VERSION
	Property  lin.Property `json:"property"` // the finding's target
	Runs      int          `json:"runs"`     // runs of the plan on With
	Violated  int          `json:"violated"` // of those, the ones that broke Property
	Held      int          `json:"held"`     // ... and the ones that decided it held
	Perturbed int          `json:"perturbed,omitempty"`
	Label     string       `json:"label"` // Also, Fixed or Undecided
	Why       string       `json:"why,omitempty"`
	Dir       string       `json:"dir,omitempty"` // the first run on With that broke it, else the first run
}

// Labels of a Comparison.
const (
	Also      = "also in"   // the other release broke the property on the plan too
	Fixed     = "fixed in"  // it held it in every decided run, at least two
	Undecided = "undecided" // too few decided runs to say either
)

// String is the label with its evidence: "fixed in redsync@v4.12.1 (P1 held in 2 of 2 runs)".
func (c *Comparison) String() string {
	switch c.Label {
	case Also:
		return fmt.Sprintf("also in %s (%s broke in %d of %d runs)", c.With, c.Property, c.Violated, c.Runs)
	case Fixed:
		return fmt.Sprintf("fixed in %s (%s held in %d of %d runs)", c.With, c.Property, c.Held, c.Runs)
	}
	why := c.Why
	if why == "" {
		why = fmt.Sprintf("%d of %d runs decided %s, %d perturbed", c.Held+c.Violated, c.Runs, c.Property, c.Perturbed)
	}
	return fmt.Sprintf("undecided in %s: %s", c.With, why)
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
// property prop the finding broke: also in (broken again in a run), fixed in (held in
// every decided run, at least two), else undecided. Dir is the first run that broke it,
// else the first run.
func Compare(with string, prop lin.Property, t Tally) *Comparison {
	c := &Comparison{With: with, Property: prop, Label: Undecided,
		Runs: t.Runs, Violated: t.Violated[prop], Held: t.Held[prop], Perturbed: t.Perturbed, Why: t.Why}
	if d := t.FirstViolating(prop); d != "" {
		c.Dir = d
	} else if len(t.Dirs) > 0 {
		c.Dir = t.Dirs[0]
	}
	switch {
	case c.Violated > 0:
		c.Label = Also
	case c.Why != "":
	case c.Held >= 2:
		c.Label = Fixed
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
