package bisect

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/releases"
)

// TestBisect: the search names the first release like the bad end, regression or fix,
// trying few releases; a plan that does not tell the ends apart is an error.
func TestBisect(t *testing.T) {
	versions := []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0", "2.1.0", "2.2.0", "3.0.0", "3.1.0"}
	// P6 breaks from 2.1.0 on; P1 always.
	run := func(_ context.Context, v string) (map[lin.Property]bool, error) {
		return map[lin.Property]bool{lin.P1: true, lin.P6: releases.CompareVersions(v, "2.1.0") >= 0}, nil
	}
	for _, c := range []struct{ good, bad, lastGood, firstBad string }{
		{"1.0.0", "3.1.0", "2.0.0", "2.1.0"}, // a regression
		{"3.1.0", "1.1.0", "2.1.0", "2.0.0"}, // a fix, searched from the other end
	} {
		res, err := Bisect(context.Background(), versions, c.good, c.bad, nil, run, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if res.LastGood != c.lastGood || res.FirstBad != c.firstBad || !slices.Equal(res.Differs, []lin.Property{lin.P6}) {
			t.Errorf("good %s bad %s: %+v, want last good %s, first bad %s, P6 telling them apart", c.good, c.bad, res, c.lastGood, c.firstBad)
		}
		if len(res.Steps) > 5 {
			t.Errorf("%d releases tried of %d", len(res.Steps), len(versions))
		}
	}
	// A release the registry serves but does not list is still an end.
	if res, err := Bisect(context.Background(), versions, "1.0.0", "2.1.5", nil, run, io.Discard); err != nil || res.FirstBad != "2.1.0" {
		t.Errorf("unlisted bad end: %+v, %v", res, err)
	}
	_, err := Bisect(context.Background(), versions, "1.0.0", "1.2.0", nil, run, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no property tells them apart") {
		t.Errorf("ends alike: %v", err)
	}
	// Judged by P1 alone, 1.0.0 and 3.1.0 are alike.
	_, err = Bisect(context.Background(), versions, "1.0.0", "3.1.0", []lin.Property{lin.P1}, run, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no property of P1 tells them apart") {
		t.Errorf("judged by P1: %v", err)
	}
}
