package assess

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/gate"
	"github.com/locklab/locklab/internal/jsonfile"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/subprocess"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/plan"
)

// Files and directories an assessment writes under its output directory.
const (
	JSONFile     = "report.json"
	HTMLFile     = "report.html"
	JUnitFile    = "junit.xml"
	CatalogDir   = "catalog"    // the matrix of the catalog row (matrix.json, the runs)
	CampaignDir  = "campaign"   // the random campaign (summary.json, failures/)
	ReferenceDir = "references" // the reference locks' runs of the campaign's findings
	ReleasesDir  = "releases"   // the other releases' runs of the campaign's findings
	LogFile      = "clients.log"
)

// DefaultBudget is how long an assessment takes when not told otherwise.
const DefaultBudget = 10 * time.Minute

// Options configure an assessment.
type Options struct {
	// Registry has the locks; a lock whose clients are processes of their own is compared
	// with its reference run out of process, which Run registers there (NAME-process).
	Registry *lockimpl.Registry
	Impls    []string // the locks to assess (at least one)
	// Kinds names the kind of a lock whose registration cannot say it (a client of the
	// subprocess protocol that renews by itself), by implementation.
	Kinds    map[string]Kind
	Budget   time.Duration // the whole assessment's wall time, the campaign takes what is left; 0: DefaultBudget
	Repeat   int           // runs per catalog cell; 0: 1
	Parallel int           // runs at once; 0: 2
	Seed     int64         // the campaign's seed
	Out      string        // output directory (required)
	Backend  string        // the catalog's backend ("" each scenario's own)
	// Scenarios limits the catalog row to these scenarios (nil: every one that applies).
	Scenarios []string
	// FailOn are the classes of finding that fail the assessment; nil: unexpected and avoidable.
	FailOn       []Class
	CheckTimeout time.Duration
	Thresholds   gate.Thresholds
	// Command is the assessment as typed; Register is the flags that register the locks
	// (--impl-cmd, --locks), for the replay commands.
	Command, Register string
	Progress          func(Progress) // nil: silent
	// RenderCampaign writes the campaign's pages for people (the CLI passes
	// report.WriteCampaign).
	RenderCampaign func(dir string, s *campaign.Summary) error
	// RenderMatrix writes the catalog row's pages for people (report.WriteMatrix).
	RenderMatrix func(dir string, m matrix.Result) error
}

// Progress is where an assessment is, for a progress bar.
type Progress struct {
	Stage            string // conformance, catalog, campaign, references
	Done, Total      int    // runs (checks) of the stage; Total 0: unknown
	Elapsed, Budget  time.Duration
	Note             string
	Findings, Errors int
}

// Report is an assessment's result: report.json.
type Report struct {
	Meta  Meta          `json:"meta"`
	Locks []*LockReport `json:"locks"`
	// Decided is what the catalog and the campaign decided, (run, property) pairs.
	Decided gate.Counts `json:"decided"`
	// Inconclusive says why the assessment decided too little to be evidence ("" when not).
	Inconclusive string   `json:"inconclusive,omitempty"`
	Errors       []string `json:"errors,omitempty"` // runs that failed to run, stages that failed
	FailOn       []Class  `json:"fail_on"`
	// ReleaseDiffs are the catalog cells where releases of one library assessed together
	// (--impl redsync@v4.12.0,redsync@v4.12.1) broke different properties.
	ReleaseDiffs []ReleaseDiff `json:"release_diffs,omitempty"`
}

// ReleaseDiff is a catalog cell where the assessed releases of a library disagree.
type ReleaseDiff struct {
	Scenario string        `json:"scenario"`
	Fencing  string        `json:"fencing"`
	Library  string        `json:"library"` // the implementation, without a version
	Releases []ReleaseCell `json:"releases"`
}

