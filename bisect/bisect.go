// Package bisect finds the first release of a lock library where a plan's verdict
// changes: given a good and a bad release and the releases between them, it runs the
// plan on both ends to learn which properties tell them apart, then halves the range,
// running the plan on the middle release, until two neighbours differ. Running a plan is
// the caller's (Run), so that the search is pure and the CLI brings the servers.
package bisect

import (
	"context"
	"fmt"
	"io"
	"slices"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/releases"
)

// Run runs the plan on one release (NAME@VERSION) and says which properties it broke
// in any of its repeats.
type Run func(ctx context.Context, version string) (map[lin.Property]bool, error)

// Step is one release tried: what it broke, and which end it is like.
type Step struct {
	Version string
	Broke   []lin.Property
	LikeBad bool
}

// Result is where the verdict changes: the last release like the good one and the
// first like the bad one (neighbours in the range tried), the properties that tell the
// two ends apart, and every release tried, in the order tried.
type Result struct {
	LastGood, FirstBad string
	Differs            []lin.Property
	Steps              []Step
}

// Bisect searches versions (every release of the library, in any order) between good
// and bad, both included, which may come in either order: a regression (good older) or
// a fix (bad older). It fails when the plan does not tell good from bad. log gets a line
// per release tried.
//
// only, when not empty, are the properties to judge by: a property that breaks by
// chance on some runs (a lost update that needs the new holder to read first) would
// otherwise make a release look like the wrong end.
func Bisect(ctx context.Context, versions []string, good, bad string, only []lin.Property, run Run, log io.Writer) (Result, error) {
	span, err := between(versions, good, bad)
	if err != nil {
		return Result{}, err
	}
	var res Result
	try := func(v string) (map[lin.Property]bool, error) {
		broke, err := run(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("run on %s: %w", v, err)
		}
		return broke, nil
	}
	goodBroke, err := try(good)
	if err != nil {
		return res, err
	}
	badBroke, err := try(bad)
	if err != nil {
		return res, err
	}
	for _, p := range lin.AllProperties() {
		if goodBroke[p] != badBroke[p] && (len(only) == 0 || slices.Contains(only, p)) {
			res.Differs = append(res.Differs, p)
		}
	}
	likeBad := func(broke map[lin.Property]bool) bool {
		for _, p := range res.Differs {
			if broke[p] != badBroke[p] {
				return false
			}
		}
		return true
	}
	record := func(v string, broke map[lin.Property]bool) {
		s := Step{Version: v, LikeBad: likeBad(broke)}
		for _, p := range lin.AllProperties() {
			if broke[p] {
				s.Broke = append(s.Broke, p)
			}
		}
		res.Steps = append(res.Steps, s)
		end := "good"
		if s.LikeBad {
			end = "bad"
		}
		fmt.Fprintf(log, "%s: broke %s: like %s\n", v, orNone(s.Broke), end)
	}
	record(good, goodBroke)
	record(bad, badBroke)
	if len(res.Differs) == 0 {
		judged := ""
		if len(only) > 0 {
			judged = " of " + orNone(only)
		}
		return res, fmt.Errorf("the plan breaks %s on %s and %s on %s: no property%s tells them apart",
			orNone(res.Steps[0].Broke), good, orNone(res.Steps[1].Broke), bad, judged)
	}
	// span runs from good to bad: span[lo] is like good, span[hi] like bad.
	lo, hi := 0, len(span)-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		broke, err := try(span[mid])
		if err != nil {
			return res, err
		}
		record(span[mid], broke)
		if likeBad(broke) {
			hi = mid
		} else {
			lo = mid
		}
	}
	res.LastGood, res.FirstBad = span[lo], span[hi]
	return res, nil
}

// between is the releases from good to bad, both included, in that direction.
func between(versions []string, good, bad string) ([]string, error) {
	vs := slices.Clone(versions)
	for _, v := range []string{good, bad} {
		if !slices.Contains(vs, v) {
			vs = append(vs, v) // a release the registry serves but does not list
		}
	}
	if good == bad {
		return nil, fmt.Errorf("good and bad are the same release, %s", good)
	}
	slices.SortFunc(vs, releases.CompareVersions)
	vs = slices.Compact(vs)
	i, j := slices.Index(vs, good), slices.Index(vs, bad)
	if i < j {
		return vs[i : j+1], nil
	}
	span := slices.Clone(vs[j : i+1])
	slices.Reverse(span)
	return span, nil
}

func orNone(ps []lin.Property) string {
	if len(ps) == 0 {
		return "none"
	}
	return lin.JoinProperties(ps, ", ")
}
