package assess

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/internal/jsonfile"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/rerun"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/timeline"
)

// Class is what a finding says about the lock.
type Class string

// The classes of finding.
const (
	// Inherent: every lock of the family breaks there (its reference does too, or no
	// rule of the models claims the property there for the family).
	Inherent Class = "inherent"
	// Avoidable: the family's reference lock held the property on the same plan.
	Avoidable Class = "avoidable"
	// Unexpected: it contradicts what the lock claims (a rule of the models claims the
	// property for a lock of its family on the plan), or a conformance check failed.
	Unexpected Class = "unexpected"
)

// Classes are the classes in the order a report lists them, the worst first.
func Classes() []Class { return []Class{Unexpected, Avoidable, Inherent} }

// ParseClass reads a class's name.
func ParseClass(s string) (Class, error) {
	c := Class(strings.TrimSpace(s))
	if !slices.Contains(Classes(), c) {
		return "", fmt.Errorf("unknown class %q (want %s, %s or %s)", s, Unexpected, Avoidable, Inherent)
	}
	return c, nil
}

// Where a finding was seen.
const (
	SourceConformance = "conformance"
	SourceCatalog     = "catalog"
	SourceCampaign    = "campaign"
)

// Finding is one violated property of one lock on one plan (a catalog cell, a campaign's
// shrunk plan), or a failed conformance check, with its class and what to do.
type Finding struct {
	Class    Class        `json:"class,omitempty"` // empty for a finding under load
	Source   string       `json:"source"`
	Property lin.Property `json:"property,omitempty"`
	Scenario string       `json:"scenario"` // the catalog scenario, the campaign's kind of plan, or the check
	Fencing  string       `json:"fencing,omitempty"`
	Faults   string       `json:"faults,omitempty"`
	Runs     int          `json:"runs,omitempty"`     // runs of the plan
	Violated int          `json:"violated,omitempty"` // of them, with the property illegal
	// Also counts the campaign's other failures of the same kind (implementation,
	// property, fencing, fault kinds) that this one stands for.
	Also     int    `json:"also,omitempty"`
	Evidence string `json:"evidence"` // why it has its class
	// Rule is the expectation rule that claims the property (unexpected findings).
	Rule string `json:"rule,omitempty"`
	// Reference is the reference lock compared with, and what it did on the same plan.
	Reference    string `json:"reference,omitempty"`
	ReferenceDid string `json:"reference_did,omitempty"`
	Advice       string `json:"advice"`
	Explanation  string `json:"explanation,omitempty"` // the checker's words on the first violation
	// Paths relative to the report: the plan (shrunk, for a campaign), the run that shows
	// it, its picture; and the command that replays it.
	Plan     string `json:"plan,omitempty"`
	Run      string `json:"run,omitempty"`
	Timeline string `json:"timeline,omitempty"`
	Replay   string `json:"replay,omitempty"`
	Stall    string `json:"stall,omitempty"` // under load: the stall that perturbed the run
	// Releases are the finding's plan run on the other releases of its library that were
	// assessed with it, each labelled "also in" or "fixed in" (a campaign finding).
	Releases []*rerun.Comparison `json:"releases,omitempty"`
}

// tally counts the findings by class and orders them, the worst first.
func (l *LockReport) tally() {
	clear(l.Counts)
	for _, f := range l.Findings {
		l.Counts[f.Class]++
	}
	slices.SortStableFunc(l.Findings, func(a, b Finding) int {
		return slices.Index(Classes(), a.Class) - slices.Index(Classes(), b.Class)
	})
	l.Held = nil
	for _, p := range lin.AllProperties() {
		if !slices.ContainsFunc(l.Findings, func(f Finding) bool { return f.Property == p }) {
			l.Held = append(l.Held, p)
		}
	}
}

// cellRuns are the runs of cell with property p decided, split into held and violated,
// and the first violating run; perturbed runs are left out.
func cellRuns(c matrix.Cell, p lin.Property) (held, violated int, first *matrix.CellRun) {
	for i, r := range c.Runs {
		if r.Perturbed != "" || r.Error != "" {
			continue
		}
		switch r.Verdicts[p] {
		case lin.OK:
			held++
		case lin.Illegal:
			violated++
			if first == nil {
				first = &c.Runs[i]
			}
		}
	}
	return held, violated, first
}

