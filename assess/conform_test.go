package assess

import (
	"io"
	"testing"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/locks"
)

// TestConform runs the conformance checks on real Redis: the textbook lock passes every
// one; the mutants fail the one their bug breaks, by construction (the checks order the
// steps, they do not race them).
func TestConform(t *testing.T) {
	reg := locks.All()
	b := clustertest.Backend(t)
	for _, c := range []struct {
		impl   string
		failed string // the check that must fail, "" for none
	}{
		{"setnx", ""},
		{"unsafe-release", "release-and-extend-check-ownership"},
		{"no-expiry", "unknown-outcome"},
	} {
		t.Run(c.impl, func(t *testing.T) {
			impl, err := reg.Get(c.impl)
			if err != nil {
				t.Fatal(err)
			}
			checks, err := Conform(clustertest.Context(t), b, impl, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if len(checks) != len(conformances()) {
				t.Fatalf("%d checks, want %d", len(checks), len(conformances()))
			}
			for _, ch := range checks {
				want := CheckPassed
				if ch.Name == c.failed {
					want = CheckFailed
				}
				if ch.Status != want {
					t.Errorf("%s: %s (%s), want %s", ch.Name, ch.Status, ch.Detail, want)
				}
				if ch.Status == CheckFailed && (ch.Detail == "" || conformAdvice(ch.Name) == "") {
					t.Errorf("%s failed without words or advice", ch.Name)
				}
			}
		})
	}
}
