// Package merge merges the summaries of campaign shards (or of whole campaigns) into
// one: counts add up, first times are the earliest, paths are rewritten relative to the
// merged summary's directory. It reads only what campaign.Summary exports.
package merge

import (
	"cmp"
	"path/filepath"
	"reflect"
	"slices"

	"github.com/locklab/locklab/campaign"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
)

// Merge combines the summaries of several shards (or campaigns) read from dirs into one
// written for directory out: counts add up, first times are the earliest, paths are
// rewritten relative to out, the elapsed time is the longest (shards run side by side).
// The merged summary has no thresholds: the caller sets those it judges the merge by.
func Merge(out string, dirs []string, sums []*campaign.Summary) *campaign.Summary {
	m := &campaign.Summary{
		PlansPerImpl: map[string]int{}, PlansPerFault: map[string]int{},
		Violations: map[lin.Property]int{}, Unknown: map[lin.Property]int{},
		FirstViolation: map[lin.Property]campaign.First{}, FirstDetection: map[string]campaign.First{},
		Unconfirmed: map[string]int{}, Searched: map[string]bool{}, Claims: map[string]campaign.ClaimCount{},
	}
	mixed, minutes := false, 0.0
	for k, s := range sums {
		rel := func(p string) string {
			if p == "" {
				return ""
			}
			if r, err := filepath.Rel(out, filepath.Join(dirs[k], filepath.FromSlash(p))); err == nil {
				return filepath.ToSlash(r)
			}
			return p
		}
		if k == 0 {
			m.Seed, m.Class, m.Space, m.Started, m.CompareWith = s.Seed, s.Class, s.Space, s.Started, s.CompareWith
		}
		if s.CompareWith != m.CompareWith {
			m.CompareWith = "" // each failure still says what it was compared with
		}
		if !slices.Contains(m.Seeds, s.Seed) {
			m.Seeds = append(m.Seeds, s.Seed)
		}
		if s.Class != m.Class {
			m.Class = ""
		}
		if !reflect.DeepEqual(s.Space, m.Space) {
			mixed = true
		}
		minutes += s.Elapsed.D().Minutes()
		shards := s.Shards
		if len(shards) == 0 {
			shards = []string{s.Shard + " " + filepath.ToSlash(dirs[k])}
		}
		m.Shards = append(m.Shards, shards...)
		if s.Started.Before(m.Started) {
			m.Started = s.Started
		}
		m.Elapsed = plan.D(max(m.Elapsed.D(), s.Elapsed.D()))
		m.Interrupted = m.Interrupted || s.Interrupted
		m.Runs += s.Runs
		m.Reruns += s.Reruns
		m.Errors += s.Errors
		m.Perturbed += s.Perturbed
		m.SafeViolations += s.SafeViolations
		m.Findings += s.Findings
		m.Detected = m.Detected || s.Detected
		for c, found := range s.SearchedFor() {
			m.Searched[c] = m.Searched[c] || found
		}
		for c, n := range s.Unconfirmed {
			m.Unconfirmed[c] += n
		}
		for impl, c := range s.Claims {
			mc := m.Claims[impl]
			mc.Add(c)
			m.Claims[impl] = mc
		}
		for k, v := range s.PlansPerImpl {
			m.PlansPerImpl[k] += v
		}
		for k, v := range s.PlansPerFault {
			m.PlansPerFault[k] += v
		}
		for k, v := range s.Violations {
			m.Violations[k] += v
		}
		for k, v := range s.Unknown {
			m.Unknown[k] += v
		}
		earliest := func(old campaign.First, ok bool, f campaign.First) campaign.First {
			f.Plan = rel(f.Plan)
			if !ok || f.After.D() < old.After.D() {
				return f
			}
			return old
		}
		for k, f := range s.FirstViolation {
			old, ok := m.FirstViolation[k]
			m.FirstViolation[k] = earliest(old, ok, f)
		}
		for k, f := range s.FirstDetection {
			old, ok := m.FirstDetection[k]
			m.FirstDetection[k] = earliest(old, ok, f)
		}
		for _, f := range s.Failures {
			c := *f
			c.Dir, c.Plan, c.Saved, c.Report = rel(f.Dir), rel(f.Plan), rel(f.Saved), rel(f.Report)
			if f.Compare != nil {
				fc := *f.Compare
				fc.Dir = rel(fc.Dir)
				c.Compare = &fc
			}
			m.Failures = append(m.Failures, &c)
		}
		m.Pairs.Add(s.Pairs)
		for _, u := range s.UnderLoad { // all of them: a finding under load is never dropped
			c := *u
			c.Dir, c.Plan = rel(u.Dir), rel(u.Plan)
			m.UnderLoad = append(m.UnderLoad, &c)
		}
		m.PerturbedRuns = appendRunErrors(m.PerturbedRuns, s.PerturbedRuns, rel)
		m.RunErrors = appendRunErrors(m.RunErrors, s.RunErrors, rel)
		for _, g := range s.Groups {
			mg := (*campaign.Group)(nil)
			for _, h := range m.Groups {
				if h.Name == g.Name {
					mg = h
				}
			}
			if mg == nil {
				mg = &campaign.Group{Name: g.Name, Impl: g.Impl}
				m.Groups = append(m.Groups, mg)
			}
			mg.Runs += g.Runs
			mg.Failed += g.Failed
			mg.SafeViolations += g.SafeViolations
			mg.Errors += g.Errors
			mg.RunTime = plan.D(mg.RunTime.D() + g.RunTime.D())
			mg.FailedRuns = append(mg.FailedRuns, g.FailedRuns...)
		}
	}
	if len(m.Seeds) == 1 {
		m.Seeds = nil
	}
	m.Shard = "merged"
	if mixed {
		m.Space = campaign.Space{} // several spaces: the merged summaries say which
		m.Mixed = true
	}
	// Per runner: the shards' plans over the time they took together.
	if minutes > 0 {
		m.PlansPerMinute = float64(int(float64(m.Runs+m.Errors)/minutes*10+0.5)) / 10
	}
	slices.SortFunc(m.Failures, func(a, b *campaign.Failure) int {
		return cmp.Or(cmp.Compare(a.Dir, b.Dir), cmp.Compare(a.Run, b.Run))
	})
	slices.SortFunc(m.Groups, func(a, b *campaign.Group) int { return cmp.Compare(a.Name, b.Name) })
	m.Kinds = campaign.KindsOf(m.Failures)
	return m
}

// appendRunErrors appends copies of es with their paths rewritten by rel, up to
// campaign.MaxRunErrors in all.
func appendRunErrors(dst, es []*campaign.RunError, rel func(string) string) []*campaign.RunError {
	for _, e := range es {
		if len(dst) >= campaign.MaxRunErrors {
			break
		}
		c := *e
		c.Dir, c.Plan = rel(e.Dir), rel(e.Plan)
		dst = append(dst, &c)
	}
	return dst
}
