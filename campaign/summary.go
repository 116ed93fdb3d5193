package campaign

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/jsonfile"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
)

// Files of a campaign's output directory: summary.json is the campaign's record;
// report renders the other two from it.
const (
	SummaryFile  = "summary.json"
	MarkdownFile = "summary.md"
	JUnitFile    = "junit.xml"
)

// Summary is what a campaign (or several merged shards) found. Paths in it are relative
// to the directory the summary is in.
type Summary struct {
	Seed        int64         `json:"seed"`
	Seeds       []int64       `json:"seeds,omitempty"` // merged summaries of several seeds
	Shard       string        `json:"shard"`
	Shards      []string      `json:"shards,omitempty"` // merged: the shards merged, with their directories
	Class       string        `json:"class,omitempty"`
	Space       Space         `json:"space"`
	Mixed       bool          `json:"mixed_spaces,omitempty"` // merged from campaigns of different spaces (Space is then empty)
	Started     time.Time     `json:"started"`
	Elapsed     plan.Duration `json:"elapsed"`
	Interrupted bool          `json:"interrupted,omitempty"`

	Runs           int            `json:"runs"`   // generated plans run
	Reruns         int            `json:"reruns"` // confirmation and shrink runs
	Errors         int            `json:"errors"` // plans that could not be run
	PlansPerMinute float64        `json:"plans_per_minute"`
	PlansPerImpl   map[string]int `json:"plans_per_impl"`
	PlansPerFault  map[string]int `json:"plans_per_fault"` // plans with at least one fault of the kind ("none": without faults)

	// Claims counts, per implementation, the (plan, property) pairs that an expectation
	// rule claims, by verdict: what a count of false alarms is measured over.
	Claims map[string]ClaimCount `json:"claims,omitempty"`

	Violations     map[lin.Property]int `json:"violations"`        // runs with the property illegal
	Unknown        map[lin.Property]int `json:"unknown,omitempty"` // runs whose checker ran out of time on it
	SafeViolations int                  `json:"safe_configuration_violations"`
	Findings       int                  `json:"findings"` // failing runs without a safe-configuration violation

	FirstViolation map[lin.Property]First `json:"first_violation,omitempty"`
	// FirstDetection is, by bug class, the first detection that a re-run confirmed: when
	// the confirmation ended. Only confirmed detections count.
	FirstDetection map[string]First `json:"first_detection,omitempty"`
	// Unconfirmed counts, by bug class, the detections whose re-runs did not show the
	// class again: reported, never counted as found.
	Unconfirmed map[string]int `json:"unconfirmed_detections,omitempty"`
	Detected    bool           `json:"detected,omitempty"` // a class search found its class, confirmed
	// Searched is every class a search (or, merged, any of its parts) looked for, and
	// whether it was found, confirmed: a merge keeps each one's verdict.
	Searched map[string]bool `json:"searched,omitempty"`

	Failures  []*Failure  `json:"failures,omitempty"`
	RunErrors []*RunError `json:"run_errors,omitempty"`
	// Perturbed counts the runs whose harness stalled (runner.Report.Perturbed): not
	// violations, not passes; PerturbedRuns lists them (Error says why).
	Perturbed     int         `json:"perturbed,omitempty"`
	PerturbedRuns []*RunError `json:"perturbed_runs,omitempty"`
	Groups        []*Group    `json:"groups"` // runs by implementation, topology, fencing and fault kinds
}

// First is when something was first seen.
type First struct {
	Run   int           `json:"run"`   // plan index
	Runs  int           `json:"runs"`  // runs done in its shard by then, that one included
	After plan.Duration `json:"after"` // since its campaign started
	Plan  string        `json:"plan"`
}

// Failure is a run with an illegal verdict.
type Failure struct {
	Run         int            `json:"run"`
	Impl        string         `json:"impl"`
	Topology    string         `json:"topology"`
	Fencing     string         `json:"fencing"`
	Faults      string         `json:"faults"`
	Illegal     []lin.Property `json:"illegal"`
	Safe        []lin.Property `json:"safe_configuration,omitempty"` // illegal although the models expect them to hold
	Rules       []string       `json:"rules,omitempty"`              // the rules that expected them
	Classes     []string       `json:"classes,omitempty"`            // classes its run detects
	Confirmed   []string       `json:"confirmed,omitempty"`          // of those, the ones a re-run showed again
	After       plan.Duration  `json:"after"`
	Dir         string         `json:"dir"`
	Plan        string         `json:"plan"`
	Explanation string         `json:"explanation,omitempty"`

	Target     lin.Property `json:"target,omitempty"` // the property confirmed and shrunk on
	Reproduced int          `json:"reproduced"`       // confirmation re-runs that showed it again
	Confirms   int          `json:"confirms"`

	Saved            string        `json:"saved,omitempty"`  // failures/NNNNN/plan.json: the smallest confirmed plan
	Report           string        `json:"report,omitempty"` // its confirming run
	Original         Size          `json:"original"`
	Shrunk           *Size         `json:"shrunk,omitempty"`
	ShrinkCandidates int           `json:"shrink_candidates,omitempty"`
	ShrinkRuns       int           `json:"shrink_runs,omitempty"`
	ShrinkTime       plan.Duration `json:"shrink_time,omitzero"`
	Note             string        `json:"note,omitempty"`
}

