// Package gate is the rule that says whether a campaign, a merge of campaign shards, a
// verdict matrix or the detection benchmark decided enough to be evidence: a result that
// decided fewer than MinDecided (plan, property) pairs, or whose runs were perturbed
// (the harness stalled) in a larger share than MaxPerturbed, is inconclusive, neither a
// pass nor a failure. It owns the two flags that set the rule. It imports nothing of
// locklab's, so that every result can be measured by it.
package gate

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Defaults of the flags: a result that decided nothing, or whose runs were mostly
// perturbed, is inconclusive.
const (
	DefaultMinDecided   = 1
	DefaultMaxPerturbed = 0.5
)

// Thresholds are what a result must decide to be conclusive.
type Thresholds struct {
	MinDecided   int     `json:"min_decided"`   // (plan, property) pairs decided, at least
	MaxPerturbed float64 `json:"max_perturbed"` // share of the runs perturbed, at most (0 to 1)
}

// Defaults are the flags' defaults.
func Defaults() Thresholds {
	return Thresholds{MinDecided: DefaultMinDecided, MaxPerturbed: DefaultMaxPerturbed}
}

// Counts is what a result decided: (plan, property) pairs by outcome, and runs.
type Counts struct {
	Decided   int `json:"decided"`   // pairs the checkers found held or violated
	Undecided int `json:"undecided"` // pairs a checker ran out of time on
	Perturbed int `json:"perturbed"` // pairs of perturbed runs: not counted either way
	Runs      int `json:"runs"`      // runs that ran to a verdict, the perturbed ones included
	// PerturbedRuns are the runs whose harness stalled.
	PerturbedRuns int `json:"perturbed_runs"`
}

// Add adds d to c.
func (c *Counts) Add(d Counts) {
	c.Decided += d.Decided
	c.Undecided += d.Undecided
	c.Perturbed += d.Perturbed
	c.Runs += d.Runs
	c.PerturbedRuns += d.PerturbedRuns
}

// String is the counts in words, as summaries print them.
func (c Counts) String() string {
	return fmt.Sprintf("%d pairs decided, %d undecided, %d in perturbed runs; %d of %d runs perturbed",
		c.Decided, c.Undecided, c.Perturbed, c.PerturbedRuns, c.Runs)
}

// Validate checks thresholds as typed, naming the flag at fault.
func (t Thresholds) Validate() error {
	if t.MinDecided < 0 {
		return fmt.Errorf("flag --min-decided: must not be negative, got %d", t.MinDecided)
	}
	if t.MaxPerturbed < 0 || t.MaxPerturbed > 1 || t.MaxPerturbed != t.MaxPerturbed {
		return fmt.Errorf("flag --max-perturbed: want a share from 0 to 1, got %v", t.MaxPerturbed)
	}
	return nil
}

// Check returns nil when c is conclusive under t, else an error saying which threshold
// it missed; pairs names what was counted ("claimed pairs").
func (t Thresholds) Check(c Counts, pairs string) error {
	if c.Decided < t.MinDecided {
		return fmt.Errorf("inconclusive: %d %s decided (%d undecided, %d in perturbed runs), fewer than --min-decided %d",
			c.Decided, pairs, c.Undecided, c.Perturbed, t.MinDecided)
	}
	if c.Runs > 0 && float64(c.PerturbedRuns) > t.MaxPerturbed*float64(c.Runs) {
		return fmt.Errorf("inconclusive: %d of %d runs perturbed (the harness stalled), more than --max-perturbed %v of them",
			c.PerturbedRuns, c.Runs, t.MaxPerturbed)
	}
	return nil
}

// AddFlags adds --min-decided and --max-perturbed, set to the defaults, to f; pairs says
// what --min-decided counts.
func AddFlags(f *pflag.FlagSet, t *Thresholds, pairs string) {
	*t = Defaults()
	f.IntVar(&t.MinDecided, "min-decided", DefaultMinDecided, "exit 3 (inconclusive) when fewer than this many "+pairs+" were decided (held or violated; not undecided, not in perturbed runs)")
	f.Float64Var(&t.MaxPerturbed, "max-perturbed", DefaultMaxPerturbed, "exit 3 (inconclusive) when more than this share (0 to 1) of the runs were perturbed")
}