// ReleaseCell is one release's runs of a ReleaseDiff's cell.
type ReleaseCell struct {
	Name     string `json:"name"`               // NAME@VERSION (or the pinned NAME)
	Broke    string `json:"broke"`              // the properties some run violated, "P1,P6" ("" none)
	Runs     int    `json:"runs"`               // its runs
	Timeline string `json:"timeline,omitempty"` // its first violating run's picture, relative to the report
}

// Meta is where and how the assessment ran.
type Meta struct {
	Command      string        `json:"command"`
	Date         string        `json:"date"`
	Elapsed      plan.Duration `json:"elapsed"`
	Budget       plan.Duration `json:"budget"`
	Repeat       int           `json:"repeat"`
	Seed         int64         `json:"seed"`
	GoVersion    string        `json:"go_version"`
	Interrupted  bool          `json:"interrupted,omitempty"`
	CatalogRuns  int           `json:"catalog_runs"`
	CampaignRuns int           `json:"campaign_runs"`
	Catalog      string        `json:"catalog,omitempty"`  // catalog/index.html
	Campaign     string        `json:"campaign,omitempty"` // campaign/index.html
}

// LockReport is the report card of one lock.
type LockReport struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Family      Family    `json:"family"`
	Reference   string    `json:"reference,omitempty"` // its family's reference lock
	Says        []string  `json:"says"`                // what its registration or hello claims
	Checks      []Check   `json:"checks"`
	Findings    []Finding `json:"findings"`
	// UnderLoad are violations in runs whose harness stalled: reported, not classified.
	UnderLoad []Finding      `json:"under_load,omitempty"`
	Counts    map[Class]int  `json:"counts"`
	Decided   gate.Counts    `json:"decided"`
	Held      []lin.Property `json:"held,omitempty"` // properties no run violated
	impl      lockimpl.Impl  `json:"-"`
	cellPlans map[string]plan.Plan
}

// Failed reports whether the lock has a finding of a class in failOn.
func (l *LockReport) Failed(failOn []Class) bool {
	return slices.ContainsFunc(failOn, func(c Class) bool { return l.Counts[c] > 0 })
}

// Failed reports whether any lock failed, and why.
func (r *Report) Failed() bool {
	return slices.ContainsFunc(r.Locks, func(l *LockReport) bool { return l.Failed(r.FailOn) })
}

// Run assesses each lock of o.Impls: its conformance checks, its row of the catalog
// beside its family's reference, a random campaign for what is left of the budget, and a
// verdict for every violation. It writes report.json and the runs under o.Out. The
// report is returned also when ctx ends early (Meta.Interrupted) with what was done.
func Run(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	rep := &Report{FailOn: o.FailOn, Meta: Meta{Command: o.Command, Date: start.UTC().Format(time.RFC3339),
		Budget: plan.D(o.Budget), Repeat: o.Repeat, Seed: o.Seed, GoVersion: runtime.Version()}}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	if err := knownScenarios(o.Registry, o.Scenarios); err != nil {
		return nil, err
	}
	a := &assessment{o: o, rep: rep, start: start}
	for _, name := range o.Impls {
		impl, err := o.Registry.Get(name)
		if err != nil {
			return nil, &OptionError{"impls", err}
		}
		fam := FamilyOf(impl)
		if k, ok := o.Kinds[name]; ok {
			fam.Kind = k
		}
		lr := &LockReport{Name: impl.Name, Description: impl.Description, Family: fam, Reference: ReferenceFor(fam),
			Says: says(impl), Counts: map[Class]int{}, impl: impl, cellPlans: map[string]plan.Plan{}}
		if lr.Reference == impl.Name {
			lr.Reference = "" // the reference itself: nothing to compare it with
		}
		if lr.Reference, err = processReference(o.Registry, impl, lr.Reference); err != nil {
			return nil, err
		}
		rep.Locks = append(rep.Locks, lr)
	}
	err = a.run(ctx)
	rep.Meta.Elapsed = plan.D(time.Since(start).Round(time.Second))
	if ctx.Err() != nil {
		rep.Meta.Interrupted = true
	}
	rep.Decided = a.campaignCounts
	for _, l := range rep.Locks {
		rep.Decided.Add(l.Decided)
		l.tally()
	}
	if ierr := o.Thresholds.Check(rep.Decided, "(run, property) pairs"); ierr != nil {
		rep.Inconclusive = ierr.Error()
	}
	if werr := jsonfile.Write(filepath.Join(o.Out, JSONFile), rep); werr != nil {
		err = errors.Join(err, werr)
	}
	return rep, err
}

