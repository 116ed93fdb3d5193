package gate

import (
	"math"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestCheck: each threshold alone makes a result inconclusive, at its boundary exactly.
func TestCheck(t *testing.T) {
	th := Thresholds{MinDecided: 4, MaxPerturbed: 0.5}
	for _, c := range []struct {
		name   string
		counts Counts
		want   string // "" conclusive, else a piece of the error
	}{
		{"enough decided, none perturbed", Counts{Decided: 4, Runs: 2}, ""},
		{"nothing decided: every pair undecided", Counts{Undecided: 8, Runs: 2}, "0 claimed pairs decided (8 undecided"},
		{"too few decided", Counts{Decided: 3, Runs: 1}, "fewer than --min-decided 4"},
		{"half perturbed is allowed", Counts{Decided: 4, Runs: 4, PerturbedRuns: 2}, ""},
		{"more than half perturbed", Counts{Decided: 4, Runs: 5, PerturbedRuns: 3}, "3 of 5 runs perturbed"},
		{"every run perturbed", Counts{Perturbed: 8, Runs: 2, PerturbedRuns: 2}, "0 claimed pairs decided"},
	} {
		err := th.Check(c.counts, "claimed pairs")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want conclusive", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if err := (Thresholds{}).Check(Counts{}, "pairs"); err != nil {
		t.Errorf("zero thresholds on nothing: %v", err)
	}
}

// TestFlags: the flags default to the defaults, and bad values name their flag.
func TestFlags(t *testing.T) {
	var th Thresholds
	f := pflag.NewFlagSet("x", pflag.ContinueOnError)
	AddFlags(f, &th, "claimed pairs")
	if th != Defaults() || th.MinDecided < 1 {
		t.Fatalf("defaults %+v", th)
	}
	if err := f.Parse([]string{"--min-decided", "7", "--max-perturbed", "0.25"}); err != nil {
		t.Fatal(err)
	}
	if th != (Thresholds{MinDecided: 7, MaxPerturbed: 0.25}) || th.Validate() != nil {
		t.Errorf("parsed %+v", th)
	}
	for _, c := range []struct {
		th   Thresholds
		flag string
	}{
		{Thresholds{MinDecided: -1}, "--min-decided"},
		{Thresholds{MaxPerturbed: 1.5}, "--max-perturbed"},
		{Thresholds{MaxPerturbed: -0.1}, "--max-perturbed"},
		{Thresholds{MaxPerturbed: math.NaN()}, "--max-perturbed"},
	} {
		if err := c.th.Validate(); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%+v: %v, want an error naming %s", c.th, err, c.flag)
		}
	}
}
