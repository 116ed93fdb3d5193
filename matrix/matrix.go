package matrix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/internal/gate"
	"github.com/locklab/locklab/internal/jsonfile"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/workload"
)

// BaselineScenario is the fault-free scenario of the catalog, the matrix's first row.
const BaselineScenario = "baseline"

// Files the matrix writes in Options.Out, besides the run directories under RunsDir.
const (
	JSONFile     = "matrix.json"
	MarkdownFile = "matrix.md"
	HTMLFile     = "matrix.html"
	RunsDir      = "runs"
	ErrorFile    = "error.txt" // in a run directory whose run failed to run
)

// Fence sources of an implementation, from lockimpl.Impl.Fencing.
const (
	FenceSourceLock = "lock" // the lock grants a fencing token with each lease
	FenceSourceNone = "none" // no fencing token: fencing modes other than off cannot be tried
)

// Cell statuses.
const (
	CellPlanned   = "run"  // the cell's plan ran (or was to run) Repeat times
	CellNA        = "n/a"  // the scenario cannot be played by this implementation: Reason says why
	CellNoFencing = "none" // a fencing mode other than off for an implementation without fences
)

// Options say which cells the matrix has and how its runs are made.
type Options struct {
	Registry  *lockimpl.Registry // nil: locks.All()
	Impls     []string           // default: every registered implementation, in registry order
	Scenarios []string           // default: every catalog scenario, baseline first
	Fencings  []string           // default: off, full
	Repeat    int                // runs per cell (seeds: the scenario's seed + 0 … Repeat-1); default 1
	Nodes     int                // servers when a "nodes" implementation plays a single-server scenario; default 5
	Parallel  int                // runs at the same time, each on servers of its own; default 1
	// Backend runs every cell's servers ("process" or "docker"); "" leaves each scenario's
	// own (the process backend unless it needs docker).
	Backend string
	Out     string // directory for matrix.json, matrix.md, matrix.html and runs/ (required)
	// Command is the command line recorded as having produced the matrix.
	Command      string
	CheckTimeout time.Duration // per property; 0: linearizability's default
	// Progress, when set, is called after each run, one call at a time.
	Progress func(Event)

	phases *runner.Phases  // set by Run: the matrix's runs share it
	docker cluster.Backend // set by Run: what its docker runs share
}

// OptionError is a bad Options field (Option is "impls", "scenarios", "fencings",
// "repeat", "nodes", "parallel" or "out"), so that a CLI can name its flag.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// Event is one finished run, for progress reports.
type Event struct {
	Scenario, Impl, Fencing string
	Run, Repeat             int    // run index in the cell, and runs per cell
	Done, Total             int    // runs finished so far, runs in the whole matrix
	Summary                 string // the run's verdicts, as in a cell ("✓", "P1 1/1 · P2 1/1", "err 1/1")
	Elapsed                 time.Duration
	Err                     error // the run failed to run
}

func (e Event) String() string {
	s := fmt.Sprintf("[%d/%d] %s × %s × fencing %s, run %d/%d: %s (%s)",
		e.Done, e.Total, e.Scenario, e.Impl, e.Fencing, e.Run+1, e.Repeat, e.Summary, e.Elapsed.Round(100*time.Millisecond))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Result is the whole matrix, as written to matrix.json. Paths are relative to the
// matrix's directory, with forward slashes.
type Result struct {
	Meta      Meta       `json:"meta"`
	Impls     []Impl     `json:"impls"`
	Scenarios []Scenario `json:"scenarios"`
	Fencings  []string   `json:"fencings"`
	Cells     []Cell     `json:"cells"` // fencing-major, then scenario, then implementation
}

// Meta is how and when the matrix was produced.
type Meta struct {
	Command      string `json:"command"`
	Date         string `json:"date"`     // start, UTC, RFC 3339
	Finished     string `json:"finished"` // end, UTC, RFC 3339
	Repeat       int    `json:"repeat"`
	Nodes        int    `json:"nodes"`
	Parallel     int    `json:"parallel"`
	GoVersion    string `json:"go_version"`
	RedisVersion string `json:"redis_version"`
	Complete     bool   `json:"complete"` // false: interrupted; cells hold the runs that finished
	Runs         int    `json:"runs"`     // runs finished
	Planned      int    `json:"planned"`  // runs planned
	Errors       int    `json:"errors"`   // runs that failed to run
	// Decided is what the matrix's runs decided, over (run, property) pairs with
	// something to check: what --min-decided and --max-perturbed judge.
	Decided gate.Counts `json:"decided"`
	// Parts are the matrices a merged one was made of (Merge), each with its rows.
	Parts []Part `json:"parts,omitempty"`
	// Rechecked says when the runs' saved histories were checked again (Recheck), the
	// verdicts being the checker's of then, not of the runs' day.
	Rechecked string `json:"rechecked,omitempty"`
}

// Impl is one column: an implementation and where its fences come from.
type Impl struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Topology    string `json:"topology"`
	Mutant      bool   `json:"mutant,omitempty"`
	Bug         string `json:"bug,omitempty"`
	FenceSource string `json:"fence_source"` // FenceSourceLock or FenceSourceNone
}