// Size is how big a plan is, for comparing a failure with its shrunk plan.
type Size struct {
	Faults   int           `json:"faults"`
	Clients  int           `json:"clients"`
	Keys     int           `json:"keys"`
	Ops      int           `json:"ops"` // recorded operations of the run
	Duration plan.Duration `json:"duration"`
}

func sizeOf(p plan.Plan, ops int) Size {
	return Size{Faults: len(p.Faults), Clients: p.Clients, Keys: p.Keys, Ops: ops, Duration: p.Duration}
}

func (s Size) String() string {
	return fmt.Sprintf("%d faults, %d clients, %d keys, %d ops, %s", s.Faults, s.Clients, s.Keys, s.Ops, s.Duration.D())
}

// SizeNote compares the original and the shrunk plan.
func (f *Failure) SizeNote() string {
	if f.Shrunk == nil {
		return "not shrunk: " + f.Original.String()
	}
	o, s := f.Original, *f.Shrunk
	return fmt.Sprintf("faults %d→%d, clients %d→%d, keys %d→%d, ops %d→%d", o.Faults, s.Faults, o.Clients, s.Clients, o.Keys, s.Keys, o.Ops, s.Ops)
}

// RunError is a plan that could not be run (or checked).
type RunError struct {
	Run   int    `json:"run"`
	Plan  string `json:"plan"`
	Dir   string `json:"dir"`
	Error string `json:"error"`
}

// appendRunErrors appends copies of es with their paths rewritten by rel, up to
// maxRunErrors in all.
func appendRunErrors(dst, es []*RunError, rel func(string) string) []*RunError {
	for _, e := range es {
		if len(dst) >= maxRunErrors {
			break
		}
		c := *e
		c.Dir, c.Plan = rel(e.Dir), rel(e.Plan)
		dst = append(dst, &c)
	}
	return dst
}

// maxRunErrors bounds the errors a summary lists (all are counted).
const maxRunErrors = 50

// Group counts the runs of one kind of plan: one JUnit test case.
type Group struct {
	Name           string        `json:"name"`
	Impl           string        `json:"impl"`
	Runs           int           `json:"runs"`
	Failed         int           `json:"failed"`
	SafeViolations int           `json:"safe_configuration_violations"`
	Errors         int           `json:"errors"`
	RunTime        plan.Duration `json:"run_time"`
	FailedRuns     []int         `json:"failed_runs,omitempty"`
}

func newSummary(o SearchOptions, sp Space) *Summary {
	s := &Summary{
		Seed: o.Seed, Shard: o.Shard.String(), Space: sp, Started: time.Now().UTC().Truncate(time.Second),
		PlansPerImpl: map[string]int{}, PlansPerFault: map[string]int{},
		Violations: map[lin.Property]int{}, Unknown: map[lin.Property]int{},
		FirstViolation: map[lin.Property]First{}, FirstDetection: map[string]First{},
		Unconfirmed: map[string]int{}, Searched: map[string]bool{}, Claims: map[string]ClaimCount{},
	}
	if o.Class != nil {
		s.Class = o.Class.ID
		s.Searched[o.Class.ID] = false
	}
	return s
}

// groupName is the kind of plan p is: implementation, topology kind, fencing, fault kinds.
func groupName(p plan.Plan) string {
	topo := p.Topology
	if t, err := cluster.ParseTopology(p.Topology); err == nil {
		topo = t.Kind
	}
	kinds := strings.Split(faultKinds(p), ",")
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	return fmt.Sprintf("%s %s fencing %s faults %s", p.Impl, topo, p.Fencing, strings.Join(kinds, ","))
}

func (s *Summary) group(p plan.Plan) *Group {
	name := groupName(p)
	for _, g := range s.Groups {
		if g.Name == name {
			return g
		}
	}
	g := &Group{Name: name, Impl: p.Impl}
	s.Groups = append(s.Groups, g)
	return g
}

func (s *Summary) countPlan(p plan.Plan) {
	s.PlansPerImpl[p.Impl]++
	kinds := strings.Split(faultKinds(p), ",")
	slices.Sort(kinds)
	for _, k := range slices.Compact(kinds) {
		s.PlansPerFault[k]++
	}
}

