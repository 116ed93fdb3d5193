package campaign

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"pgregory.net/rapid"

	"github.com/locklab/locklab/campaign/expect"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/gate"
	"github.com/locklab/locklab/internal/rapidshrink"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/rerun"
	"github.com/locklab/locklab/runner"
)

// Defaults of SearchOptions.
const (
	DefaultConfirm    = 1
	DefaultShrinkTime = 2 * time.Minute
	// DefaultCheckTimeout bounds the checker per property in a campaign, lower than a
	// single run's: a plan whose history Porcupine cannot decide quickly (a store that
	// crashed and forgot, many unknown outcomes) is counted as unknown and the campaign
	// moves on to the next plan.
	DefaultCheckTimeout = 10 * time.Second
)

// ErrorFile, in the directory of a run that failed to run, says why.
const ErrorFile = "error.txt"

// Directories of a campaign's output.
const (
	PlanRunsDir = "runs"     // runs/NNNNN: a generated plan's run (kept when it failed)
	ShrinkDir   = "shrink"   // shrink/NNNNN/CCC: shrink candidates while shrinking (removed after)
	FailuresDir = "failures" // failures/NNNNN: plan.json (smallest confirmed), original.json, report/
	CompareDir  = "compare"  // compare/NNNNN/K: a confirmed failure's plan run on CompareWith
)

// Shard is one of N disjoint parts of a campaign's plan sequence: plans i with i ≡ I mod N.
type Shard struct{ I, N int }

