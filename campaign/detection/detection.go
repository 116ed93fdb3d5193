package detection

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/campaign/expect"
	"github.com/locklab/locklab/internal/gate"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// Options configure the time-to-detection benchmark: for each bug class, class
// searches from Seeds seeds, each until its first confirmed detection or MaxRuns plans;
// then, per correct implementation, fault-free calm campaigns until ClaimedPairs
// (plan, property) pairs that the expectation rules claim have been decided, which
// counts false alarms where the models make a claim.
type Options struct {
	Registry *lockimpl.Registry
	Classes  []string // class IDs; empty: every class
	Seeds    int      // searches per class; 0: 10; negative: none (false alarms only)
	Seed     int64    // the first seed; the others follow it
	MaxRuns  int      // plans per search at most; 0: 60
	// ClaimedPairs is how many claimed (plan, property) pairs the checkers must decide per
	// correct implementation before its false alarms are counted; 0: 1000, negative: none.
	ClaimedPairs int
	// Impls are the correct implementations whose false alarms are counted; empty: every
	// correct implementation of the registry.
	Impls []string
	// NoFaultFree skips the fault-free false alarms (Families alone, say).
	NoFaultFree bool
	// Families are the rule families (Families) whose false alarms under faults are
	// counted, each until ClaimedPairs pairs that its rules claim were decided.
	Families []string
	Parallel int    // plans at once within a search; 0: 1
	Out      string // output directory (required)
	// Shrink shrinks the first seed's detection of each class, to report how small the
	// counterexample gets; the other seeds only time the detection.
	Shrink     bool
	ShrinkTime time.Duration // per shrink; 0: the search's default
	Progress   func(string)  // one line per finished search; nil: silent
	// Render is passed to every search (campaign.SearchOptions.Render).
	Render func(dir string, s *campaign.Summary) error
}

// Row is one class's result over its seeds.
type Row struct {
	Class  string            `json:"class"`
	Detect []lin.Property    `json:"detect"`
	Seeds  int               `json:"seeds"`
	Found  int               `json:"found"`
	Times  []plan.Duration   `json:"times"` // per seed that found it: time to the first detection
	Plans  []int             `json:"plans"` // per seed that found it: plans run by then, that one included
	Missed []int64           `json:"missed,omitempty"`
	Shrunk *campaign.Failure `json:"shrunk,omitempty"` // the first seed's detection, shrunk
	// Unconfirmed counts detections whose re-runs did not show the class again: never
	// counted as found.
	Unconfirmed int            `json:"unconfirmed,omitempty"`
	Elapsed     plan.Duration  `json:"elapsed"`
	Space       campaign.Space `json:"space"`
	// Runs and Perturbed count the plans of its searches that ran to a verdict and, apart,
	// those whose harness stalled; Pairs their (plan, property) pairs by outcome.
	Runs      int                 `json:"runs"`
	Perturbed int                 `json:"perturbed,omitempty"`
	Pairs     campaign.ClaimCount `json:"pairs"`
}

// FalseAlarms is one implementation's false-alarm count: over how many claimed
// (plan, property) pairs, from how many plans, and how many were violated.
type FalseAlarms struct {
	Impl   string `json:"impl"`
	Plans  int    `json:"plans"`
	Errors int    `json:"errors"` // plans that failed to run
	// Perturbed counts the plans whose harness stalled: their pairs are not counted.
	Perturbed int                 `json:"perturbed,omitempty"`
	Claims    campaign.ClaimCount `json:"claims"`
}

// Missed is each class that some seed did not find, as "class (found/seeds)".
func (r Result) Missed() []string {
	var out []string
	for _, row := range r.Rows {
		if row.Found < row.Seeds {
			out = append(out, fmt.Sprintf("%s (%d/%d)", row.Class, row.Found, row.Seeds))
		}
	}
	return out
}

// Alarms counts the false alarms: claimed pairs violated, fault-free and under faults.
func (r Result) Alarms() int {
	n := 0
	for _, fa := range r.FalseAlarms {
		n += fa.Claims.Violated
	}
	for _, fa := range r.Faulted {
		n += fa.Claims.Violated
	}
	return n
}

// Decided is what the benchmark decided: the pairs of its class searches, the claimed
// pairs of its false-alarm campaigns, and their runs.
func (r Result) Decided() gate.Counts {
	var g gate.Counts
	add := func(c campaign.ClaimCount, runs, perturbed int) {
		g.Add(gate.Counts{Decided: c.Decided(), Undecided: c.Undecided, Perturbed: c.Perturbed, Runs: runs + perturbed, PerturbedRuns: perturbed})
	}
	for _, row := range r.Rows {
		add(row.Pairs, row.Runs, row.Perturbed)
	}
	for _, fa := range r.FalseAlarms {
		add(fa.Claims, fa.Plans, fa.Perturbed)
	}
	for _, fa := range r.Faulted {
		add(fa.Claims, fa.Plans, fa.Perturbed)
	}
	return g
}

