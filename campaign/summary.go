package campaign

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/gate"
	"github.com/locklab/locklab/internal/jsonfile"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/rerun"
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
	// Pairs counts every (plan, property) pair with something to check, claimed or not:
	// what a class search, which looks for what the rules do not claim, is measured by.
	Pairs ClaimCount `json:"pairs"`
	// Thresholds, when set, are what the campaign must decide to be conclusive.
	Thresholds *gate.Thresholds `json:"thresholds,omitempty"`

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
	// UnderLoad are the perturbed runs that violated a property: findings under load,
	// counted neither as findings nor as passes (the stall may be their cause), and never
	// dropped (a lock may break only under load). Their directories are kept.
	UnderLoad []*UnderLoad `json:"under_load,omitempty"`
	Groups    []*Group     `json:"groups"` // runs by implementation, topology, fencing and fault kinds
	// Kinds are the failures by what they show (Failure.Kind), in order of first run.
	Kinds []*Kind `json:"kinds,omitempty"`
	// CompareWith is the release each confirmed failure was run on (SearchOptions).
	CompareWith string `json:"compare_with,omitempty"`
}

// UnderLoad is a violation seen in a run whose harness stalled, with the stall.
type UnderLoad struct {
	Run      int            `json:"run"`
	Impl     string         `json:"impl"`
	Topology string         `json:"topology"`
	Fencing  string         `json:"fencing"`
	Faults   string         `json:"faults"`
	Illegal  []lin.Property `json:"illegal"`
	Safe     []lin.Property `json:"safe_configuration,omitempty"` // illegal although the models expect them to hold
	Dir      string         `json:"dir"`
	Plan     string         `json:"plan"`
	Stall    string         `json:"stall"` // the perturbation the runner recorded
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

	// Shows is what its violations are made of (Shows), Kind what it is grouped by (kindOf).
	Shows []string `json:"shows,omitempty"`
	Kind  string   `json:"kind,omitempty"`

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
	// Compare is its saved plan's runs on SearchOptions.CompareWith, when it was compared.
	Compare *rerun.Comparison `json:"compare,omitempty"`
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

// MaxRunErrors bounds the errors and perturbed runs a summary lists (all are counted).
const MaxRunErrors = 50

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
		Thresholds: o.Thresholds, CompareWith: o.CompareWith,
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
// checker found to hold, violated (safe-configuration violations) or could not decide,
// and those of perturbed runs, which decide nothing. Properties with nothing to check
// (n/a) are not counted.
type ClaimCount struct {
	Held      int `json:"held"`
	Violated  int `json:"violated"`
	Undecided int `json:"undecided"`
	Perturbed int `json:"perturbed,omitempty"`
}

// Decided is the pairs the checker decided: the claims put to the test.
func (c ClaimCount) Decided() int { return c.Held + c.Violated }

// Add adds d's counts to c.
func (c *ClaimCount) Add(d ClaimCount) {
	c.Held, c.Violated, c.Undecided = c.Held+d.Held, c.Violated+d.Violated, c.Undecided+d.Undecided
	c.Perturbed += d.Perturbed
}

// count counts one pair by its verdict, or as perturbed.
func (c *ClaimCount) count(v lin.Verdict, perturbed bool) {
	switch {
	case v == lin.NA || v == "":
	case perturbed:
		c.Perturbed++
	case v == lin.OK:
		c.Held++
	case v == lin.Illegal:
		c.Violated++
	case v == lin.Unknown:
		c.Undecided++
	}
}

// countPairs counts the pairs of a run, all of them and the ones the rules claim (by).
func (s *Summary) countPairs(p plan.Plan, rep runner.Report, by map[lin.Property]string, perturbed bool) {
	c := s.Claims[p.Impl]
	for _, pr := range rep.Result.Properties {
		s.Pairs.count(pr.Verdict, perturbed)
		if by[pr.Property] != "" {
			c.count(pr.Verdict, perturbed)
		}
	}
	if len(by) > 0 {
		s.Claims[p.Impl] = c
	}
}

// Count counts one claimed pair of an unperturbed run by its verdict; n/a (nothing to
// check) is not a pair.
func (c *ClaimCount) Count(v lin.Verdict) { c.count(v, false) }

// addRun counts a finished run of a generated plan; by is what the rules claim for it.
func (s *Summary) addRun(p plan.Plan, rep runner.Report, rec *RunRecord, by map[lin.Property]string) {
	s.Runs++
	s.countPlan(p)
	s.countPairs(p, rep, by, false)
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

// addPerturbed counts a run whose harness stalled; a violation in it is a finding under
// load. It returns that finding, or nil.
func (s *Summary) addPerturbed(p plan.Plan, i int, rep runner.Report, by map[lin.Property]string, dir string) *UnderLoad {
	s.Perturbed++
	s.countPlan(p)
	s.countPairs(p, rep, by, true)
	planPath := dir + "/" + runner.PlanFile
	if len(s.PerturbedRuns) < MaxRunErrors {
		s.PerturbedRuns = append(s.PerturbedRuns, &RunError{Run: i, Plan: planPath, Dir: dir, Error: rep.Perturbed})
	}
	illegal, _ := splitVerdicts(rep.Result)
	if len(illegal) == 0 {
		return nil
	}
	u := &UnderLoad{Run: i, Impl: p.Impl, Topology: p.Topology, Fencing: p.Fencing, Faults: faultKinds(p),
		Illegal: illegal, Dir: dir, Plan: planPath, Stall: rep.Perturbed}
	for _, prop := range illegal {
		if by[prop] != "" {
			u.Safe = append(u.Safe, prop)
		}
	}
	s.UnderLoad = append(s.UnderLoad, u)
	return u
}

// addError counts a plan that could not be run.
func (s *Summary) addError(p plan.Plan, i int, dir string, err error) {
	s.Errors++
	s.countPlan(p)
	g := s.group(p)
	g.Runs++
	g.Errors++
	if len(s.RunErrors) < MaxRunErrors {
		s.RunErrors = append(s.RunErrors, &RunError{Run: i, Plan: dir + "/" + runner.PlanFile, Dir: dir, Error: err.Error()})
	}
}

// addFailure records a failing run and the classes its run detects; a detection counts
// once a re-run confirms it (confirmDetection).
func (s *Summary) addFailure(p plan.Plan, i int, rep runner.Report, rec *RunRecord, classes []string, by map[lin.Property]string, after time.Duration, dir string) *Failure {
	f := &Failure{
		Run: i, Impl: p.Impl, Topology: p.Topology, Fencing: p.Fencing, Faults: faultKinds(p),
		Illegal: rec.Illegal, Safe: rec.Safe, Classes: classes, After: plan.D(after.Round(time.Millisecond)),
		Dir: dir, Plan: dir + "/" + runner.PlanFile, Original: sizeOf(p, rep.Ops), Shows: Shows(rep.Result),
	}
	f.Kind = kindOf(p.Impl, f.Shows, f.Faults)
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
	s.Kinds = KindsOf(s.Failures)
	slices.SortFunc(s.Groups, func(a, b *Group) int { return cmp.Compare(a.Name, b.Name) })
	for _, g := range s.Groups {
		slices.Sort(g.FailedRuns)
	}
}

// Counts is what the campaign decided, as its thresholds measure it: the claimed pairs,
// or all pairs when it searched for classes (see Pairs).
func (s *Summary) Counts() gate.Counts {
	c := s.Pairs
	if len(s.SearchedFor()) == 0 {
		c = ClaimCount{}
		for _, x := range s.Claims {
			c.Add(x)
		}
	}
	return gate.Counts{Decided: c.Decided(), Undecided: c.Undecided, Perturbed: c.Perturbed, Runs: s.Runs + s.Perturbed, PerturbedRuns: s.Perturbed}
}

// PairsName names what Counts counts.
func (s *Summary) PairsName() string {
	if len(s.SearchedFor()) > 0 {
		return "pairs"
	}
	return "claimed pairs"
}

// Inconclusive says why the campaign decided too little to pass, or nil: without
// thresholds, after a safe-configuration violation (a failure whatever else was
// decided) and when every class searched for was found, it is nil.
func (s *Summary) Inconclusive() error {
	if s.Thresholds == nil || s.SafeViolations > 0 || (len(s.SearchedFor()) > 0 && len(s.Missed()) == 0) {
		return nil
	}
	return s.Thresholds.Check(s.Counts(), s.PairsName())
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

// KindsOf groups failures (sorted by run) by what they show: each kind with its runs,
// the one taken up for it (confirmed, and compared) or -1, and that one's comparison.
// Safe-configuration violations are kinds of their own.
func KindsOf(fs []*Failure) []*Kind {
	var kinds []*Kind
	byKey := map[string]*Kind{}
	for _, f := range fs {
		name := f.Kind
		if name == "" { // a summary written before kinds: its lock, properties and faults
			name = kindOf(f.Impl, strings.Split(lin.JoinProperties(f.Illegal, ","), ","), f.Faults)
		}
		key := fmt.Sprintf("%s safe=%v", name, len(f.Safe) > 0)
		k := byKey[key]
		if k == nil {
			k = &Kind{Kind: name, Impl: f.Impl, Shows: f.Shows, Faults: f.Faults, Safe: len(f.Safe) > 0, Taken: -1}
			byKey[key] = k
			kinds = append(kinds, k)
		}
		k.Runs = append(k.Runs, f.Run)
		if f.Reproduced > 0 && k.Taken < 0 {
			k.Taken = f.Run
		}
		if f.Compare != nil && k.Compare == nil {
			k.Compare = f.Compare
		}
	}
	return kinds
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