// ParseShard reads "i/n" with 0 ≤ i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 0 ≤ i < n, e.g. 0/4", s)
	}
	return Shard{I: i, N: n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// SearchOptions configure a campaign: which plans (a Space, or a Class), how many, in
// what order (Seed, Shard), how many at once, and what to do with a failure.
type SearchOptions struct {
	Registry *lockimpl.Registry
	Space    Space
	// Class, when set, replaces Space by the class's, and its detections are counted; with
	// StopAtDetection the search ends at the first.
	Class           *Class
	StopAtDetection bool

	Seed     int64
	Duration time.Duration // no new plan after this; 0: until MaxRuns
	MaxRuns  int           // plans of this shard at most; 0: until Duration
	Parallel int           // plans run at once; 0: 1
	Shard    Shard         // zero value: the whole sequence
	Out      string        // output directory (required)

	Progress func(Progress) // called on every change; nil: silent

	// Confirm is how often a failing plan is re-run to confirm it (0: DefaultConfirm;
	// negative: never, which also means no shrinking). A shrink candidate counts as
	// failing when its run shows the violation and one of up to Confirm re-runs does too.
	Confirm int
	// ShrinkTime bounds rapid's shrinking of one failure (0: DefaultShrinkTime; negative:
	// no shrinking). Shrinking goes on after Duration ends, for one more ShrinkTime at most.
	ShrinkTime time.Duration
	// SafeOnly confirms and shrinks only safe-configuration violations (and a class
	// search's detections): findings are saved and counted, not re-run.
	SafeOnly     bool
	KeepPassing  bool            // keep the run directories of passing runs too
	CheckTimeout time.Duration   // per property; 0: DefaultCheckTimeout
	Backend      cluster.Backend // nil: each run starts servers of its own
	// Render, when set, writes the summary for people beside summary.json (the CLI
	// passes report.WriteCampaign: summary.md and junit.xml), also when interrupted.
	Render func(dir string, s *Summary) error
	// Checked, when set, gets each checked, unperturbed run's plan and result, from its goroutine.
	Checked func(plan.Plan, lin.Result)
	// Thresholds, when set, are recorded in the summary: what it must decide to be conclusive.
	Thresholds *gate.Thresholds
	// CompareWith, when set, is another release of a library the campaign runs
	// (NAME@VERSION): each confirmed failure of that library's releases runs its saved
	// plan there rerun.CompareRuns times and is labelled "also in" or "fixed in" it.
	CompareWith string
}

// Progress is a campaign's state, as the progress line shows it.
type Progress struct {
	Elapsed, Duration time.Duration
	Runs, MaxRuns     int
	Errors            int
	Violations        map[lin.Property]int
	Safe, Findings    int
	Current           string     // the plan started last, e.g. "#00012 fenced single full [client-pause]"
	Finished          *RunRecord // the run that just finished, if this update is about one
	Note              string     // confirming, shrinking, a detection
}

// RunRecord is one finished run of a generated plan.
type RunRecord struct {
	Index   int
	Plan    string // short description
	Illegal []lin.Property
	Unknown []lin.Property
	Safe    []lin.Property // illegal and expected to hold
	Error   string
	RunTime time.Duration
	Ops     int
}

// SeedFor is the rapid seed of plan i of a campaign with seed seed: the same campaign
// seed gives the same sequence of plans, whatever the sharding and parallelism.
func SeedFor(seed int64, i int) int {
	x := uint64(seed)*0x9e3779b97f4a7c15 + uint64(i) + 1
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	s := int(x >> 2) // positive on 64-bit platforms, never 0 below
	if s == 0 {
		s = 1
	}
	return s
}

// PlanAt is plan i of the campaign: the generator's example for SeedFor(seed, i), named.
func PlanAt(gen *rapid.Generator[plan.Plan], seed int64, i int) plan.Plan {
	return named(rapidshrink.Example(gen, SeedFor(seed, i)), seed, i)
}

func named(p plan.Plan, seed int64, i int) plan.Plan {
	p.Name = fmt.Sprintf("campaign-%05d", i)
	p.Description = fmt.Sprintf("plan %d of `locklab campaign --seed %d`", i, seed)
	return p
}

// Search runs generated plans until Duration or MaxRuns, confirms and shrinks every
// failure, saves it, and writes summary.json (and with Render the rest) into Out. When ctx
// ends it stops the runs in flight and still writes the summary (Interrupted). Only a
// setup error (a bad space, an unwritable directory) is returned as an error.
func Search(ctx context.Context, o SearchOptions) (*Summary, error) {
	if o.Registry == nil {
		o.Registry = locks.All()
	}
	if o.Out == "" {
		return nil, errors.New("campaign: no output directory")
	}
	if o.Duration <= 0 && o.MaxRuns <= 0 {
		return nil, errors.New("campaign: neither a duration nor a number of runs bounds it")
	}
	if o.Shard.N == 0 {
		o.Shard = Shard{0, 1}
	}
	if o.Shard.I < 0 || o.Shard.I >= o.Shard.N {
		return nil, fmt.Errorf("campaign: shard %s: want 0 ≤ i < n", o.Shard)
	}
	o.Parallel = max(o.Parallel, 1)
	if o.Confirm == 0 {
		o.Confirm = DefaultConfirm
	}
	if o.Class != nil && o.Confirm < 0 {
		return nil, errors.New("campaign: a class search counts only confirmed detections: it needs at least one confirming re-run")
	}
	if o.ShrinkTime == 0 {
		o.ShrinkTime = DefaultShrinkTime
	}
	if o.CheckTimeout == 0 {
		o.CheckTimeout = DefaultCheckTimeout
	}
	sp := o.Space
	if o.Class != nil {
		sp = o.Class.Space
	}
	gen, err := PlanGen(o.Registry, sp)
	if err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	if o.CompareWith != "" {
		if o.Confirm < 0 {
			return nil, errors.New("campaign: compare with " + o.CompareWith + ": only confirmed failures are compared, and confirming is off")
		}
		if err := rerun.CheckCompareWith(o.Registry, o.CompareWith, sp.Impls); err != nil {
			return nil, fmt.Errorf("campaign: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(o.Out, PlanRunsDir), 0o755); err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	s := &searcher{o: o, gen: gen, start: time.Now(), sum: newSummary(o, sp), confirmed: map[string]int{}, waiting: map[string][]waitingFailure{}, slots: runner.NewSlots(o.Parallel)}
	if o.Class != nil {
		s.classes = []Class{*o.Class}
	} else {
		s.classes = Classes(o.Registry)
	}

	// Plain runs stop early when a class search has what it came for; confirmations and
	// shrinks of that detection run on under ctx.
	runCtx, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	s.stopRuns = stopRuns
	jobs, shrunk := make(chan shrinkJob, 1024), make(chan struct{})
	s.shrinks = jobs
	go func() {
		defer close(shrunk)
		s.shrinker(ctx, jobs)
	}()
	// Twice as many workers as slots: a worker whose run is being checked holds no slot,
	// and another takes it meanwhile, so that a check that takes its whole timeout keeps
	// no plan from running.
	var wg sync.WaitGroup
	for range 2 * o.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := s.next(runCtx)
				if !ok {
					return
				}
				s.runPlan(ctx, runCtx, i)
			}
		}()
	}
	wg.Wait()
	s.mu.Lock()
	s.tail = time.Now().Add(s.o.ShrinkTime)
	s.mu.Unlock()
	close(jobs)
	<-shrunk

	s.mu.Lock()
	sum := s.sum
	sum.Elapsed = plan.D(time.Since(s.start).Round(time.Millisecond))
	sum.Interrupted = ctx.Err() != nil
	sum.finish()
	s.mu.Unlock()
	if err := WriteSummary(o.Out, sum); err != nil {
		return sum, err
	}
	if o.Render != nil {
		if err := o.Render(o.Out, sum); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// searcher is one campaign in progress.
type searcher struct {
	o        SearchOptions
	gen      *rapid.Generator[plan.Plan]
	classes  []Class
	start    time.Time
	stopRuns context.CancelFunc

	mu        sync.Mutex // guards what follows
	started   int        // plans of this shard handed out
	stopped   bool
	confirmed map[string]int // kind of failure → the run confirmed and shrunk for it
	// waiting are the failures of a kind that came while its first was being confirmed:
	// should that one not reproduce, the next is confirmed in its place.
	waiting map[string][]waitingFailure
	tail    time.Time // once no plan starts any more: when every shrink must end
	current string
	sum     *Summary

	shrinks chan<- shrinkJob // to the shrinker
	slots   *runner.Slots    // the plans' runs and their confirmations: Parallel at once

	progMu sync.Mutex // serialises Progress calls
}

// next hands out the index of the next plan of the shard, or false when the campaign is over.
func (s *searcher) next(ctx context.Context) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped, ctx.Err() != nil,
		s.o.MaxRuns > 0 && s.started >= s.o.MaxRuns,
		s.o.Duration > 0 && time.Since(s.start) >= s.o.Duration:
		return 0, false
	}
	i := s.o.Shard.I + s.started*s.o.Shard.N
	s.started++
	return i, true
}

// runPlan runs plan i and, when it fails, confirms, shrinks and saves it.
func (s *searcher) runPlan(ctx, runCtx context.Context, i int) {
	p := PlanAt(s.gen, s.o.Seed, i)
	impl, _ := s.o.Registry.Get(p.Impl) // the generator draws registered names only
	desc := fmt.Sprintf("#%05d %s", i, describePlan(p))
	s.mu.Lock()
	s.current = desc
	s.mu.Unlock()
	s.emit("", nil)

	dir := filepath.Join(s.o.Out, PlanRunsDir, fmt.Sprintf("%05d", i))
	rep, err := s.run(runCtx, p, dir, s.slots)
	if err != nil {
		if runCtx.Err() != nil {
			_ = os.RemoveAll(dir)
			return // interrupted, or stopped by a detection: not a run of the campaign
		}
		// The directory keeps what the run left (the servers' logs among it) and the plan,
		// which a run that could not even resolve never wrote.
		_ = os.MkdirAll(dir, 0o755)
		if _, serr := os.Stat(filepath.Join(dir, runner.PlanFile)); serr != nil {
			_ = os.WriteFile(filepath.Join(dir, runner.PlanFile), p.MarshalIndent(), 0o644)
		}
		_ = os.WriteFile(filepath.Join(dir, ErrorFile), []byte(err.Error()+"\n"), 0o644)
		rec := &RunRecord{Index: i, Plan: desc, Error: err.Error()}
		s.mu.Lock()
		s.sum.addError(p, i, s.rel(dir), err)
		s.mu.Unlock()
		s.emit("", rec)
		return
	}
	by := expect.ExpectedBy(p, impl)
	if rep.Perturbed != "" {
		// The harness stalled: whatever the checkers say may be about this machine, so it
		// is neither a violation nor a pass of the plan; a violation is a finding under
		// load. The run is kept for a look.
		rec := &RunRecord{Index: i, Plan: desc, Error: "perturbed: " + rep.Perturbed, RunTime: rep.RunTime, Ops: rep.Ops}
		s.mu.Lock()
		u := s.sum.addPerturbed(p, i, rep, by, s.rel(dir))
		s.mu.Unlock()
		note := fmt.Sprintf("#%05d: perturbed (%s)", i, rep.Perturbed)
		if u != nil {
			note = fmt.Sprintf("#%05d: %s illegal UNDER LOAD (perturbed: %s)", i, lin.JoinProperties(u.Illegal, ","), rep.Perturbed)
		}
		s.emit(note, rec)
		return
	}
	if s.o.Checked != nil {
		s.o.Checked(p, rep.Result)
	}
	illegal, unknown := splitVerdicts(rep.Result)
	rec := &RunRecord{Index: i, Plan: desc, Illegal: illegal, Unknown: unknown, RunTime: rep.RunTime, Ops: rep.Ops}
	for _, prop := range illegal {
		if by[prop] != "" {
			rec.Safe = append(rec.Safe, prop)
		}
	}
	after := time.Since(s.start)

	var detected []string
	var f *Failure
	var key string
	shrink := false
	s.mu.Lock()
	s.sum.addRun(p, rep, rec, by)
	if len(illegal) > 0 {
		for _, c := range s.classes {
			if len(c.Detects(p, illegal)) > 0 {
				detected = append(detected, c.ID)
			}
		}
		f = s.sum.addFailure(p, i, rep, rec, detected, by, after, s.rel(dir))
		f.Target, _ = s.target(p, illegal, by)
		// Only the first failure of its kind is confirmed and shrunk: the campaign
		// would otherwise spend its time shrinking the same bug (a mutant fails in most of
		// its runs). The kind is what the failure shows (kindOf), so a library's own
		// bug is not folded into the violations every lock shows under the same fault.
		// A class search confirms and shrinks what it came for only.
		key = fmt.Sprintf("%s target %s safe=%v", f.Kind, f.Target, len(rec.Safe) > 0)
		if len(rec.Safe) > 0 {
			key += " " + groupName(p)
		}
		if s.o.Class != nil && len(rec.Safe) == 0 {
			key = "class " + s.o.Class.ID // one detection is what it came for, whatever it shows
		}
		if s.o.Class != nil && len(detected) == 0 {
			f.Note, shrink = "not the searched class: not confirmed", false
		} else if s.o.SafeOnly && len(rec.Safe) == 0 && len(detected) == 0 {
			f.Note, shrink = "a finding: not confirmed (safe-configuration violations only)", false
		} else if first, seen := s.confirmed[key]; seen {
			f.Note, shrink = fmt.Sprintf("not confirmed: run %d, a failure of the same kind, was taken up first", first), false
			s.waiting[key] = append(s.waiting[key], waitingFailure{p: p, impl: impl, i: i, rep: rep, f: f})
		} else {
			s.confirmed[key], shrink = i, true
		}
	}
	s.mu.Unlock()
	if len(illegal) == 0 {
		if !s.o.KeepPassing {
			_ = os.RemoveAll(dir)
		}
		s.emit("", rec)
		return
	}
	note := fmt.Sprintf("#%05d: %s illegal", i, lin.JoinProperties(illegal, ","))
	if len(rec.Safe) > 0 {
		note += fmt.Sprintf(" (SAFE CONFIGURATION: %s expected to hold)", lin.JoinProperties(rec.Safe, ","))
	}
	if len(detected) > 0 {
		note += ", class " + strings.Join(detected, ", ")
	}
	s.emit(note, rec)
	if shrink {
		s.confirmKind(ctx, key, waitingFailure{p: p, impl: impl, i: i, rep: rep, f: f})
	}
}

// waitingFailure is a failure waiting for its confirmation.
type waitingFailure struct {
	p    plan.Plan
	impl lockimpl.Impl
	i    int
	rep  runner.Report
	f    *Failure
}

// confirmKind confirms w, the failure taken up for its kind; while one taken up does not
// reproduce, the next that came meanwhile is confirmed in its place, and once none is
// left the next failure of the kind to come gets its own chance.
func (s *searcher) confirmKind(ctx context.Context, key string, w waitingFailure) {
	for !s.handleFailure(ctx, w.p, w.impl, w.i, w.rep, w.f) && ctx.Err() == nil && s.o.Confirm >= 0 {
		s.mu.Lock()
		failed := w.i
		next := s.waiting[key]
		if len(next) == 0 {
			delete(s.confirmed, key)
			s.mu.Unlock()
			return
		}
		w, s.waiting[key] = next[0], next[1:]
		s.confirmed[key] = w.i
		w.f.Note = fmt.Sprintf("confirmed in place of run %d, a failure of the same kind that did not reproduce", failed)
		s.mu.Unlock()
	}
	s.mu.Lock()
	delete(s.waiting, key) // confirmed (or cut short): the others keep their note
	s.mu.Unlock()
}

// verdicts are the illegal and the unknown properties of a result, in report order.
func splitVerdicts(r lin.Result) (illegal, unknown []lin.Property) {
	for _, pr := range r.Properties {
		switch pr.Verdict {
		case lin.Illegal:
			illegal = append(illegal, pr.Property)
		case lin.Unknown:
			unknown = append(unknown, pr.Property)
		}
	}
	return illegal, unknown
}

// shrinkOrder is the order in which a failure's property to shrink on is chosen, after
// the expected ones: the rarer violations first.
func shrinkOrder() []lin.Property {
	return []lin.Property{lin.P2, lin.P3, lin.P6, lin.P4, lin.P5, lin.L1, lin.P1}
}

// target is the property a failure is confirmed and shrunk on: a violated property the
// models expected to hold, else one the searched class detects, else the rarest.
func (s *searcher) target(p plan.Plan, illegal []lin.Property, by map[lin.Property]string) (lin.Property, bool) {
	for _, prop := range shrinkOrder() {
		if slices.Contains(illegal, prop) && by[prop] != "" {
			return prop, true
		}
	}
	if s.o.Class != nil {
		for _, prop := range shrinkOrder() {
			if slices.Contains(s.o.Class.Detects(p, illegal), prop) {
				return prop, false
			}
		}
	}
	for _, prop := range shrinkOrder() {
		if slices.Contains(illegal, prop) {
			return prop, false
		}
	}
	return "", false
}

// reproduces reports whether rep shows the failure again: the same property illegal, and
// for a safe-configuration violation in a plan the models still expect it to hold in.
func (s *searcher) reproduces(rep runner.Report, prop lin.Property, safe bool) bool {
	if rep.Perturbed != "" {
		return false // a stalled harness proves nothing either way
	}
	illegal, _ := splitVerdicts(rep.Result)
	if !slices.Contains(illegal, prop) {
		return false
	}
	if !safe {
		return true
	}
	impl, _ := s.o.Registry.Get(rep.Plan.Impl)
	return expect.Expected(rep.Plan, impl)[prop]
}

// run resolves p for one run and runs it into dir, in one of slots (nil: beside them).
// Its check runs beside the other runs: a check that disturbs one shows there as a stall
// of the harness, and that run is perturbed, neither a pass nor a violation.
func (s *searcher) run(ctx context.Context, p plan.Plan, dir string, slots *runner.Slots) (runner.Report, error) {
	r, err := p.Resolve(s.o.Registry)
	if err != nil {
		return runner.Report{Plan: p}, err
	}
	return runner.Run(ctx, r, runner.Options{Backend: s.o.Backend, Dir: dir, CheckTimeout: s.o.CheckTimeout, Slots: slots, Pictures: s.kept})
}

// kept reports whether the directory of a run with this report outlives the run: a
// perturbed run's, a failing run's (confirmations and shrink candidates keep only
// those), every run's with KeepPassing. Only those get their pictures drawn.
func (s *searcher) kept(rep runner.Report) bool {
	return s.o.KeepPassing || rep.Perturbed != "" || rep.Result.Violation()
}

// handleFailure confirms a failing plan by re-running it and, when it reproduces, hands
// it to the shrinker (or saves it at once when shrinking is off). A re-run that shows a
// class the failing run detected confirms that detection; only then does it count, and
// a class search that stops at its detection stops then. It reports whether anything
// was confirmed.
func (s *searcher) handleFailure(ctx context.Context, p plan.Plan, impl lockimpl.Impl, i int, rep runner.Report, f *Failure) bool {
	prop, safe := s.target(p, f.Illegal, expect.ExpectedBy(p, impl))
	if s.o.Confirm < 0 {
		return false
	}
	base := filepath.Join(s.o.Out, PlanRunsDir, fmt.Sprintf("%05d", i))
	reproduced, confirmDir := 0, ""
	classSeen := map[string]bool{}
	for j := 1; j <= s.o.Confirm; j++ {
		s.emit(fmt.Sprintf("#%05d: confirming %s (%d/%d)", i, prop, j, s.o.Confirm), nil)
		dir := fmt.Sprintf("%s-confirm%d", base, j)
		crep, err := s.run(ctx, p, dir, s.slots)
		s.mu.Lock()
		s.sum.Reruns++
		s.mu.Unlock()
		if err == nil && crep.Perturbed == "" {
			illegal, _ := splitVerdicts(crep.Result)
			for _, c := range s.classes {
				if slices.Contains(f.Classes, c.ID) && len(c.Detects(p, illegal)) > 0 {
					classSeen[c.ID] = true
				}
			}
		}
		if err == nil && s.reproduces(crep, prop, safe) {
			reproduced++
			if confirmDir == "" {
				confirmDir = dir
				continue
			}
		}
		_ = os.RemoveAll(dir)
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return false // cut short: neither confirmed nor refuted
	}
	after := time.Since(s.start)
	stop := false
	s.mu.Lock()
	f.Reproduced, f.Confirms = reproduced, s.o.Confirm
	for _, c := range f.Classes {
		s.sum.confirmDetection(f, c, classSeen[c], after)
		if classSeen[c] && s.o.Class != nil && c == s.o.Class.ID && s.o.StopAtDetection && !s.stopped {
			s.stopped, stop = true, true
		}
	}
	s.mu.Unlock()
	if stop {
		s.stopRuns()
	}
	if len(classSeen) < len(f.Classes) {
		s.emit(fmt.Sprintf("#%05d: detection not confirmed in %d re-runs: %s", i, s.o.Confirm, strings.Join(f.Classes, ", ")), nil)
	}
	if reproduced == 0 {
		s.emit(fmt.Sprintf("#%05d: %s did not reproduce in %d re-runs: kept, not shrunk", i, prop, s.o.Confirm), nil)
		return len(classSeen) > 0
	}
	job := shrinkJob{i: i, p: p, dir: confirmDir, ops: rep.Ops, prop: prop, safe: safe, f: f}
	if s.o.ShrinkTime <= 0 {
		s.finish(ctx, job, job.p, job.dir, job.ops, shrinkStats{}, false)
		return true
	}
	s.shrinks <- job
	return true
}

// shrinkJob is a confirmed failure waiting to be shrunk.
type shrinkJob struct {
	i    int
	p    plan.Plan
	dir  string // its confirming run
	ops  int
	prop lin.Property
	safe bool
	f    *Failure
}

// shrinker shrinks confirmed failures one at a time (rapid's configuration is global),
// while the workers go on running plans. Once no new plan starts, the shrink in progress
// and what is still queued share one more ShrinkTime; what it does not reach is saved
// unshrunk. A campaign thus ends at most ShrinkTime (and a run) after its Duration.
func (s *searcher) shrinker(ctx context.Context, jobs <-chan shrinkJob) {
	for job := range jobs {
		budget := s.o.ShrinkTime
		if tail := s.tailDeadline(); !tail.IsZero() {
			budget = min(budget, time.Until(tail))
		}
		if budget < time.Second || ctx.Err() != nil {
			s.mu.Lock()
			job.f.Note = "not shrunk: the campaign ended first"
			s.mu.Unlock()
			s.finish(ctx, job, job.p, job.dir, job.ops, shrinkStats{}, false)
			continue
		}
		s.emit(fmt.Sprintf("#%05d: shrinking on %s (up to %s)", job.i, job.prop, budget.Round(time.Second)), nil)
		best, dir, ops, st, err := s.shrink(ctx, job, budget)
		if err != nil {
			s.mu.Lock()
			job.f.Note = "shrink failed: " + err.Error()
			s.mu.Unlock()
		}
		s.finish(ctx, job, best, dir, ops, st, true)
	}
}

// tailDeadline is when every shrink must end, once no plan starts any more (else zero).
func (s *searcher) tailDeadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tail
}