// Scenario is one row.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Topology    string `json:"topology"`
	Faults      int    `json:"faults"`
}

// Cell is one implementation playing one scenario under one fencing mode, Repeat times.
type Cell struct {
	Scenario string `json:"scenario"`
	Impl     string `json:"impl"`
	Fencing  string `json:"fencing"`
	Status   string `json:"status"`             // CellPlanned, CellNA or CellNoFencing
	Reason   string `json:"reason,omitempty"`   // n/a and none: why the cell was not run
	Note     string `json:"note,omitempty"`     // something to know about the runs, e.g. a changed topology
	Topology string `json:"topology,omitempty"` // the topology the runs used
	// Counts has, per property, how many runs gave each verdict.
	Counts map[linearizability.Property]VerdictCounts `json:"counts,omitempty"`
	Errors int                                        `json:"errors,omitempty"` // runs that failed to run
	// Perturbed counts runs whose harness stalled: their verdicts are not counted.
	Perturbed int `json:"perturbed,omitempty"`
	// UnderLoad counts, per property, the perturbed runs that violated it: findings under
	// load, apart from Counts (the stall may be their cause) and never dropped.
	UnderLoad map[linearizability.Property]int `json:"under_load,omitempty"`
	Runs      []CellRun                        `json:"runs,omitempty"` // the runs that finished, by index
}

// VerdictCounts counts the runs of a cell by verdict on one property.
type VerdictCounts struct {
	OK      int `json:"ok"`
	Illegal int `json:"illegal"`
	Unknown int `json:"unknown"`
	NA      int `json:"n/a"`
}

// CellRun is one run of a cell.
type CellRun struct {
	Index     int                                                  `json:"index"`
	Seed      int64                                                `json:"seed"`
	Dir       string                                               `json:"dir"`               // run directory
	Link      string                                               `json:"link"`              // its history.html, or error.txt when it failed to run
	Verdict   linearizability.Verdict                              `json:"verdict,omitempty"` // empty when it failed to run
	Verdicts  map[linearizability.Property]linearizability.Verdict `json:"verdicts,omitempty"`
	Error     string                                               `json:"error,omitempty"`
	Perturbed string                                               `json:"perturbed,omitempty"` // why its verdicts say nothing of the lock
	Warnings  []string                                             `json:"warnings,omitempty"`
	Ops       int                                                  `json:"ops"`
	Elapsed   time.Duration                                        `json:"elapsed_ns"`
}

// FenceSource is where impl's fencing tokens come from: the lock itself, or none.
func FenceSource(impl lockimpl.Impl) string {
	if impl.Fencing {
		return FenceSourceLock
	}
	return FenceSourceNone
}