// processReference is the reference to compare impl with: for a lock whose clients run
// as processes of their own, the reference run out of process by locklab-lockserve too
// (registered in reg as NAME-process when it is not there yet), so that a stop-the-world
// pause reaches both and both pay a process's round trips.
func processReference(reg *lockimpl.Registry, impl lockimpl.Impl, ref string) (string, error) {
	if ref == "" || !impl.Process {
		return ref, nil
	}
	r, err := reg.Get(ref)
	if err != nil || r.Process {
		return ref, nil
	}
	out := subprocess.OutOfProcess(r)
	if _, err := reg.Get(out.Name); err == nil {
		return out.Name, nil
	}
	if err := reg.Register(out); err != nil {
		return "", fmt.Errorf("register %s: %w", out.Name, err)
	}
	return out.Name, nil
}

// knownScenarios says which of names is no catalog scenario, before any server starts.
func knownScenarios(reg *lockimpl.Registry, names []string) error {
	if len(names) == 0 {
		return nil
	}
	catalog, err := plan.Scenarios(reg)
	if err != nil {
		return err
	}
	for _, n := range names {
		if !slices.ContainsFunc(catalog, func(p plan.Plan) bool { return p.Name == n }) {
			return &OptionError{"scenarios", fmt.Errorf("unknown scenario %q (see locklab list)", n)}
		}
	}
	return nil
}

// OptionError is a bad option, named by its field.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