// Family is a family of expectation rules whose claims under faults are put to the
// test: random plans of its space, counting the (plan, property) pairs its rules claim.
type Family struct {
	Name        string
	Description string
	Rules       []string // rules of campaign/expect
	Space       campaign.Space
}

// Families are the rule families whose false alarms under faults can be counted: where
// the rules claim a property through a fault that breaks it without their precondition.
func Families() []Family {
	return []Family{{
		Name: "fencing-full", Rules: []string{"full-fencing-single-server"},
		Description: "P2 of fenced with fencing full on one server, under client pauses and slow links (slow writes among them)",
		Space:       campaign.Space{Impls: []string{"fenced"}, Fencings: []string{"full"}, Faults: []string{"client-pause", "net-latency"}, MinFaults: 1},
	}, {
		Name: "renewal", Rules: []string{"renewal-outlives-a-thread-pause"},
		Description: "P1 and P2 of the renewing locks (watchdog, rueidislock, etcd) under thread pauses of their careful clients",
		Space:       campaign.Space{Impls: []string{"watchdog", "rueidislock", "etcd"}, Faults: []string{"client-pause"}, MinFaults: 1, Careful: true},
	}, {
		Name: "etcd-fences", Rules: []string{"fences-consensus"},
		Description: "P3 of etcd's lock, in and out of process, under member crashes and partitions (links black-holed, between members too)",
		Space:       campaign.Space{Impls: []string{"etcd", "etcd-process"}, Faults: []string{"server-crash", "net-blackhole"}, MinFaults: 1},
	}, {
		Name: "zookeeper", Rules: []string{"fences-consensus", "honest-answers-zookeeper"},
		Description: "P3 and P6 of ZooKeeper's lock, in and out of process, under member crashes and partitions (links black-holed, between members too)",
		Space:       campaign.Space{Impls: []string{"zookeeper", "zookeeper-process"}, Faults: []string{"server-crash", "net-blackhole"}, MinFaults: 1},
	}}
}

// FamilyByName is the family called name.
func FamilyByName(name string) (Family, error) {
	for _, f := range Families() {
		if f.Name == name {
			return f, nil
		}
	}
	var names []string
	for _, f := range Families() {
		names = append(names, f.Name)
	}
	return Family{}, fmt.Errorf("no rule family %q (families: %v)", name, names)
}

