package campaign

import (
	"context"
	"slices"
	"strings"
	"testing"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/releases"
	"github.com/locklab/locklab/rerun"
)

// TestCompareLabelsAFindingOnAnotherRelease runs a recorded bug's plan (npm redlock 3.1.2
// answers a late release ok, P6; the holder's stall breaks P1 on every release) as a
// campaign's confirmed failure of P1 and P6 compared with another release: 4.0.0 refuses
// the late release (fixed in: P6 held, P1 broke), 3.1.1 answers it ok too (also in: both
// broke). The plan makes the late release by construction, so each label is certain.
func TestCompareLabelsAFindingOnAnotherRelease(t *testing.T) {
	ctx := context.Background()
	reg := locks.All()
	reg.SetResolver(releases.Resolver(ctx, reg))
	p, err := plan.Read("../docs/track-record/node-redlock-unlock-votes-missing-keys.json", reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		with, label string
		p6          string // P6's own label
	}{{"node-redlock@4.0.0", rerun.Fixed, rerun.Fixed}, {"node-redlock@3.1.1", rerun.Also, rerun.Also}} {
		t.Run(c.with, func(t *testing.T) {
			t.Parallel()
			o := SearchOptions{Registry: reg, CompareWith: c.with, Out: t.TempDir(), CheckTimeout: DefaultCheckTimeout}
			if err := rerun.CheckCompareWith(reg, c.with, []string{p.Impl}); err != nil {
				t.Fatal(err)
			}
			s := &searcher{o: o, sum: newSummary(o, Space{})}
			got := s.compare(ctx, 7, p, []lin.Property{lin.P1, lin.P6})
			if got.Label != c.label || got.Runs != rerun.CompareRuns || len(got.Properties) != 2 {
				t.Fatalf("%s: %+v, want %q after %d runs", c.with, got, c.label, rerun.CompareRuns)
			}
			if p1, p6 := got.Properties[0], got.Properties[1]; p1.Label != rerun.Also || p6.Label != c.p6 {
				t.Errorf("%s: P1 %q, P6 %q, want %q and %q (%s)", c.with, p1.Label, p6.Label, rerun.Also, c.p6, got)
			}
			if !strings.HasPrefix(got.String(), c.label+" "+c.with) || got.Dir == "" {
				t.Errorf("%q (dir %q)", got.String(), got.Dir)
			}
			if s.sum.Reruns != rerun.CompareRuns {
				t.Errorf("%d re-runs counted, want %d", s.sum.Reruns, rerun.CompareRuns)
			}
		})
	}
}

// TestKindsGroupByWhatFailuresShow: the same properties broken in another way, or under
// other fault kinds, are kinds of their own; the first reproduced failure is taken up.
func TestKindsGroupByWhatFailuresShow(t *testing.T) {
	pause := []string{"P1: acquire ok while another believed", "P2: write ok"}
	late := []string{"P1: acquire ok while another believed", "P6: extend ok after another's grant"}
	f := func(run int, shows []string, faults string, reproduced int) *Failure {
		return &Failure{Run: run, Impl: "node-redlock@3.1.2", Faults: faults, Shows: shows, Kind: kindOf("node-redlock@3.1.2", shows, faults), Reproduced: reproduced}
	}
	fixed := &rerun.Comparison{With: "node-redlock@4.0.0", Runs: 3, Label: rerun.Fixed, Properties: []rerun.PropertyComparison{
		{Property: lin.P1, Violated: 2, Label: rerun.Also}, {Property: lin.P6, Held: 3, Label: rerun.Fixed}}}
	withCmp := f(9, late, "client-pause", 1)
	withCmp.Compare = fixed
	kinds := KindsOf([]*Failure{
		f(1, pause, "client-pause", 1), f(2, pause, "client-pause", 0), f(3, late, "client-pause", 0),
		f(4, pause, "client-pause,net-latency", 0), withCmp,
	})
	if len(kinds) != 3 {
		t.Fatalf("%d kinds, want 3: %+v", len(kinds), kinds)
	}
	want := []struct {
		runs  []int
		taken int
	}{{[]int{1, 2}, 1}, {[]int{3, 9}, 9}, {[]int{4}, -1}}
	for i, k := range kinds {
		if !slices.Equal(k.Runs, want[i].runs) || k.Taken != want[i].taken {
			t.Errorf("kind %q: runs %v taken %d, want %v and %d", k.Kind, k.Runs, k.Taken, want[i].runs, want[i].taken)
		}
	}
	if kinds[1].Compare != fixed || !strings.Contains(kinds[1].Kind, "P6: extend ok after another's grant") {
		t.Errorf("kind %q compare %v", kinds[1].Kind, kinds[1].Compare)
	}
	if got := fixed.String(); got != "fixed in node-redlock@4.0.0: P1 broke in 2 of 3 runs; P6 held in 3 of 3 runs" {
		t.Errorf("%q", got)
	}
}