// finish saves a confirmed failure (shrunk to best, or not) and records it; with
// CompareWith, best then runs on the other release.
func (s *searcher) finish(ctx context.Context, job shrinkJob, best plan.Plan, bestDir string, bestOps int, st shrinkStats, shrunk bool) {
	i, f := job.i, job.f
	saved, report, err := s.save(i, job.p, best, bestDir)
	_ = os.RemoveAll(filepath.Join(s.o.Out, ShrinkDir, fmt.Sprintf("%05d", i)))
	s.mu.Lock()
	if err != nil {
		f.Note = strings.TrimPrefix(f.Note+"; ", "; ") + "save failed: " + err.Error()
		s.mu.Unlock()
		return
	}
	f.Saved, f.Report = s.rel(saved), s.rel(report)
	if shrunk {
		size := sizeOf(best, bestOps)
		f.Shrunk = &size
		f.ShrinkCandidates, f.ShrinkRuns, f.ShrinkTime = st.candidates, st.runs, plan.D(st.took.Round(time.Millisecond))
		s.sum.Reruns += st.runs
	}
	note := fmt.Sprintf("#%05d: saved %s (%s)", i, f.Saved, f.SizeNote())
	s.mu.Unlock()
	s.emit(note, nil)
	if s.o.CompareWith != "" && rerun.SameLibrary(best.Impl, s.o.CompareWith) && ctx.Err() == nil {
		c := s.compare(ctx, i, best, f.Illegal)
		s.mu.Lock()
		f.Compare = c
		s.mu.Unlock()
		s.emit(fmt.Sprintf("#%05d: %s", i, c), nil)
	}
}