// classifyCells turns the violated properties of l's catalog cells into findings, each
// compared with the reference's cell of the same scenario and fencing mode.
func (a *assessment) classifyCells(l *LockReport, res matrix.Result, scenarios []plan.Plan, dir string) {
	byName := map[string]plan.Plan{}
	for _, s := range scenarios {
		byName[s.Name] = s
	}
	cellOf := func(impl, scenario, fencing string) *matrix.Cell {
		i := slices.IndexFunc(res.Cells, func(c matrix.Cell) bool {
			return c.Impl == impl && c.Scenario == scenario && c.Fencing == fencing
		})
		if i < 0 {
			return nil
		}
		return &res.Cells[i]
	}
	for _, c := range res.Cells {
		if c.Impl != l.Name || c.Status != matrix.CellPlanned {
			continue
		}
		l.Decided.Add(c.Decided())
		s, ok := byName[c.Scenario]
		if !ok {
			continue
		}
		_, p := matrix.PlanCell(a.o.Registry, s, l.impl, c.Fencing, res.Meta.Nodes)
		if a.o.Backend != "" {
			p.Backend = a.o.Backend
		}
		claimed := Claimed(a.o.Registry, p, l.impl, l.Family)
		for _, prop := range lin.AllProperties() {
			held, violated, first := cellRuns(c, prop)
			for _, r := range c.Runs {
				if r.Perturbed != "" && r.Verdicts[prop] == lin.Illegal {
					l.UnderLoad = append(l.UnderLoad, Finding{Source: SourceCatalog, Property: prop, Scenario: c.Scenario,
						Fencing: c.Fencing, Faults: faultKinds(p), Stall: r.Perturbed, Run: rel(dir, r.Dir),
						Timeline: rel(dir, r.Dir, timeline.File), Evidence: "a violation in a run whose harness stalled: it may be the machine's, not the lock's"})
				}
			}
			if violated == 0 {
				continue
			}
			f := Finding{Source: SourceCatalog, Property: prop, Scenario: c.Scenario, Fencing: c.Fencing,
				Faults: faultKinds(p), Runs: held + violated, Violated: violated,
				Run: rel(dir, first.Dir), Timeline: rel(dir, first.Dir, timeline.File), Plan: rel(dir, first.Dir, runner.PlanFile)}
			f.Replay = a.replay(filepath.Join(dir, first.Dir, runner.PlanFile))
			f.Explanation = explanation(filepath.Join(dir, first.Dir), prop)
			var refDid func() (string, bool, bool)
			if l.Reference != "" {
				refDid = func() (string, bool, bool) {
					rc := cellOf(l.Reference, c.Scenario, c.Fencing)
					if rc == nil || rc.Status != matrix.CellPlanned {
						why := "it cannot play this cell"
						if rc != nil && rc.Reason != "" {
							why = rc.Reason
						}
						return why, false, false
					}
					rh, rv, _ := cellRuns(*rc, prop)
					if rh+rv == 0 {
						return "its runs decided nothing", false, false
					}
					did := fmt.Sprintf("%s in %d of %d runs", verb(rv), max(rv, rh), rh+rv)
					if rv > 0 {
						return did, false, true
					}
					own := &refOutcome{rerun.Tally{Held: map[lin.Property]int{prop: held}, Violated: map[lin.Property]int{prop: violated}}}
					return own.against(did, l.Name, prop)
				}
			}
			a.classify(&f, l, p, claimed, refDid)
			l.Findings = append(l.Findings, f)
		}
	}
}

// verb says whether a reference's runs violated the property.
func verb(violated int) string {
	if violated > 0 {
		return "violated it"
	}
	return "held it"
}

// classify gives f its class, evidence and advice: unexpected when claimed says a rule
// claims the property, else avoidable when refDid says the reference held it on the same
// plan, else inherent.
func (a *assessment) classify(f *Finding, l *LockReport, p plan.Plan, claimed map[lin.Property]string, refDid func() (did string, held, decided bool)) {
	f.Advice = advise(f.Property, l.Family, p)
	if rule, ok := claimed[f.Property]; ok {
		f.Class, f.Rule = Unexpected, rule
		f.Evidence = fmt.Sprintf("the models claim %s for a %s on this plan (rule %s), and %s says it is one (%s)",
			f.Property, l.Family, rule, l.Name, strings.Join(l.Says, ", "))
		return
	}
	f.Class = Inherent
	if refDid == nil {
		f.Evidence = fmt.Sprintf("no rule of the models claims %s here for a %s, and locklab has no other reference of the family to compare with", f.Property, l.Family)
		return
	}
	did, held, decided := refDid()
	f.Reference, f.ReferenceDid = l.Reference, did
	switch {
	case held:
		f.Class = Avoidable
		f.Evidence = fmt.Sprintf("%s, the reference %s, %s on the same plan: a lock of this family need not break here", l.Reference, l.Family, did)
	case decided:
		f.Evidence = fmt.Sprintf("%s, the reference %s, %s on the same plan too: every lock of the family breaks here", l.Reference, l.Family, did)
	default:
		f.Evidence = fmt.Sprintf("no rule of the models claims %s here for a %s; the reference %s could not be compared: %s", f.Property, l.Family, l.Reference, did)
	}
}