func (o Options) withDefaults() (Options, error) {
	if o.Registry == nil {
		return o, &OptionError{"registry", errors.New("none")}
	}
	if len(o.Impls) == 0 {
		return o, &OptionError{"impls", errors.New("name at least one lock to assess")}
	}
	if o.Out == "" {
		return o, &OptionError{"out", errors.New("an output directory is required")}
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.Budget < 0 {
		return o, &OptionError{"budget", fmt.Errorf("want a positive duration, got %s", o.Budget)}
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	if o.Parallel == 0 {
		o.Parallel = 2
	}
	if o.Repeat < 0 || o.Parallel < 0 {
		return o, &OptionError{"repeat", errors.New("must not be negative")}
	}
	if o.FailOn == nil {
		o.FailOn = []Class{Unexpected, Avoidable}
	}
	return o, nil
}

// says is what impl's registration claims of it, in words.
func says(impl lockimpl.Impl) []string {
	var out []string
	if impl.Fencing {
		out = append(out, "grants fencing tokens")
	} else {
		out = append(out, "grants no fencing token")
	}
	if impl.NoExtend {
		out = append(out, "cannot extend a lease")
	} else {
		out = append(out, "extends leases")
	}
	if impl.Renews {
		out = append(out, "renews its leases by itself")
	}
	if impl.Process {
		out = append(out, "runs as a process of its own")
	}
	out = append(out, "runs on topology "+impl.Topology)
	return out
}

type assessment struct {
	o     Options
	rep   *Report
	start time.Time
	log   io.Writer
	// campaignCounts is what the campaign decided (claimed pairs of every lock).
	campaignCounts gate.Counts
}

func (a *assessment) progress(p Progress) {
	if a.o.Progress == nil {
		return
	}
	p.Elapsed, p.Budget = time.Since(a.start), a.o.Budget
	for _, l := range a.rep.Locks {
		p.Findings += len(l.Findings)
	}
	a.o.Progress(p)
}

func (a *assessment) run(ctx context.Context) error {
	logf, err := os.Create(filepath.Join(a.o.Out, LogFile))
	if err != nil {
		return err
	}
	defer logf.Close()
	a.log = logf
	if err := a.conformance(ctx); err != nil {
		return err
	}
	if err := a.catalog(ctx); err != nil {
		return err
	}
	if err := a.campaign(ctx); err != nil {
		return err
	}
	return nil
}

// conformance runs the black-box checks of every lock; a failed check is an unexpected
// finding.
func (a *assessment) conformance(ctx context.Context) error {
	b, err := cluster.NewProcessBackend(cluster.ProcessOptions{})
	if err != nil {
		return err
	}
	defer b.Close()
	total := len(a.rep.Locks) * len(conformances())
	for i, l := range a.rep.Locks {
		a.progress(Progress{Stage: "conformance", Done: i * len(conformances()), Total: total, Note: l.Name})
		checks, err := Conform(ctx, b, l.impl, a.log)
		l.Checks = checks
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			a.rep.Errors = append(a.rep.Errors, err.Error())
			continue
		}
		for _, c := range checks {
			if c.Status == CheckFailed {
				l.Findings = append(l.Findings, Finding{Class: Unexpected, Source: SourceConformance, Scenario: c.Name,
					Evidence: "every correct lock passes this check: " + c.Asks + "; " + c.Detail, Advice: conformAdvice(c.Name)})
			}
		}
	}
	return nil
}

// catalog runs the catalog row of every lock and of its reference (fencing off, and full
// where the lock fences) and classifies each violated (cell, property).
func (a *assessment) catalog(ctx context.Context) error {
	impls := []string{}
	for _, l := range a.rep.Locks {
		impls = append(impls, l.Name)
	}
	for _, l := range a.rep.Locks {
		if l.Reference != "" && !slices.Contains(impls, l.Reference) {
			impls = append(impls, l.Reference)
		}
	}
	dir := filepath.Join(a.o.Out, CatalogDir)
	res, err := matrix.Run(ctx, matrix.Options{
		Registry: a.o.Registry, Impls: impls, Scenarios: a.o.Scenarios, Repeat: a.o.Repeat, Parallel: a.o.Parallel, Out: dir,
		Backend: a.o.Backend, CheckTimeout: a.o.CheckTimeout, Command: a.o.Command,
		Progress: func(e matrix.Event) {
			a.progress(Progress{Stage: "catalog", Done: e.Done, Total: e.Total, Note: e.String()})
		},
	})
	if res.Meta.Planned > 0 {
		a.rep.Meta.CatalogRuns = res.Meta.Runs
		a.rep.Meta.Catalog = filepath.ToSlash(filepath.Join(CatalogDir, "index.html"))
		if a.o.RenderMatrix != nil {
			if rerr := a.o.RenderMatrix(dir, res); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}
	var oe *matrix.OptionError
	if errors.As(err, &oe) {
		return &OptionError{oe.Option, oe.Err}
	}
	if err != nil {
		return err
	}
	if res.Meta.Errors > 0 {
		a.rep.Errors = append(a.rep.Errors, fmt.Sprintf("%d of %d catalog runs failed to run: %s says why", res.Meta.Errors, res.Meta.Runs,
			filepath.Join(dir, matrix.MarkdownFile)))
	}
	scenarios, err := plan.Scenarios(a.o.Registry)
	if err != nil {
		return err
	}
	for _, l := range a.rep.Locks {
		a.classifyCells(l, res, scenarios, dir)
	}
	for _, d := range res.ReleaseDiffs() {
		rd := ReleaseDiff{Scenario: d.Scenario, Fencing: d.Fencing, Library: d.Impl}
		for _, c := range d.Cells {
			rc := ReleaseCell{Name: c.Impl, Broke: c.Violated(), Runs: len(c.Runs)}
			if t := c.Timeline(); t != "" {
				rc.Timeline = path.Join(CatalogDir, t)
			}
			rd.Releases = append(rd.Releases, rc)
		}
		a.rep.ReleaseDiffs = append(a.rep.ReleaseDiffs, rd)
	}
	return nil
}
