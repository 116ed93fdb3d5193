package campaign

import (
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	lin "github.com/locklab/locklab/linearizability"
)

// Files a campaign writes into its output directory.
const (
	SummaryFile  = "summary.json"
	MarkdownFile = "summary.md"
	JUnitFile    = "junit.xml"
)

// Summary is what a campaign (or several merged shards) found. Paths in it are relative
// to the directory the summary is in.
type Summary struct {
	Seed        int64     `json:"seed"`
	Seeds       []int64   `json:"seeds,omitempty"` // merged summaries of several seeds
	Shard       string    `json:"shard"`
	Shards      []string  `json:"shards,omitempty"` // merged: the shards merged, with their directories
	Class       string    `json:"class,omitempty"`
	Space       Space     `json:"space"`
	Mixed       bool      `json:"mixed_spaces,omitempty"` // merged from campaigns of different spaces (Space is then empty)
	Started     time.Time `json:"started"`
	Elapsed     Duration  `json:"elapsed"`
	Interrupted bool      `json:"interrupted,omitempty"`

	Runs           int            `json:"runs"`   // generated plans run
	Reruns         int            `json:"reruns"` // confirmation and shrink runs
	Errors         int            `json:"errors"` // plans that could not be run
	PlansPerMinute float64        `json:"plans_per_minute"`
	PlansPerImpl   map[string]int `json:"plans_per_impl"`
	PlansPerFault  map[string]int `json:"plans_per_fault"` // plans with at least one fault of the kind ("none": without faults)

	Violations     map[lin.Property]int `json:"violations"`        // runs with the property illegal
	Unknown        map[lin.Property]int `json:"unknown,omitempty"` // runs whose checker ran out of time on it
	SafeViolations int                  `json:"safe_configuration_violations"`
	Findings       int                  `json:"findings"` // failing runs without a safe-configuration violation

	FirstViolation map[lin.Property]First `json:"first_violation,omitempty"`
	FirstDetection map[string]First       `json:"first_detection,omitempty"` // by bug class
	Detected       bool                   `json:"detected,omitempty"`        // a class search found its class

	Failures  []*Failure  `json:"failures,omitempty"`
	RunErrors []*RunError `json:"run_errors,omitempty"`
	Groups    []*Group    `json:"groups"` // runs by implementation, topology, fencing and fault kinds
}

// First is when something was first seen.
type First struct {
	Run   int      `json:"run"`   // plan index
	Runs  int      `json:"runs"`  // runs done in its shard by then, that one included
	After Duration `json:"after"` // since its campaign started
	Plan  string   `json:"plan"`
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
	Classes     []string       `json:"classes,omitempty"`
	After       Duration       `json:"after"`
	Dir         string         `json:"dir"`
	Plan        string         `json:"plan"`
	Explanation string         `json:"explanation,omitempty"`

	Target     lin.Property `json:"target,omitempty"` // the property confirmed and shrunk on
	Reproduced int          `json:"reproduced"`       // confirmation re-runs that showed it again
	Confirms   int          `json:"confirms"`

	Saved            string   `json:"saved,omitempty"`  // failures/NNNNN/plan.json: the smallest confirmed plan
	Report           string   `json:"report,omitempty"` // its confirming run
	Original         Size     `json:"original"`
	Shrunk           *Size    `json:"shrunk,omitempty"`
	ShrinkCandidates int      `json:"shrink_candidates,omitempty"`
	ShrinkRuns       int      `json:"shrink_runs,omitempty"`
	ShrinkTime       Duration `json:"shrink_time,omitzero"`
	Note             string   `json:"note,omitempty"`
}

// Size is how big a plan is, for comparing a failure with its shrunk plan.
type Size struct {
	Faults   int      `json:"faults"`
	Clients  int      `json:"clients"`
	Keys     int      `json:"keys"`
	Ops      int      `json:"ops"` // recorded operations of the run
	Duration Duration `json:"duration"`
}

func sizeOf(p Plan, ops int) Size {
	return Size{Faults: len(p.Faults), Clients: p.Clients, Keys: p.Keys, Ops: ops, Duration: p.Duration}
}

func (s Size) String() string {
	return fmt.Sprintf("%d faults, %d clients, %d keys, %d ops, %s", s.Faults, s.Clients, s.Keys, s.Ops, s.Duration.D())
}