// campaign runs a random campaign of the locks for what is left of the budget (keeping
// a share for the reference runs), then classifies each kind of failure once.
func (a *assessment) campaign(ctx context.Context) error {
	left := a.o.Budget - time.Since(a.start)
	shrink := min(campaign.DefaultShrinkTime, a.o.Budget/10)
	// The reference's and the lock's runs of its findings' plans: three of each, a few
	// seconds a run.
	reserve := max(a.o.Budget/6, 30*time.Second)
	dur := left - shrink - reserve
	if dur < 10*time.Second {
		a.rep.Errors = append(a.rep.Errors, fmt.Sprintf("no time was left for the random campaign (%s of the budget %s left after the catalog)",
			max(left, 0).Round(time.Second), a.o.Budget))
		return nil
	}
	var impls []string
	for _, l := range a.rep.Locks {
		impls = append(impls, l.Name)
	}
	dir := filepath.Join(a.o.Out, CampaignDir)
	th := a.o.Thresholds
	o := campaign.SearchOptions{
		Registry: a.o.Registry, Space: campaign.Space{Impls: impls}, Seed: a.o.Seed, Duration: dur,
		Parallel: a.o.Parallel, Out: dir, ShrinkTime: shrink, CheckTimeout: a.o.CheckTimeout,
		Render: a.o.RenderCampaign, Thresholds: &th,
		Progress: func(p campaign.Progress) {
			note := p.Current
			if p.Note != "" {
				note = p.Note
			}
			a.progress(Progress{Stage: "campaign", Done: p.Runs, Note: note, Errors: p.Errors})
		},
	}
	s, err := campaign.Search(ctx, o)
	if s != nil {
		a.rep.Meta.CampaignRuns = s.Runs
		a.rep.Meta.Campaign = filepath.ToSlash(filepath.Join(CampaignDir, "index.html"))
		c := s.Counts()
		a.campaignCounts = c
	}
	if err != nil {
		return err
	}
	for _, l := range a.rep.Locks {
		if err := a.classifyFailures(ctx, l, s, dir); err != nil {
			return err
		}
	}
	return nil
}