// save writes failures/NNNNN: plan.json (the smallest confirmed plan), original.json,
// and report/ (the run that confirmed plan.json).
func (s *searcher) save(i int, orig, best plan.Plan, reportDir string) (planPath, reportPath string, err error) {
	dir := filepath.Join(s.o.Out, FailuresDir, fmt.Sprintf("%05d", i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	planPath = filepath.Join(dir, runner.PlanFile)
	if err := os.WriteFile(planPath, best.MarshalIndent(), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "original.json"), orig.MarshalIndent(), 0o644); err != nil {
		return "", "", err
	}
	reportPath = filepath.Join(dir, "report")
	if err := os.Rename(reportDir, reportPath); err != nil {
		return "", "", fmt.Errorf("move report %s: %w", reportDir, err)
	}
	return planPath, reportPath, nil
}

// rel is path relative to the output directory, as summaries record paths.
func (s *searcher) rel(path string) string {
	if r, err := filepath.Rel(s.o.Out, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

// emit reports progress with an optional note and finished run.
func (s *searcher) emit(note string, rec *RunRecord) {
	if s.o.Progress == nil {
		return
	}
	s.mu.Lock()
	pr := Progress{
		Elapsed: time.Since(s.start), Duration: s.o.Duration, Runs: s.sum.Runs, MaxRuns: s.o.MaxRuns,
		Errors: s.sum.Errors, Violations: maps.Clone(s.sum.Violations), Safe: s.sum.SafeViolations,
		Findings: s.sum.Findings, Current: s.current, Finished: rec, Note: note,
	}
	s.mu.Unlock()
	s.progMu.Lock()
	defer s.progMu.Unlock()
	s.o.Progress(pr)
}

// describe is a plan in one line: "fenced single full [client-pause server-clock]".
func describePlan(p plan.Plan) string {
	return fmt.Sprintf("%s %s %s [%s] %dc ttl %s", p.Impl, p.Topology, p.Fencing, strings.ReplaceAll(faultKinds(p), ",", " "), p.Clients, p.TTL.D())
}

// shrinkStats says what a shrink cost.
type shrinkStats struct {
	candidates int // distinct plans run
	runs       int // real runs, confirmations included
	took       time.Duration
}

// candidate is what is known of a plan tried while shrinking.
type candidate struct {
	fails bool
	dir   string // the confirming run's directory, when it fails
	ops   int
}

// shrinkState is one shrink in progress: the plans tried, by their content.
type shrinkState struct {
	s     *searcher
	ctx   context.Context
	index int
	prop  lin.Property
	safe  bool
	tried map[string]candidate
	last  plan.Plan // the last plan that failed: after rapid's final replay, its smallest
	stats shrinkStats
}

// planKey is a plan's content without its name: two draws that give the same plan are
// the same candidate.
func planKey(p plan.Plan) string {
	p.Name, p.Description = "", ""
	return string(p.MarshalIndent())
}

// shrink has rapid shrink a confirmed failure of plan p (plan index i): rapid's check,
// seeded with the plan's own seed, draws p first (a known failure, not run again), then
// shrinks the draws that produced it; every candidate plan is run and counts as failing
// only when the violation of prop shows and a confirmation re-run shows it again. Shrinks
// run one at a time in a process (rapidshrink owns rapid's process-wide flags).
func (s *searcher) shrink(ctx context.Context, job shrinkJob, budget time.Duration) (plan.Plan, string, int, shrinkStats, error) {
	start := time.Now()
	i, p, dir, ops, prop, safe := job.i, job.p, job.dir, job.ops, job.prop, job.safe
	sh := &shrinkState{s: s, ctx: ctx, index: i, prop: prop, safe: safe, last: p,
		tried: map[string]candidate{planKey(p): {fails: true, dir: dir, ops: ops}}}
	failed, err := rapidshrink.Shrink(s.gen, SeedFor(s.o.Seed, i), budget, fmt.Sprintf("%s violation reproduced", prop),
		func(c plan.Plan) bool { return sh.fails(named(c, s.o.Seed, i)) })
	sh.stats.took = time.Since(start)
	switch {
	case err != nil:
		return p, dir, ops, sh.stats, err
	case !failed:
		// rapid did not see the known failure: only when its first draw is not the plan.
		return p, dir, ops, sh.stats, errors.New("rapid's first draw was not the failing plan; kept unshrunk")
	}
	best := sh.tried[planKey(sh.last)]
	return sh.last, best.dir, best.ops, sh.stats, nil
}

// fails runs candidate c (once for every distinct plan) and reports whether it fails.
func (sh *shrinkState) fails(c plan.Plan) bool {
	key := planKey(c)
	if k, ok := sh.tried[key]; ok {
		if k.fails {
			sh.last = c
		}
		return k.fails
	}
	s := sh.s
	if tail := s.tailDeadline(); sh.ctx.Err() != nil || (!tail.IsZero() && time.Now().After(tail)) {
		return false // out of time: rapid runs through its remaining candidates at once
	}
	sh.stats.candidates++
	dir := filepath.Join(s.o.Out, ShrinkDir, fmt.Sprintf("%05d", sh.index), fmt.Sprintf("%03d", sh.stats.candidates))
	s.emit(fmt.Sprintf("#%05d: shrink candidate %d: %s", sh.index, sh.stats.candidates, describePlan(c)), nil)
	rep, err := s.run(sh.ctx, c, dir, nil)
	sh.stats.runs++
	k := candidate{}
	if err == nil && s.reproduces(rep, sh.prop, sh.safe) {
		for j := 1; j <= max(s.o.Confirm, 1); j++ {
			cdir := fmt.Sprintf("%s-confirm%d", dir, j)
			crep, err := s.run(sh.ctx, c, cdir, nil)
			sh.stats.runs++
			if err == nil && s.reproduces(crep, sh.prop, sh.safe) {
				k = candidate{fails: true, dir: cdir, ops: crep.Ops}
				break
			}
			_ = os.RemoveAll(cdir)
		}
	}
	_ = os.RemoveAll(dir)
	if sh.ctx.Err() != nil {
		return false // cut short: neither a pass nor a failure worth remembering
	}
	sh.tried[key] = k
	if k.fails {
		sh.last = c
		s.emit(fmt.Sprintf("#%05d: smaller plan confirmed: %s", sh.index, describePlan(c)), nil)
	}
	return k.fails
}
