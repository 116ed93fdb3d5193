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

// TestCompareLabels: fixed in when some property the finding broke held in every decided
// run (at least two), also in when every one broke again, else undecided; with the
// evidence in words and the first run that broke one.
func TestCompareLabels(t *testing.T) {
	tally := func(p1held, p1viol, p6held, p6viol, perturbed int, why string) Tally {
		t := Tally{Runs: 3, Held: map[lin.Property]int{lin.P1: p1held, lin.P6: p6held}, Violated: map[lin.Property]int{lin.P1: p1viol, lin.P6: p6viol},
			Perturbed: perturbed, Why: why, Dirs: []string{"d/0", "d/1", "d/2"}, violating: map[lin.Property]string{}}
		if p1viol > 0 {
			t.violating[lin.P1] = "d/2"
		}
		if p6viol > 0 {
			t.violating[lin.P6] = "d/1"
		}
		return t
	}
	both := []lin.Property{lin.P1, lin.P6}
	for _, c := range []struct {
		t     Tally
		props []lin.Property
		label string
		says  string
		dir   string
	}{
		{tally(0, 3, 2, 1, 0, ""), both, Also, "also in x@2: P1 broke in 3 of 3 runs; P6 broke in 1 of 3 runs", "d/2"},
		{tally(0, 3, 3, 0, 0, ""), both, Fixed, "fixed in x@2: P1 broke in 3 of 3 runs; P6 held in 3 of 3 runs", "d/2"},
		{tally(0, 0, 3, 0, 0, ""), []lin.Property{lin.P6}, Fixed, "fixed in x@2: P6 held in 3 of 3 runs", "d/0"},
		{tally(0, 3, 1, 0, 2, ""), both, Undecided, "undecided in x@2: P1 broke in 3 of 3 runs; P6 held in 1 of 3 runs; 2 perturbed", "d/2"},
		{tally(0, 0, 2, 0, 0, "its run failed to run: boom"), []lin.Property{lin.P6}, Undecided, "undecided in x@2: its run failed to run: boom", "d/0"},
	} {
		got := Compare("x@2", c.props, c.t)
		if got.Label != c.label || got.String() != c.says || got.Dir != c.dir {
			t.Errorf("%+v: %q %q %q, want %q %q %q", c.t, got.Label, got.String(), got.Dir, c.label, c.says, c.dir)
		}
	}
	if !SameLibrary("redsync", "redsync@v4.12.1") || !SameLibrary("redsync@v4.12.0", "redsync@v4.12.1") ||
		SameLibrary("redsync@v4.12.1", "redsync@v4.12.1") || SameLibrary("redsync-process", "redsync@v4.12.1") {
		t.Error("SameLibrary: another release of the same library only")
	}
}