// classifyFailures classifies l's campaign failures, one of each kind (property,
// fencing, fault kinds): the first, shrunk, stands for the others.
func (a *assessment) classifyFailures(ctx context.Context, l *LockReport, s *campaign.Summary, dir string) error {
	seen := map[string]int{}      // kind → index in l.Findings
	refs := map[int]*refOutcome{} // campaign run → the reference's runs of its plan
	owns := map[int]*refOutcome{} // campaign run → the lock's own runs of its plan
	others := map[string]*refOutcome{}
	for _, u := range s.UnderLoad {
		if u.Impl != l.Name {
			continue
		}
		for _, prop := range u.Illegal {
			l.UnderLoad = append(l.UnderLoad, Finding{Source: SourceCampaign, Property: prop, Scenario: "campaign plan " + strconv.Itoa(u.Run),
				Fencing: u.Fencing, Faults: u.Faults, Stall: u.Stall, Run: rel(dir, u.Dir), Timeline: rel(dir, u.Dir, timeline.File),
				Evidence: "a violation in a run whose harness stalled: it may be the machine's, not the lock's"})
		}
	}
	for _, fl := range s.Failures {
		if fl.Impl != l.Name {
			continue
		}
		planPath := fl.Saved
		if planPath == "" {
			planPath = filepath.ToSlash(filepath.Join(fl.Dir, runner.PlanFile))
		}
		runDir := fl.Dir
		if fl.Report != "" {
			runDir = fl.Report
		}
		p, err := plan.Read(filepath.Join(dir, planPath), a.o.Registry)
		if err != nil {
			a.rep.Errors = append(a.rep.Errors, fmt.Sprintf("campaign failure %d: %v", fl.Run, err))
			continue
		}
		claimed := Claimed(a.o.Registry, p, l.impl, l.Family)
		for _, prop := range fl.Illegal {
			kind := fmt.Sprintf("%s|%s|%s", prop, p.Fencing, faultKinds(p))
			if i, ok := seen[kind]; ok {
				l.Findings[i].Also++
				continue
			}
			f := Finding{Source: SourceCampaign, Property: prop, Scenario: fmt.Sprintf("campaign plan %d", fl.Run),
				Fencing: p.Fencing, Faults: faultKinds(p), Runs: 1 + fl.Confirms, Violated: 1 + fl.Reproduced,
				Plan: rel(dir, planPath), Run: rel(dir, runDir), Timeline: rel(dir, runDir, timeline.File),
				Replay: a.replay(filepath.Join(dir, planPath))}
			f.Explanation = explanation(filepath.Join(dir, runDir), prop)
			var refDid func() (string, bool, bool)
			if l.Reference != "" {
				refDid = func() (string, bool, bool) {
					dir := filepath.Join(a.o.Out, ReferenceDir, l.Name, strconv.Itoa(fl.Run))
					o, ok := refs[fl.Run]
					if !ok {
						o = a.replayRuns(ctx, l.Reference, p, filepath.Join(dir, l.Reference))
						refs[fl.Run] = o
					}
					did, held, decided := o.did(prop)
					if !held || !decided {
						return did, held, decided
					}
					// The reference held: the lock's own runs of the same plan, as many,
					// say whether its violation is the lock's or the timing's.
					own, ok := owns[fl.Run]
					if !ok {
						own = a.replayRuns(ctx, l.Name, p, filepath.Join(dir, l.Name))
						owns[fl.Run] = own
					}
					return own.against(did, l.Name, prop)
				}
			}
			a.classify(&f, l, p, claimed, refDid)
			f.Releases = a.otherReleases(ctx, l, p, prop, fl.Run, others)
			seen[kind] = len(l.Findings)
			l.Findings = append(l.Findings, f)
		}
	}
	return nil
}

// otherReleases runs the plan of l's campaign failure (run) on every other release of
// l's library the assessment assesses (assess --impl redsync@v4.12.0,redsync@v4.12.1)
// and labels the finding "also in" or "fixed in" each, as campaign --compare-with does.
// others keeps the runs by release and plan, for the failure's other properties.
func (a *assessment) otherReleases(ctx context.Context, l *LockReport, p plan.Plan, prop lin.Property, run int, others map[string]*refOutcome) []*rerun.Comparison {
	var out []*rerun.Comparison
	for _, o := range a.rep.Locks {
		if !rerun.SameLibrary(l.Name, o.Name) {
			continue
		}
		key := fmt.Sprintf("%s %d", o.Name, run)
		t, ok := others[key]
		if !ok {
			t = a.replayRuns(ctx, o.Name, p, filepath.Join(a.o.Out, ReleasesDir, l.Name, strconv.Itoa(run), o.Name))
			others[key] = t
		}
		c := rerun.Compare(o.Name, []lin.Property{prop}, t.Tally)
		if r, err := filepath.Rel(a.o.Out, c.Dir); err == nil && c.Dir != "" {
			c.Dir = filepath.ToSlash(r) // relative to the report, as a finding's paths are
		}
		out = append(out, c)
	}
	return out
}

// refOutcome is what a reference lock did on a campaign's plan, per property.
// Why is set when it could not be run or compared.
type refOutcome struct{ rerun.Tally }

// did says what the reference did with prop: in words, whether it held prop in every
// decided run, and whether any run decided it.
func (o *refOutcome) did(prop lin.Property) (string, bool, bool) {
	if o.Why != "" {
		return o.Why, false, false
	}
	h, v := o.Held[prop], o.Violated[prop]
	if h+v == 0 {
		return fmt.Sprintf("its runs decided nothing (%d perturbed)", o.Perturbed), false, false
	}
	did := fmt.Sprintf("%s in %d of %d runs", verb(v), max(v, h), h+v)
	if v == 0 && h < 2 {
		// One clean run of a plan whose violation may hang on timing says too little.
		return did + " (too few to compare)", false, false
	}
	return did, v == 0, true
}