// Run runs every implementation × scenario × fencing mode of opts Repeat times and
// writes matrix.json to opts.Out, with each run's directory
// under runs/<scenario>/<impl>/<fencing>/<index>. A run that fails to run is counted as
// an error in its cell; it does not stop the matrix. When ctx is cancelled the runs under
// way are abandoned, what finished is written (marked incomplete) and the error says so.
func Run(ctx context.Context, opts Options) (Result, error) {
	start := time.Now()
	opts, scenarios, impls, err := opts.resolve()
	if err != nil {
		return Result{}, err
	}
	opts.phases = &runner.Phases{}
	res := Result{
		Meta: Meta{
			Command: opts.Command, Date: start.UTC().Format(time.RFC3339), Repeat: opts.Repeat,
			Nodes: opts.Nodes, Parallel: opts.Parallel, GoVersion: runtime.Version(), RedisVersion: redisVersion(),
		},
		Fencings: opts.Fencings,
	}
	for _, i := range impls {
		res.Impls = append(res.Impls, Impl{Name: i.Name, Description: i.Description, Topology: i.Topology,
			Mutant: i.Mutant, Bug: i.Bug, FenceSource: FenceSource(i)})
	}
	for _, s := range scenarios {
		res.Scenarios = append(res.Scenarios, Scenario{Name: s.Name, Description: s.Description,
			Topology: s.Topology, Faults: len(s.Faults)})
	}

	type job struct {
		cell, run int
		plan      plan.Plan
		dir       string
	}
	var jobs []job
	docker, dockerMissing := openDocker(ctx, opts.Backend, scenarios)
	if docker != nil {
		defer docker.Close()
		opts.docker = docker
	}
	for _, fencing := range opts.Fencings {
		for _, s := range scenarios {
			if opts.Backend != "" {
				s.Backend = opts.Backend
			}
			for _, impl := range impls {
				c, p := PlanCell(opts.Registry, s, impl, fencing, opts.Nodes)
				if c.Status == CellPlanned && p.Backend == plan.BackendDocker && dockerMissing != nil {
					c.Status, c.Reason = CellNA, "needs the docker backend, which is unavailable here: "+dockerMissing.Error()
				}
				res.Cells = append(res.Cells, c)
				if c.Status != CellPlanned {
					continue
				}
				for r := range opts.Repeat {
					rp := p
					rp.Seed = p.Seed + int64(r)
					jobs = append(jobs, job{cell: len(res.Cells) - 1, run: r, plan: rp,
						dir: relPath(RunsDir, s.Name, impl.Name, fencing, strconv.Itoa(r))})
				}
			}
		}
	}
	res.Meta.Planned = len(jobs)

	runs := make([][]*CellRun, len(res.Cells))
	for i := range runs {
		runs[i] = make([]*CellRun, opts.Repeat)
	}
	var (
		mu   sync.Mutex
		done int
		next = make(chan job)
		wg   sync.WaitGroup
	)
	for range opts.Parallel {
		wg.Go(func() {
			for j := range next {
				cr, ok := runCell(ctx, j.plan, j.run, j.dir, opts)
				if !ok {
					continue // interrupted: not a result
				}
				mu.Lock()
				runs[j.cell][j.run] = &cr
				done++
				if opts.Progress != nil {
					c := res.Cells[j.cell]
					ev := Event{Scenario: c.Scenario, Impl: c.Impl, Fencing: c.Fencing, Run: j.run, Repeat: opts.Repeat,
						Done: done, Total: len(jobs), Summary: summarize([]CellRun{cr}), Elapsed: cr.Elapsed}
					if cr.Error != "" {
						ev.Err = errors.New(cr.Error)
					}
					opts.Progress(ev)
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, j := range jobs {
		select {
		case next <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()

	for i := range res.Cells {
		for _, cr := range runs[i] {
			if cr != nil {
				res.Cells[i].Runs = append(res.Cells[i].Runs, *cr)
			}
		}
		res.Cells[i].count()
		res.Meta.Runs += len(res.Cells[i].Runs)
		res.Meta.Errors += res.Cells[i].Errors
	}
	res.Meta.Decided = res.Decided()
	res.Meta.Complete = res.Meta.Runs == res.Meta.Planned // a cancellation after the last run took nothing away
	res.Meta.Finished = time.Now().UTC().Format(time.RFC3339)
	if err := Write(opts.Out, res); err != nil {
		return res, err
	}
	if !res.Meta.Complete {
		return res, fmt.Errorf("matrix interrupted after %d of %d runs (partial matrix written to %s): %w",
			res.Meta.Runs, res.Meta.Planned, opts.Out, context.Cause(ctx))
	}
	return res, nil
}

// resolve fills in defaults, checks every option and loads the scenarios and
// implementations in matrix order.
func (o Options) resolve() (Options, []plan.Plan, []lockimpl.Impl, error) {
	if o.Registry == nil {
		o.Registry = locks.All()
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	if o.Nodes == 0 {
		o.Nodes = plan.DefaultNodes
	}
	if o.Parallel == 0 {
		o.Parallel = 1
	}
	if len(o.Fencings) == 0 {
		o.Fencings = []string{string(workload.FencingOff), string(workload.FencingFull)}
	}
	if o.Command == "" {
		o.Command = "matrix.Run"
	}
	bad := func(opt, format string, args ...any) error {
		return &OptionError{Option: opt, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case o.Repeat < 1:
		return o, nil, nil, bad("repeat", "want at least 1 run per cell, got %d", o.Repeat)
	case o.Nodes < 1:
		return o, nil, nil, bad("nodes", "want at least 1 node, got %d", o.Nodes)
	case o.Parallel < 1:
		return o, nil, nil, bad("parallel", "want at least 1, got %d", o.Parallel)
	case plan.CheckBackend(o.Backend) != nil:
		return o, nil, nil, bad("backend", "%v", plan.CheckBackend(o.Backend))
	case o.Out == "":
		return o, nil, nil, bad("out", "a directory for the matrix and its runs is required")
	}
	for _, f := range o.Fencings {
		if _, err := workload.ParseFencing(f); err != nil {
			return o, nil, nil, &OptionError{Option: "fencings", Err: err}
		}
	}
	if dup := firstDuplicate(o.Fencings); dup != "" {
		return o, nil, nil, bad("fencings", "%q given twice", dup)
	}

	catalog, err := plan.Scenarios(o.Registry)
	if err != nil {
		return o, nil, nil, err
	}
	// The fault-free baseline first: it is the control row the others are read against.
	slices.SortStableFunc(catalog, func(a, b plan.Plan) int {
		switch {
		case a.Name == BaselineScenario && b.Name != BaselineScenario:
			return -1
		case b.Name == BaselineScenario && a.Name != BaselineScenario:
			return 1
		}
		return 0
	})
	var scenarios []plan.Plan
	if len(o.Scenarios) == 0 {
		// The matrix compares locks on the read-modify-write workload; the job-queue
		// scenarios fix their lock and are asserted on their own (named, they run here too).
		for _, p := range catalog {
			if p.Workload != plan.WorkloadJobs {
				scenarios = append(scenarios, p)
			}
		}
	} else {
		if dup := firstDuplicate(o.Scenarios); dup != "" {
			return o, nil, nil, bad("scenarios", "%q given twice", dup)
		}
		for _, name := range o.Scenarios {
			k := slices.IndexFunc(catalog, func(p plan.Plan) bool { return p.Name == name })
			if k < 0 {
				names := make([]string, len(catalog))
				for i, p := range catalog {
					names[i] = p.Name
				}
				return o, nil, nil, bad("scenarios", "unknown scenario %q (known: %s)", name, strings.Join(names, ", "))
			}
			scenarios = append(scenarios, catalog[k])
		}
	}

	var impls []lockimpl.Impl
	if len(o.Impls) == 0 {
		impls = o.Registry.List()
	} else {
		if dup := firstDuplicate(o.Impls); dup != "" {
			return o, nil, nil, bad("impls", "%q given twice", dup)
		}
		for _, name := range o.Impls {
			impl, err := o.Registry.Get(name)
			if err != nil {
				return o, nil, nil, &OptionError{Option: "impls", Err: err}
			}
			impls = append(impls, impl)
		}
	}
	return o, scenarios, impls, nil
}

func firstDuplicate(names []string) string {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return n
		}
		seen[n] = true
	}
	return ""
}

// PlanCell decides what the cell (scenario s, implementation impl, fencing mode) runs:
// the scenario's plan with the implementation and fencing mode replaced, on the topology
// plan.Plan.ForImpl maps it to (nodes servers for a lock on independent nodes). A
// topology it cannot map, and a plan that does not validate for the implementation
// (e.g. a fault at a step it does not have), make the cell n/a with the reason. A
// fencing mode other than off for an implementation without fences is CellNoFencing.
func PlanCell(reg *lockimpl.Registry, s plan.Plan, impl lockimpl.Impl, fencing string, nodes int) (Cell, plan.Plan) {
	c := Cell{Scenario: s.Name, Impl: impl.Name, Fencing: fencing, Status: CellPlanned}
	if fencing != string(workload.FencingOff) && !impl.Fencing {
		c.Status = CellNoFencing
		c.Reason = fmt.Sprintf("%s grants no fencing token (fence source none): fencing %s cannot be tried", impl.Name, fencing)
		return c, plan.Plan{}
	}
	p, move, err := s.ForImpl(impl, nodes)
	if err != nil { // the catalog validated the topology: a mismatch no mapping mends
		c.Status, c.Reason = CellNA, err.Error()
		return c, plan.Plan{}
	}
	if move != nil {
		c.Note = move.Note()
	}
	p.Impl, p.Fencing = impl.Name, fencing
	p.Faults = slices.Clone(s.Faults)
	if p.WaitReplicas > 0 && !impl.Waits {
		c.Status, c.Reason = CellNA, "the scenario WAITs for replicas after each grant, which this implementation cannot do"
		return c, plan.Plan{}
	}
	if point := missingPoint(p, impl); point != "" {
		c.Status = CellNA
		c.Reason = fmt.Sprintf("the scenario's fault strikes at step %s, which this implementation never reaches", point)
		return c, plan.Plan{}
	}
	if err := p.Validate(reg); err != nil {
		c.Status, c.Reason = CellNA, err.Error()
		var fe *plan.FieldError
		if errors.As(err, &fe) {
			c.Reason = fe.Field + ": " + fe.Reason // the source is this cell's plan, not a file
		}
		return c, plan.Plan{}
	}
	c.Topology = p.Topology
	return c, p
}

// missingPoint is the first point a fault of p strikes at (its point or its trigger's)
// that impl's clients never reach, or "". Validate says the same naming the
// implementation; this reason is the same for every implementation, so that the notes of
// the matrix can group the cells it applies to.
func missingPoint(p plan.Plan, impl lockimpl.Impl) string {
	points := p.Reachable(impl)
	for _, f := range p.Faults {
		if f.Point != "" && !slices.Contains(points, f.Point) {
			return f.Point
		}
		if f.Trigger == "" {
			continue
		}
		if tr, err := faults.ParseTrigger(f.Trigger, -1); err == nil && !slices.Contains(points, tr.Point) {
			return tr.Point
		}
	}
	return ""
}

// runCell makes one run of a cell into its directory (relative to opts.Out). ok is false
// when ctx was cancelled: an interrupted run is no result.
func runCell(ctx context.Context, p plan.Plan, index int, dir string, opts Options) (cr CellRun, ok bool) {
	if ctx.Err() != nil {
		return CellRun{}, false
	}
	full := filepath.Join(opts.Out, filepath.FromSlash(dir))
	cr = CellRun{Index: index, Seed: p.Seed, Dir: dir, Link: relPath(dir, runner.HTMLFile)}
	// A directory left by an earlier matrix would mix its files with this run's.
	if err := os.RemoveAll(full); err != nil {
		return failedRun(cr, full, err), true
	}
	start := time.Now()
	r, err := p.Resolve(opts.Registry)
	if err != nil { // PlanCell validated this plan but for its seed: not expected
		return failedRun(cr, full, err), true
	}
	ro := runner.Options{Dir: full, CheckTimeout: opts.CheckTimeout, Phases: opts.phases}
	if p.Backend == plan.BackendDocker {
		ro.Backend = opts.docker
	}
	rep, err := runner.Run(ctx, r, ro)
	cr.Elapsed = time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return CellRun{}, false
		}
		return failedRun(cr, full, err), true
	}
	cr.Verdict, cr.Ops, cr.Warnings, cr.Perturbed = rep.Result.Verdict, rep.Ops, rep.Warnings, rep.Perturbed
	cr.Verdicts = map[linearizability.Property]linearizability.Verdict{}
	for _, pr := range rep.Result.Properties {
		cr.Verdicts[pr.Property] = pr.Verdict
	}
	return cr, true
}

// failedRun records a run that failed to run, with error.txt in its directory so that
// its link leads somewhere.
func failedRun(cr CellRun, full string, err error) CellRun {
	cr.Error, cr.Link = err.Error(), relPath(cr.Dir, ErrorFile)
	if merr := os.MkdirAll(full, 0o755); merr == nil {
		_ = os.WriteFile(filepath.Join(full, ErrorFile), []byte(err.Error()+"\n"), 0o644) // the message is in matrix.json too
	}
	return cr
}

// Decided counts the (run, property) pairs of the matrix's runs that ran to a verdict,
// by outcome, and its runs and perturbed runs.
func (m Result) Decided() gate.Counts {
	var g gate.Counts
	for _, c := range m.Cells {
		g.Add(c.Decided())
	}
	return g
}

// Decided counts the (run, property) pairs of the cell's runs that ran to a verdict, by
// outcome, and its runs and perturbed runs.
func (c Cell) Decided() gate.Counts {
	var g gate.Counts
	for _, r := range c.Runs {
		if r.Error != "" {
			continue
		}
		g.Runs++
		if r.Perturbed != "" {
			g.PerturbedRuns++
		}
		for _, v := range r.Verdicts {
			switch {
			case v == linearizability.NA || v == "":
			case r.Perturbed != "":
				g.Perturbed++
			case v == linearizability.Unknown:
				g.Undecided++
			default:
				g.Decided++
			}
		}
	}
	return g
}

// count fills Counts, Errors, Perturbed and UnderLoad from Runs.
func (c *Cell) count() {
	c.Counts, c.Errors, c.Perturbed, c.UnderLoad = nil, 0, 0, nil
	if c.Status != CellPlanned || len(c.Runs) == 0 {
		return
	}
	c.Counts = map[linearizability.Property]VerdictCounts{}
	for _, r := range c.Runs {
		if r.Error != "" {
			c.Errors++
			continue
		}
		if r.Perturbed != "" {
			c.Perturbed++
			for p, v := range r.Verdicts {
				if v == linearizability.Illegal {
					if c.UnderLoad == nil {
						c.UnderLoad = map[linearizability.Property]int{}
					}
					c.UnderLoad[p]++
				}
			}
			continue
		}
		for _, p := range linearizability.AllProperties() {
			vc := c.Counts[p]
			switch r.Verdicts[p] {
			case linearizability.OK:
				vc.OK++
			case linearizability.Illegal:
				vc.Illegal++
			case linearizability.Unknown:
				vc.Unknown++
			default:
				vc.NA++
			}
			c.Counts[p] = vc
		}
	}
}

// Summary is the cell in a few characters: "✓" when no run violated or left undecided any
// property and none failed to run; else each violated property with its count of illegal
// runs out of the runs made ("P1 3/3 · P2 2/3"), "?" before a count of undecided runs
// ("P2 ?1/3"), "err 1/3" for runs that failed to run, "perturbed 1/3" for runs whose
// harness stalled and "P2 1/3 under load" for those of them that violated a property
// (findings under load); "—" for n/a, "none" for a fencing
// mode the implementation cannot try, "…" for a cell whose runs were not made.
func (c Cell) Summary() string {
	switch c.Status {
	case CellNA:
		return "—"
	case CellNoFencing:
		return FenceSourceNone
	}
	if len(c.Runs) == 0 {
		return "…"
	}
	return summarize(c.Runs)
}

func summarize(runs []CellRun) string {
	n := len(runs)
	var parts []string
	for _, p := range linearizability.AllProperties() {
		var ill, unk int
		for _, r := range runs {
			if r.Perturbed != "" {
				continue // not counted: see the perturbed part below
			}
			switch r.Verdicts[p] {
			case linearizability.Illegal:
				ill++
			case linearizability.Unknown:
				unk++
			}
		}
		switch {
		case ill > 0 && unk > 0:
			parts = append(parts, fmt.Sprintf("%s %d/%d ?%d/%d", p, ill, n, unk, n))
		case ill > 0:
			parts = append(parts, fmt.Sprintf("%s %d/%d", p, ill, n))
		case unk > 0:
			parts = append(parts, fmt.Sprintf("%s ?%d/%d", p, unk, n))
		}
	}
	errs, perturbed := 0, 0
	for _, r := range runs {
		switch {
		case r.Error != "":
			errs++
		case r.Perturbed != "":
			perturbed++
		}
	}
	if errs > 0 {
		parts = append(parts, fmt.Sprintf("err %d/%d", errs, n))
	}
	if perturbed > 0 {
		parts = append(parts, fmt.Sprintf("perturbed %d/%d", perturbed, n))
	}
	for _, p := range linearizability.AllProperties() {
		under := 0
		for _, r := range runs {
			if r.Perturbed != "" && r.Verdicts[p] == linearizability.Illegal {
				under++
			}
		}
		if under > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d under load", p, under, n))
		}
	}
	if len(parts) == 0 {
		return "✓"
	}
	return strings.Join(parts, " · ")
}

// Class is the cell's kind for colouring: "ok", "illegal", "underload" (a violation in
// a perturbed run only), "unknown", "error", "na", "none" or "pending".
func (c Cell) Class() string {
	switch c.Status {
	case CellNA:
		return "na"
	case CellNoFencing:
		return "none"
	}
	if len(c.Runs) == 0 {
		return "pending"
	}
	return runsClass(c.Runs)
}

// Class is the run's kind for colouring, as Cell.Class.
func (r CellRun) Class() string { return runsClass([]CellRun{r}) }

func runsClass(runs []CellRun) string {
	class := "ok"
	for _, r := range runs {
		switch {
		case r.Perturbed != "" && r.Verdict == linearizability.Illegal:
			class = "underload" // a finding under load: above the testbed's trouble, below a violation
		case r.Perturbed != "" && class != "underload":
			class = "error" // the testbed's own trouble, as a run that failed to run
		case r.Verdict == linearizability.Illegal:
			return "illegal"
		case r.Error != "" && class != "underload":
			class = "error"
		case r.Verdict == linearizability.Unknown && class == "ok":
			class = "unknown"
		}
	}
	return class
}

// Link is the run a cell leads to first: its first violating run, else its first run
// that failed to run, else its first undecided run, else its first run; "" when none.
func (c Cell) Link() string {
	for _, want := range []func(CellRun) bool{
		func(r CellRun) bool { return r.Verdict == linearizability.Illegal },
		func(r CellRun) bool { return r.Error != "" },
		func(r CellRun) bool { return r.Verdict == linearizability.Unknown },
		func(CellRun) bool { return true },
	} {
		for _, r := range c.Runs {
			if want(r) {
				return r.Link
			}
		}
	}
	return ""
}

// Cell finds the cell of (scenario, impl, fencing).
func (m Result) Cell(scenario, impl, fencing string) (Cell, bool) {
	for _, c := range m.Cells {
		if c.Scenario == scenario && c.Impl == impl && c.Fencing == fencing {
			return c, true
		}
	}
	return Cell{}, false
}

// relPath joins parts of a path relative to the matrix directory, with forward slashes: the
// form links and matrix.json use on every system.
func relPath(parts ...string) string { return strings.Join(parts, "/") }

// openDocker opens the docker backend the matrix's docker cells share, when the matrix
// needs it (backend docker, or a scenario that needs it): their runs reuse each other's
// containers (cluster/docker's pool). nil and no error when it is not needed; the error
// says why it cannot run.
func openDocker(ctx context.Context, backend string, scenarios []plan.Plan) (cluster.Backend, error) {
	needed := backend == plan.BackendDocker
	for _, s := range scenarios {
		needed = needed || s.Backend == plan.BackendDocker
	}
	if !needed {
		return nil, nil
	}
	return runner.NewBackend(ctx, plan.BackendDocker)
}

// redisVersion is the version of the redis-server runs use ("7.0.15"), or why it is unknown.
func redisVersion() string {
	b, err := cluster.NewProcessBackend(cluster.ProcessOptions{})
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	bin := b.Binary()
	_ = b.Close() // only its binary was wanted
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return fmt.Sprintf("unknown (%s --version: %v)", bin, err)
	}
	// "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=..."
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return strings.TrimSpace(string(out))
}

// Write writes m as matrix.json into dir (report renders matrix.md and matrix.html).
func Write(dir string, m Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create matrix directory: %w", err)
	}
	return jsonfile.Write(filepath.Join(dir, JSONFile), m)
}

// Load reads the matrix.json written by Write from dir.
func Load(dir string) (Result, error) {
	var m Result
	if err := jsonfile.Read(filepath.Join(dir, JSONFile), &m); err != nil {
		return m, fmt.Errorf("load matrix: %w", err)
	}
	return m, nil
}
