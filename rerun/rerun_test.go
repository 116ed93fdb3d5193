package rerun

import (
	"strings"
	"testing"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
)

// TestCompareWithIsChecked: only another release of a library the campaign runs.
func TestCompareWithIsChecked(t *testing.T) {
	reg := locks.All()
	for _, c := range []struct {
		with  string
		impls []string
		err   string
	}{
		{"node-redlock", []string{"node-redlock@3.1.2"}, "want NAME@VERSION"},
		{"redsync@v4.12.1", []string{"node-redlock@3.1.2"}, "no implementation of the campaign runs github.com/go-redsync/redsync/v4"},
		{"node-redlock@4.0.0", []string{"node-redlock@4.0.0"}, "no implementation of the campaign runs redlock"},
		{"setnx@1.0.0", []string{"setnx"}, "runs no library"},
	} {
		err := CheckCompareWith(reg, c.with, c.impls)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s with %v: %v, want %q", c.with, c.impls, err, c.err)
		}
	}
}

// TestCompareLabels: broken again in a run is "also in", held in every decided run (at
// least two) "fixed in", anything less undecided, with the evidence in words.
func TestCompareLabels(t *testing.T) {
	tally := func(held, violated, perturbed int, why string) Tally {
		t := Tally{Runs: held + violated + perturbed, Held: map[lin.Property]int{lin.P6: held}, Violated: map[lin.Property]int{lin.P6: violated},
			Perturbed: perturbed, Why: why, Dirs: []string{"d/0", "d/1", "d/2"}, violating: map[lin.Property]string{}}
		if violated > 0 {
			t.violating[lin.P6] = "d/1"
		}
		return t
	}
	for _, c := range []struct {
		t     Tally
		label string
		says  string
		dir   string
	}{
		{tally(2, 1, 0, ""), Also, "also in x@2 (P6 broke in 1 of 3 runs)", "d/1"},
		{tally(3, 0, 0, ""), Fixed, "fixed in x@2 (P6 held in 3 of 3 runs)", "d/0"},
		{tally(1, 0, 2, ""), Undecided, "undecided in x@2: 1 of 3 runs decided P6, 2 perturbed", "d/0"},
		{tally(2, 0, 0, "its run failed to run: boom"), Undecided, "undecided in x@2: its run failed to run: boom", "d/0"},
	} {
		got := Compare("x@2", lin.P6, c.t)
		if got.Label != c.label || got.String() != c.says || got.Dir != c.dir {
			t.Errorf("%+v: %q %q %q, want %q %q %q", c.t, got.Label, got.String(), got.Dir, c.label, c.says, c.dir)
		}
	}
	if !SameLibrary("redsync", "redsync@v4.12.1") || !SameLibrary("redsync@v4.12.0", "redsync@v4.12.1") ||
		SameLibrary("redsync@v4.12.1", "redsync@v4.12.1") || SameLibrary("redsync-process", "redsync@v4.12.1") {
		t.Error("SameLibrary: another release of the same library only")
	}
}