// ClaimCount counts (plan, property) pairs that a rule claims to hold: the ones the
// checker found to hold, violated (safe-configuration violations) or could not decide.
// Properties with nothing to check (n/a) are not counted.
type ClaimCount struct {
	Held      int `json:"held"`
	Violated  int `json:"violated"`
	Undecided int `json:"undecided"`
}

// Decided is the pairs the checker decided: the claims put to the test.
func (c ClaimCount) Decided() int { return c.Held + c.Violated }

// Add adds d's counts to c.
func (c *ClaimCount) Add(d ClaimCount) {
	c.Held, c.Violated, c.Undecided = c.Held+d.Held, c.Violated+d.Violated, c.Undecided+d.Undecided
}

// Count counts one claimed pair by its verdict; n/a (nothing to check) is not a pair.
func (c *ClaimCount) Count(v lin.Verdict) {
	switch v {
	case lin.OK:
		c.Held++
	case lin.Illegal:
		c.Violated++
	case lin.Unknown:
		c.Undecided++
	}
}

// addRun counts a finished run of a generated plan; by is what the rules claim for it.
func (s *Summary) addRun(p plan.Plan, rep runner.Report, rec *RunRecord, by map[lin.Property]string) {
	s.Runs++
	s.countPlan(p)
	if len(by) > 0 {
		c := s.Claims[p.Impl]
		for _, pr := range rep.Result.Properties {
			if by[pr.Property] != "" {
				c.Count(pr.Verdict)
			}
		}
		s.Claims[p.Impl] = c
	}
	g := s.group(p)
	g.Runs++
	g.RunTime = plan.D(g.RunTime.D() + rep.RunTime)
	for _, prop := range rec.Unknown {
		s.Unknown[prop]++
	}
	for _, prop := range rec.Illegal {
		s.Violations[prop]++
	}
	if len(rec.Illegal) == 0 {
		return
	}
	g.Failed++
	g.FailedRuns = append(g.FailedRuns, rec.Index)
	if len(rec.Safe) > 0 {
		s.SafeViolations++
		g.SafeViolations++
	} else {
		s.Findings++
	}
}

// addPerturbed counts a run whose harness stalled.
func (s *Summary) addPerturbed(p plan.Plan, i int, dir, why string) {
	s.Perturbed++
	s.countPlan(p)
	if len(s.PerturbedRuns) < maxRunErrors {
		s.PerturbedRuns = append(s.PerturbedRuns, &RunError{Run: i, Plan: dir + "/" + runner.PlanFile, Dir: dir, Error: why})
	}
}

// addError counts a plan that could not be run.
func (s *Summary) addError(p plan.Plan, i int, dir string, err error) {
	s.Errors++
	s.countPlan(p)
	g := s.group(p)
	g.Runs++
	g.Errors++
	if len(s.RunErrors) < maxRunErrors {
		s.RunErrors = append(s.RunErrors, &RunError{Run: i, Plan: dir + "/" + runner.PlanFile, Dir: dir, Error: err.Error()})
	}
}

// addFailure records a failing run and the classes its run detects; a detection counts
// once a re-run confirms it (confirmDetection).
func (s *Summary) addFailure(p plan.Plan, i int, rep runner.Report, rec *RunRecord, classes []string, by map[lin.Property]string, after time.Duration, dir string) *Failure {
	f := &Failure{
		Run: i, Impl: p.Impl, Topology: p.Topology, Fencing: p.Fencing, Faults: faultKinds(p),
		Illegal: rec.Illegal, Safe: rec.Safe, Classes: classes, After: plan.D(after.Round(time.Millisecond)),
		Dir: dir, Plan: dir + "/" + runner.PlanFile, Original: sizeOf(p, rep.Ops),
	}
	for _, prop := range rec.Safe {
		f.Rules = append(f.Rules, fmt.Sprintf("%s: rule %s", prop, by[prop]))
	}
	for _, pr := range rep.Result.Properties {
		if pr.Verdict == lin.Illegal && pr.Explanation != "" {
			f.Explanation = fmt.Sprintf("%s: %s", pr.Property, pr.Explanation)
			break
		}
	}
	first := First{Run: i, Runs: s.Runs, After: f.After, Plan: f.Plan}
	for _, prop := range rec.Illegal {
		if _, ok := s.FirstViolation[prop]; !ok {
			s.FirstViolation[prop] = first
		}
	}
	s.Failures = append(s.Failures, f)
	return f
}