// FamilyNames checks names of families, "all" alone standing for every family.
func FamilyNames(names []string) ([]string, error) {
	if len(names) == 1 && names[0] == "all" {
		names = nil
		for _, f := range Families() {
			names = append(names, f.Name)
		}
	}
	for _, name := range names {
		if _, err := FamilyByName(name); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// FamilyAlarms is one family's false-alarm count under faults: the pairs its rules
// claimed, from how many plans, and how many were violated.
type FamilyAlarms struct {
	Family    string              `json:"family"`
	Rules     []string            `json:"rules"`
	Plans     int                 `json:"plans"`
	Errors    int                 `json:"errors"`
	Perturbed int                 `json:"perturbed,omitempty"` // plans whose harness stalled
	Claims    campaign.ClaimCount `json:"claims"`
}

// Result is the whole benchmark.
type Result struct {
	Started   time.Time     `json:"started"`
	Elapsed   plan.Duration `json:"elapsed"`
	Seeds     int           `json:"seeds"`
	FirstSeed int64         `json:"first_seed"`
	MaxRuns   int           `json:"max_runs"`
	Rows      []Row         `json:"rows"`
	// FalseAlarms is, per correct implementation, what its fault-free calm plans showed
	// on the pairs the rules claim.
	FalseAlarms []FalseAlarms `json:"false_alarms"`
	// Faulted is, per rule family, what faulted plans showed on the pairs its rules claim.
	Faulted      []FamilyAlarms `json:"faulted,omitempty"`
	ClaimedPairs int            `json:"claimed_pairs"` // the target per implementation and per family
	GoVersion    string         `json:"go_version"`
	Interrupted  bool           `json:"interrupted,omitempty"`
	// Thresholds, when set, are what the benchmark must decide to be conclusive.
	Thresholds *gate.Thresholds `json:"thresholds,omitempty"`
}

// Inconclusive says why the benchmark decided too little to count a missed class, or
// nil: without thresholds, and after a false alarm (a failure whatever else), it is nil.
func (r Result) Inconclusive() error {
	if r.Thresholds == nil || r.Alarms() > 0 {
		return nil
	}
	return r.Thresholds.Check(r.Decided(), "(plan, property) pairs")
}

func (o Options) withDefaults() Options {
	if o.Registry == nil {
		o.Registry = locks.All()
	}
	if o.Seeds == 0 {
		o.Seeds = 10
	}
	if o.MaxRuns == 0 {
		o.MaxRuns = 60
	}
	if o.ClaimedPairs == 0 {
		o.ClaimedPairs = 1000
	}
	return o
}

// Run runs the benchmark. A cancelled ctx ends it early; what was measured is
// returned with Interrupted set.
func Run(ctx context.Context, o Options) (res Result, err error) {
	o = o.withDefaults()
	if o.Out == "" {
		return Result{}, fmt.Errorf("detection: no output directory")
	}
	if o.MaxRuns < 1 {
		return Result{}, fmt.Errorf("detection: max runs must be positive")
	}
	for _, name := range o.Impls {
		impl, err := o.Registry.Get(name)
		if err != nil {
			return Result{}, fmt.Errorf("detection: %w", err)
		}
		if impl.Mutant {
			return Result{}, fmt.Errorf("detection: %s is a mutant: false alarms are counted on correct implementations only", name)
		}
	}
	for _, name := range o.Families {
		if _, err := FamilyByName(name); err != nil {
			return Result{}, fmt.Errorf("detection: %w", err)
		}
	}
	var classes []campaign.Class
	if o.Seeds < 0 {
		o.Seeds = 0 // no class searches: false alarms only
	} else if len(o.Classes) == 0 {
		classes = campaign.Classes(o.Registry)
	}
	for _, id := range o.Classes {
		c, err := campaign.ClassByID(o.Registry, id)
		if err != nil {
			return Result{}, err
		}
		classes = append(classes, c)
	}
	res = Result{Started: time.Now().UTC(), Seeds: o.Seeds, FirstSeed: o.Seed, MaxRuns: o.MaxRuns, GoVersion: runtime.Version()}
	start := time.Now()
	defer func() { res.Elapsed = plan.D(time.Since(start)) }()
	for _, c := range classes {
		row := Row{Class: c.ID, Detect: c.Detect, Seeds: o.Seeds, Space: c.Space}
		classStart := time.Now()
		for k := range o.Seeds {
			seed := o.Seed + int64(k)
			class := c
			shrink := time.Duration(-1)
			if o.Shrink && k == 0 {
				shrink = o.ShrinkTime // 0: the search's default
			}
			sum, err := campaign.Search(ctx, campaign.SearchOptions{
				Registry: o.Registry, Class: &class, StopAtDetection: true, Seed: seed, MaxRuns: o.MaxRuns,
				Parallel: o.Parallel, Out: filepath.Join(o.Out, c.ID, fmt.Sprint(seed)), ShrinkTime: shrink, SafeOnly: true, Render: o.Render,
			})
			if ctx.Err() != nil {
				res.Interrupted = true
				row.Elapsed = plan.D(time.Since(classStart))
				res.Rows = append(res.Rows, row)
				return res, nil
			}
			if err != nil {
				return res, fmt.Errorf("class %s, seed %d: %w", c.ID, seed, err)
			}
			row.Unconfirmed += sum.Unconfirmed[c.ID]
			row.Runs, row.Perturbed = row.Runs+sum.Runs, row.Perturbed+sum.Perturbed
			row.Pairs.Add(sum.Pairs)
			first, ok := sum.FirstDetection[c.ID]
			if !sum.Detected || !ok {
				row.Missed = append(row.Missed, seed)
				o.progress("%s seed %d: not found in %d plans (%s)", c.ID, seed, sum.Runs, sum.Elapsed.D().Round(time.Second))
				continue
			}
			row.Found++
			row.Times = append(row.Times, first.After)
			row.Plans = append(row.Plans, first.Runs)
			if o.Shrink && k == 0 {
				row.Shrunk = shrunkDetection(sum, c.ID)
			}
			o.progress("%s seed %d: found after %s, %d plans (%s)", c.ID, seed, first.After.D().Round(time.Millisecond), first.Runs, first.Plan)
		}
		row.Elapsed = plan.D(time.Since(classStart))
		res.Rows = append(res.Rows, row)
	}
	res.ClaimedPairs = max(o.ClaimedPairs, 0)
	for _, impl := range o.Registry.List() {
		if impl.Mutant || o.ClaimedPairs < 0 || o.NoFaultFree || (len(o.Impls) > 0 && !slices.Contains(o.Impls, impl.Name)) {
			continue
		}
		space := campaign.Space{Impls: []string{impl.Name}, Faults: []string{campaign.NoFaults}, Calm: true}
		fa, err := untilDecided(ctx, o, "fault-free "+impl.Name, filepath.Join(o.Out, FaultFreeDir, impl.Name), space, nil)
		fa.Impl = impl.Name
		res.FalseAlarms = append(res.FalseAlarms, fa)
		if ctx.Err() != nil {
			res.Interrupted = true
			return res, nil
		}
		if err != nil {
			return res, err
		}
	}
	for _, name := range o.Families {
		f, _ := FamilyByName(name) // checked above
		fa := FamilyAlarms{Family: f.Name, Rules: f.Rules}
		var err error
		if o.ClaimedPairs > 0 {
			var t FalseAlarms
			t, err = untilDecided(ctx, o, "family "+f.Name, filepath.Join(o.Out, FaultedDir, f.Name), f.Space, f.Rules)
			fa.Plans, fa.Errors, fa.Perturbed, fa.Claims = t.Plans, t.Errors, t.Perturbed, t.Claims
		}
		res.Faulted = append(res.Faulted, fa)
		if ctx.Err() != nil {
			res.Interrupted = true
			return res, nil
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// Where Run puts the campaigns of the false-alarm counts: <dir>/<impl or family>/<seed>.
const (
	FaultFreeDir = "fault-free"
	FaultedDir   = "faulted"
)

// untilDecided runs campaigns of space in batches until the checkers decided
// o.ClaimedPairs (plan, property) pairs that rules claim (any rule when rules is nil, else
// those named), and counts them. A batch is sized from what the last one yielded; a batch
// that decides nothing ends it with an error: its space yields no claim.
func untilDecided(ctx context.Context, o Options, what, dir string, space campaign.Space, rules []string) (FalseAlarms, error) {
	var fa FalseAlarms
	perPlan := 4.0 // P1, P2, P3, L1; fewer when a property has nothing to check or no claim
	last := 0      // plans of the last batch; the next has at most 4 times as many (a small sample's estimate overshoots)
	for batch := 0; fa.Claims.Decided() < o.ClaimedPairs; batch++ {
		left := o.ClaimedPairs - fa.Claims.Decided()
		seed := o.Seed + int64(batch)
		runs := int(float64(left)/perPlan) + 1
		if last > 0 {
			runs = min(runs, 4*last)
		}
		var mu sync.Mutex
		var got campaign.ClaimCount
		sum, err := campaign.Search(ctx, campaign.SearchOptions{
			Registry: o.Registry, Space: space, Seed: seed, MaxRuns: runs,
			Parallel: o.Parallel, Out: filepath.Join(dir, fmt.Sprint(seed)), SafeOnly: true, Confirm: -1, Render: o.Render,
			Checked: func(p plan.Plan, r lin.Result) {
				c := claimed(o.Registry, p, r, rules)
				mu.Lock()
				got.Add(c)
				mu.Unlock()
			},
		})
		if ctx.Err() != nil {
			return fa, nil
		}
		if err != nil {
			return fa, fmt.Errorf("%s campaign, seed %d: %w", what, seed, err)
		}
		fa.Plans, fa.Errors, fa.Perturbed, last = fa.Plans+sum.Runs, fa.Errors+sum.Errors, fa.Perturbed+sum.Perturbed, max(sum.Runs, 1)
		fa.Claims.Add(got)
		o.progress("%s seed %d: %d plans, %d claimed pairs decided (%d violated, %d undecided), %d errors, %d perturbed",
			what, seed, sum.Runs, got.Decided(), got.Violated, got.Undecided, sum.Errors, sum.Perturbed)
		switch {
		case got.Decided() == 0 && sum.Runs >= 20:
			return fa, fmt.Errorf("%s campaign, seed %d: no claimed pair decided in %d plans (%d errors)", what, seed, sum.Runs, sum.Errors)
		case got.Decided() == 0:
			perPlan /= 4 // a few plans may all miss the rules' preconditions: a larger batch
		case sum.Runs > 0:
			perPlan = max(float64(got.Decided())/float64(sum.Runs), 0.1)
		}
	}
	return fa, nil
}

// claimed counts the pairs of a checked run that rules claim (any rule when rules is
// nil): one per property, however many of them claim it.
func claimed(reg *lockimpl.Registry, p plan.Plan, r lin.Result, rules []string) campaign.ClaimCount {
	var c campaign.ClaimCount
	impl, err := reg.Get(p.Impl)
	if err != nil {
		return c // the generator draws registered names only
	}
	props := map[lin.Property]bool{}
	for _, cl := range expect.Claims(p, impl) {
		if rules == nil || slices.Contains(rules, cl.Rule) {
			props[cl.Property] = true
		}
	}
	for _, pr := range r.Properties {
		if props[pr.Property] {
			c.Count(pr.Verdict)
		}
	}
	return c
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(format, args...))
	}
}

// shrunkDetection is the class's first failure of sum, when it was shrunk.
func shrunkDetection(sum *campaign.Summary, class string) *campaign.Failure {
	for _, f := range sum.Failures {
		if slices.Contains(f.Classes, class) && f.Shrunk != nil {
			return f
		}
	}
	return nil
}