// against says whether the lock's own runs of a plan on which its reference did did
// (held the property) make the difference the lock's: the lock must violate prop again
// in at least half of its runs, else its violation may be the timing's.
func (o *refOutcome) against(did, lock string, prop lin.Property) (string, bool, bool) {
	if o.Why != "" {
		return fmt.Sprintf("%s, but %s's own runs of the plan could not be compared: %s", did, lock, o.Why), false, false
	}
	h, v := o.Held[prop], o.Violated[prop]
	if h+v == 0 || 2*v < h+v {
		return fmt.Sprintf("%s, but %s itself violated it again in only %d of %d runs of the plan: the difference may be the timing's", did, lock, v, h+v), false, false
	}
	return fmt.Sprintf("%s, while %s violated it again in %d of %d", did, lock, v, h+v), true, true
}

// minReplays is how many times at least the reference, and then the lock, run a campaign
// finding's plan: a campaign's plans are random, and whether one breaks a lock may hang on
// timing, so a difference counts only when the lock repeats its violation in at least half
// of them (two of three) and the reference never shows it.
const minReplays = 3

// referenceGrace is how far past its budget an assessment may go to finish the reference
// run it started; a run is not started when it would end later than that.
const referenceGrace = 15 * time.Second

// replayRuns runs plan p with impl in its lock's place (on the topology impl runs on; the
// plan's lock options only when impl is the plan's own lock), Repeat times and at least
// minReplays times, while the budget lasts.
func (a *assessment) replayRuns(ctx context.Context, impl string, p plan.Plan, dir string) *refOutcome {
	o := &refOutcome{rerun.Tally{Held: map[lin.Property]int{}, Violated: map[lin.Property]int{}}}
	rp := p
	switch {
	case rerun.SameLibrary(p.Impl, impl):
		rp.Impl = impl // another release of the same library: its options too
	case impl != p.Impl:
		rp, _ = p.OnImpl(a.o.Registry, impl)
		rp.Impl, rp.ImplOptions = impl, nil
	}
	rp.Name = ""
	if err := rp.Validate(a.o.Registry); err != nil {
		o.Why = fmt.Sprintf("it cannot play this plan: %v", err)
		return o
	}
	// A run takes its plan's duration, the faults' tail and the start of its servers.
	cost := rp.Duration.D() + rp.TTL.D() + 5*time.Second
	outOfBudget := false
	t := rerun.Repeat(ctx, a.o.Registry, rp, max(a.o.Repeat, minReplays), dir, runner.Options{CheckTimeout: a.o.CheckTimeout}, func(k int) bool {
		if time.Since(a.start)+cost > a.o.Budget+referenceGrace {
			outOfBudget = k == 0
			return false
		}
		a.progress(Progress{Stage: "references", Done: k, Note: fmt.Sprintf("%s on the plan of %s", impl, p.Impl)})
		return true
	})
	o.Tally = t
	switch {
	case outOfBudget:
		o.Why = fmt.Sprintf("not compared: the budget (%s) ran out before these runs; a longer --budget compares every finding", a.o.Budget)
	case o.Why != "" && ctx.Err() != nil:
		o.Why = "the assessment was interrupted before these runs"
	}
	return o
}

// faultKinds are p's fault kinds, sorted and without repeats ("none" without faults).
func faultKinds(p plan.Plan) string {
	var kinds []string
	for _, f := range p.Faults {
		k := f.Kind
		if f.Mode != "" {
			k += " (" + f.Mode + ")"
		}
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 {
		return "none"
	}
	slices.Sort(kinds)
	return strings.Join(slices.Compact(kinds), ", ")
}

// rel is a path under dir, relative to the assessment's directory (dir's parent).
func rel(dir string, parts ...string) string {
	return filepath.ToSlash(filepath.Join(append([]string{filepath.Base(dir)}, parts...)...))
}

// replay is the command that replays the plan at path, with the flags that register the
// locks.
func (a *assessment) replay(path string) string {
	cmd := "locklab replay " + path + " --repeat 3"
	if a.o.Register != "" {
		cmd += " " + a.o.Register
	}
	return cmd
}

// explanation is the checker's words on the first violation of prop in the run at dir.
func explanation(dir string, prop lin.Property) string {
	var rep runner.Report
	if err := jsonfile.Read(filepath.Join(dir, runner.ResultFile), &rep); err != nil {
		return ""
	}
	for _, pr := range rep.Result.Properties {
		if pr.Property == prop {
			return pr.Explanation
		}
	}
	return ""
}