// confirmDetection records the outcome of re-running failure f for class c: confirmed
// after this long since the campaign started, or not.
func (s *Summary) confirmDetection(f *Failure, c string, confirmed bool, after time.Duration) {
	if !confirmed {
		s.Unconfirmed[c]++
		return
	}
	f.Confirmed = append(f.Confirmed, c)
	if _, ok := s.FirstDetection[c]; !ok {
		s.FirstDetection[c] = First{Run: f.Run, Runs: s.Runs, After: plan.D(after.Round(time.Millisecond)), Plan: f.Plan}
	}
	if _, searched := s.Searched[c]; searched {
		s.Searched[c] = true
	}
	if c == s.Class {
		s.Detected = true
	}
}

// finish puts the summary in its final order and computes the rate.
func (s *Summary) finish() {
	if m := s.Elapsed.D().Minutes(); m > 0 {
		s.PlansPerMinute = float64(int(float64(s.Runs+s.Errors)/m*10+0.5)) / 10
	}
	slices.SortFunc(s.Failures, func(a, b *Failure) int { return cmp.Compare(a.Run, b.Run) })
	slices.SortFunc(s.Groups, func(a, b *Group) int { return cmp.Compare(a.Name, b.Name) })
	for _, g := range s.Groups {
		slices.Sort(g.FailedRuns)
	}
}

// OK reports whether the campaign passed: no safe-configuration violation, and every
// class searched for found and confirmed (in a merged summary: by one of its parts).
func (s *Summary) OK() bool {
	return s.SafeViolations == 0 && len(s.Missed()) == 0
}

// SearchedFor is every class searched for and whether it was found, confirmed (a
// summary written before Searched existed has only Class and Detected).
func (s *Summary) SearchedFor() map[string]bool {
	if len(s.Searched) == 0 && s.Class != "" {
		return map[string]bool{s.Class: s.Detected}
	}
	return s.Searched
}

// Missed is the classes searched for and not found, sorted.
func (s *Summary) Missed() []string {
	var out []string
	for c, found := range s.SearchedFor() {
		if !found {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// WriteSummary writes summary.json into dir (report renders summary.md and junit.xml).
func WriteSummary(dir string, s *Summary) error {
	return jsonfile.Write(filepath.Join(dir, SummaryFile), s)
}

// ReadSummary reads dir/summary.json (or the file itself when path names one).
func ReadSummary(path string) (*Summary, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, SummaryFile)
	}
	var s Summary
	if err := jsonfile.Read(path, &s); err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	return &s, nil
}

// Merge combines the summaries of several shards (or campaigns) read from dirs into one
// written for directory out: counts add up, first times are the earliest, paths are
// rewritten relative to out, the elapsed time is the longest (shards run side by side).
func Merge(out string, dirs []string, sums []*Summary) *Summary {
	m := &Summary{
		PlansPerImpl: map[string]int{}, PlansPerFault: map[string]int{},
		Violations: map[lin.Property]int{}, Unknown: map[lin.Property]int{},
		FirstViolation: map[lin.Property]First{}, FirstDetection: map[string]First{},
		Unconfirmed: map[string]int{}, Searched: map[string]bool{}, Claims: map[string]ClaimCount{},
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
			m.Seed, m.Class, m.Space, m.Started = s.Seed, s.Class, s.Space, s.Started
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
		earliest := func(old First, ok bool, f First) First {
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
			m.Failures = append(m.Failures, &c)
		}
		m.PerturbedRuns = appendRunErrors(m.PerturbedRuns, s.PerturbedRuns, rel)
		m.RunErrors = appendRunErrors(m.RunErrors, s.RunErrors, rel)
		for _, g := range s.Groups {
			mg := (*Group)(nil)
			for _, h := range m.Groups {
				if h.Name == g.Name {
					mg = h
				}
			}
			if mg == nil {
				mg = &Group{Name: g.Name, Impl: g.Impl}
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
		m.Space = Space{} // several spaces: the merged summaries say which
		m.Mixed = true
	}
	// Per runner: the shards' plans over the time they took together.
	if minutes > 0 {
		m.PlansPerMinute = float64(int(float64(m.Runs+m.Errors)/minutes*10+0.5)) / 10
	}
	slices.SortFunc(m.Failures, func(a, b *Failure) int {
		return cmp.Or(cmp.Compare(a.Dir, b.Dir), cmp.Compare(a.Run, b.Run))
	})
	slices.SortFunc(m.Groups, func(a, b *Group) int { return cmp.Compare(a.Name, b.Name) })
	return m
}

// GroupName is the name of the group of plans the failure's plan belongs to.
func (f *Failure) GroupName() string {
	p := plan.Plan{Impl: f.Impl, Topology: f.Topology, Fencing: f.Fencing}
	if f.Faults != NoFaults {
		for _, k := range strings.Split(f.Faults, ",") {
			p.Faults = append(p.Faults, plan.FaultSpec{Kind: k})
		}
	}
	return groupName(p)
}