// sizeNote compares the original and the shrunk plan.
func (f *Failure) sizeNote() string {
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

// maxRunErrors bounds the errors a summary lists (all are counted).
const maxRunErrors = 50

// Group counts the runs of one kind of plan: one JUnit test case.
type Group struct {
	Name           string   `json:"name"`
	Impl           string   `json:"impl"`
	Runs           int      `json:"runs"`
	Failed         int      `json:"failed"`
	SafeViolations int      `json:"safe_configuration_violations"`
	Errors         int      `json:"errors"`
	RunTime        Duration `json:"run_time"`
	FailedRuns     []int    `json:"failed_runs,omitempty"`
}

func newSummary(o SearchOptions, sp Space) *Summary {
	s := &Summary{
		Seed: o.Seed, Shard: o.Shard.String(), Space: sp, Started: time.Now().UTC().Truncate(time.Second),
		PlansPerImpl: map[string]int{}, PlansPerFault: map[string]int{},
		Violations: map[lin.Property]int{}, Unknown: map[lin.Property]int{},
		FirstViolation: map[lin.Property]First{}, FirstDetection: map[string]First{},
	}
	if o.Class != nil {
		s.Class = o.Class.ID
	}
	return s
}

// groupName is the kind of plan p is: implementation, topology kind, fencing, fault kinds.
func groupName(p Plan) string {
	topo := p.Topology
	if t, err := cluster.ParseTopology(p.Topology); err == nil {
		topo = t.Kind
	}
	kinds := strings.Split(faultKinds(p), ",")
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	return fmt.Sprintf("%s %s fencing %s faults %s", p.Impl, topo, p.Fencing, strings.Join(kinds, ","))
}

func (s *Summary) group(p Plan) *Group {
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

func (s *Summary) countPlan(p Plan) {
	s.PlansPerImpl[p.Impl]++
	kinds := strings.Split(faultKinds(p), ",")
	slices.Sort(kinds)
	for _, k := range slices.Compact(kinds) {
		s.PlansPerFault[k]++
	}
}

// addRun counts a finished run of a generated plan.
func (s *Summary) addRun(p Plan, rep Report, rec *RunRecord) {
	s.Runs++
	s.countPlan(p)
	g := s.group(p)
	g.Runs++
	g.RunTime = D(g.RunTime.D() + rep.RunTime)
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

// addError counts a plan that could not be run.
func (s *Summary) addError(p Plan, i int, dir string, err error) {
	s.Errors++
	s.countPlan(p)
	g := s.group(p)
	g.Runs++
	g.Errors++
	if len(s.RunErrors) < maxRunErrors {
		s.RunErrors = append(s.RunErrors, &RunError{Run: i, Plan: dir + "/" + PlanFile, Dir: dir, Error: err.Error()})
	}
}

// addFailure records a failing run and what it detects.
func (s *Summary) addFailure(p Plan, i int, rep Report, rec *RunRecord, classes []string, by map[lin.Property]string, after time.Duration, dir string) *Failure {
	f := &Failure{
		Run: i, Impl: p.Impl, Topology: p.Topology, Fencing: p.Fencing, Faults: faultKinds(p),
		Illegal: rec.Illegal, Safe: rec.Safe, Classes: classes, After: D(after.Round(time.Millisecond)),
		Dir: dir, Plan: dir + "/" + PlanFile, Original: sizeOf(p, rep.Ops),
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
	for _, c := range classes {
		if _, ok := s.FirstDetection[c]; !ok {
			s.FirstDetection[c] = first
		}
		if c == s.Class {
			s.Detected = true
		}
	}
	s.Failures = append(s.Failures, f)
	return f
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

// OK reports whether the campaign passed: no safe-configuration violation, and for a
// class search, the class found.
func (s *Summary) OK() bool {
	return s.SafeViolations == 0 && (s.Class == "" || s.Detected)
}

// WriteSummary writes summary.json, summary.md and junit.xml into dir.
func WriteSummary(dir string, s *Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), []byte(Markdown(s)), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	j, err := JUnit(s)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, JUnitFile), j, 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// ReadSummary reads dir/summary.json (or the file itself when path names one).
func ReadSummary(path string) (*Summary, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, SummaryFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("read summary %s: %w", path, err)
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
		m.Elapsed = D(max(m.Elapsed.D(), s.Elapsed.D()))
		m.Interrupted = m.Interrupted || s.Interrupted
		m.Runs += s.Runs
		m.Reruns += s.Reruns
		m.Errors += s.Errors
		m.SafeViolations += s.SafeViolations
		m.Findings += s.Findings
		m.Detected = m.Detected || s.Detected
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
		for _, e := range s.RunErrors {
			c := *e
			c.Dir, c.Plan = rel(e.Dir), rel(e.Plan)
			if len(m.RunErrors) < maxRunErrors {
				m.RunErrors = append(m.RunErrors, &c)
			}
		}
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
			mg.RunTime = D(mg.RunTime.D() + g.RunTime.D())
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

// Markdown is the summary for people (and for a CI job summary).
func Markdown(s *Summary) string {
	var b strings.Builder
	title := "locklab campaign"
	if s.Class != "" {
		title += ": class " + s.Class
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	fmt.Fprintf(&b, "Seed %d, shard %s: %d plans run (%d re-runs to confirm and shrink, %d errors) in %s, %.1f plans/minute per runner",
		s.Seed, s.Shard, s.Runs, s.Reruns, s.Errors, s.Elapsed.D(), s.PlansPerMinute)
	if s.Interrupted {
		b.WriteString(", **interrupted**")
	}
	b.WriteString(".\n\n")
	if s.Mixed {
		b.WriteString("Space: several; each merged campaign's summary.md says which.\n\n")
	} else {
		fmt.Fprintf(&b, "Space: implementations %s; fault kinds %s; fencing %s; faults per plan up to %s%s.\n\n",
			orAll(s.Space.Impls), orAll(s.Space.Faults), orAll(s.Space.Fencings), maxFaultsText(s.Space), calmText(s.Space))
	}
	verdict := "**PASS**"
	if !s.OK() {
		verdict = "**FAIL**"
	}
	fmt.Fprintf(&b, "%s: %d safe-configuration violations, %d findings", verdict, s.SafeViolations, s.Findings)
	if s.Class != "" {
		if s.Detected {
			fmt.Fprintf(&b, "; class %s found", s.Class)
		} else {
			fmt.Fprintf(&b, "; class %s **not found**", s.Class)
		}
	}
	b.WriteString(".\n\n| property | runs with a violation | first after | first run |\n|---|---|---|---|\n")
	for _, prop := range lin.AllProperties() {
		first := "–"
		run := "–"
		if f, ok := s.FirstViolation[prop]; ok {
			first, run = f.After.D().String(), fmt.Sprintf("%d (%s)", f.Run, f.Plan)
		}
		fmt.Fprintf(&b, "| %s %s | %d | %s | %s |\n", prop, prop.Name(), s.Violations[prop], first, run)
	}
	if len(s.FirstDetection) > 0 {
		b.WriteString("\n## Bug classes found\n\n| class | first after | runs by then | plan |\n|---|---|---|---|\n")
		for _, c := range sortedKeys(s.FirstDetection) {
			f := s.FirstDetection[c]
			fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", c, f.After.D(), f.Runs, f.Plan)
		}
	}
	failures := func(title string, safe bool) {
		var fs []*Failure
		for _, f := range s.Failures {
			if (len(f.Safe) > 0) == safe {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		for _, f := range fs {
			fmt.Fprintf(&b, "- run %d: %s %s fencing %s, faults %s: %s illegal", f.Run, f.Impl, f.Topology, f.Fencing, f.Faults, joinProps(f.Illegal))
			if len(f.Rules) > 0 {
				fmt.Fprintf(&b, " (expected by %s)", strings.Join(f.Rules, "; "))
			}
			if len(f.Classes) > 0 {
				fmt.Fprintf(&b, ", class %s", strings.Join(f.Classes, ", "))
			}
			fmt.Fprintf(&b, " after %s. Run `%s`", f.After.D(), f.Dir)
			if f.Confirms > 0 {
				fmt.Fprintf(&b, "; %s reproduced %d/%d", f.Target, f.Reproduced, f.Confirms)
			}
			if f.Saved != "" {
				fmt.Fprintf(&b, "; saved `%s` (%s)", f.Saved, f.sizeNote())
			}
			if f.Note != "" {
				fmt.Fprintf(&b, "; %s", f.Note)
			}
			b.WriteString(".\n")
			if f.Explanation != "" {
				fmt.Fprintf(&b, "  %s\n", truncate(f.Explanation, 400))
			}
		}
	}
	failures("Safe-configuration violations", true)
	failures("Findings", false)
	b.WriteString("\n## Plans\n\n| implementation | plans |\n|---|---|\n")
	for _, k := range sortedKeys(s.PlansPerImpl) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, s.PlansPerImpl[k])
	}
	b.WriteString("\n| fault kind | plans with it |\n|---|---|\n")
	for _, k := range sortedKeys(s.PlansPerFault) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, s.PlansPerFault[k])
	}
	if len(s.RunErrors) > 0 {
		fmt.Fprintf(&b, "\n## Errors (%d)\n\n", s.Errors)
		for _, e := range s.RunErrors {
			fmt.Fprintf(&b, "- run %d (`%s`): %s\n", e.Run, e.Plan, truncate(e.Error, 300))
		}
	}
	if len(s.Shards) > 0 {
		fmt.Fprintf(&b, "\nMerged from %s.\n", strings.Join(s.Shards, ", "))
	}
	return b.String()
}

func orAll(xs []string) string {
	if len(xs) == 0 {
		return "all"
	}
	return strings.Join(xs, ", ")
}

func maxFaultsText(s Space) string {
	switch {
	case s.MaxFaults < 0 || (len(s.Faults) == 1 && s.Faults[0] == NoFaults):
		return "0"
	case s.MaxFaults == 0:
		return fmt.Sprint(DefaultMaxFaults)
	}
	return fmt.Sprint(s.MaxFaults)
}

func calmText(s Space) string {
	if s.Calm {
		return "; calm workloads only"
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// JUnit XML, as GitHub Actions, GitLab and Jenkins read it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
	SystemErr string        `xml:"system-err,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// JUnit renders the summary as JUnit XML: one test case per kind of plan (implementation,
// topology, fencing, fault kinds). A safe-configuration violation is a failure; findings
// are listed in the case's output; a kind of plan none of whose runs could run is an
// error. A class search adds a case that fails when the class was not found.
func JUnit(s *Summary) ([]byte, error) {
	suite := junitSuite{
		Name: fmt.Sprintf("locklab campaign seed %d shard %s", s.Seed, s.Shard), Time: seconds(s.Elapsed.D()),
		Timestamp: s.Started.Format("2006-01-02T15:04:05"),
		Properties: []junitProperty{
			{"seed", fmt.Sprint(s.Seed)}, {"shard", s.Shard}, {"runs", fmt.Sprint(s.Runs)}, {"reruns", fmt.Sprint(s.Reruns)},
			{"errors", fmt.Sprint(s.Errors)}, {"interrupted", fmt.Sprint(s.Interrupted)},
			{"impls", orAll(s.Space.Impls)}, {"faults", orAll(s.Space.Faults)}, {"fencings", orAll(s.Space.Fencings)},
		},
	}
	if s.Mixed {
		suite.Properties = append(suite.Properties[:6], junitProperty{"space", "several (merged)"})
	}
	for _, g := range s.Groups {
		c := junitCase{Classname: "locklab.campaign." + g.Impl, Name: fmt.Sprintf("%s (%d runs)", g.Name, g.Runs), Time: seconds(g.RunTime.D())}
		var safe, findings, errs strings.Builder
		for _, f := range s.Failures {
			if groupOf(f) != g.Name {
				continue
			}
			line := fmt.Sprintf("run %d: %s illegal; run %s; plan %s", f.Run, joinProps(f.Illegal), f.Dir, f.Plan)
			if f.Saved != "" {
				line += fmt.Sprintf("; shrunk plan %s (%s)", f.Saved, f.sizeNote())
			}
			if f.Explanation != "" {
				line += "\n  " + truncate(f.Explanation, 400)
			}
			if len(f.Safe) > 0 {
				fmt.Fprintf(&safe, "%s\n  expected to hold: %s\n", line, strings.Join(f.Rules, "; "))
			} else {
				fmt.Fprintln(&findings, line)
			}
		}
		if g.Errors > 0 {
			fmt.Fprintf(&errs, "%d of %d runs could not be run (see summary.md)\n", g.Errors, g.Runs)
		}
		if safe.Len() > 0 {
			c.Failure = &junitMessage{
				Message: fmt.Sprintf("%d safe-configuration violations", g.SafeViolations),
				Type:    "safe-configuration violation", Text: safe.String(),
			}
			suite.Failures++
		} else if g.Errors == g.Runs && g.Runs > 0 {
			c.Error = &junitMessage{Message: "no run of this kind of plan could run", Type: "error", Text: errs.String()}
			suite.Errors++
		}
		if findings.Len() > 0 {
			c.SystemOut = "findings (violations the models do not rule out):\n" + findings.String()
		}
		c.SystemErr = errs.String()
		suite.Cases = append(suite.Cases, c)
	}
	if s.Class != "" {
		c := junitCase{Classname: "locklab.campaign.class", Name: "finds " + s.Class, Time: seconds(s.Elapsed.D())}
		if f, ok := s.FirstDetection[s.Class]; ok {
			c.SystemOut = fmt.Sprintf("found after %s, %d runs: %s\n", f.After.D(), f.Runs, f.Plan)
		} else {
			c.Failure = &junitMessage{Message: fmt.Sprintf("class %s not found in %d runs", s.Class, s.Runs), Type: "not found"}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests = len(suite.Cases)
	all := junitSuites{Name: "locklab campaign", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: suite.Time, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode junit: %w", err)
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// groupOf is the group name of a failure, rebuilt from its fields.
func groupOf(f *Failure) string {
	p := Plan{Impl: f.Impl, Topology: f.Topology, Fencing: f.Fencing}
	if f.Faults != NoFaults {
		for _, k := range strings.Split(f.Faults, ",") {
			p.Faults = append(p.Faults, FaultSpec{Kind: k})
		}
	}
	return groupName(p)
}
