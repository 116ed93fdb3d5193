package campaign

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// DetectionOptions configure the time-to-detection benchmark: for each bug class, class
// searches from Seeds seeds, each until its first detection or MaxRuns plans; then
// fault-free campaigns on safe configurations, which must find nothing.
type DetectionOptions struct {
	Registry *lockimpl.Registry
	Classes  []string // class IDs; empty: every class
	Seeds    int      // searches per class; 0: 10
	Seed     int64    // the first seed; the others follow it
	MaxRuns  int      // plans per search at most; 0: 60
	// SafeRuns is how many fault-free plans on safe configurations (every correct
	// implementation, fencing as it allows) are run per seed to count false alarms; 0: 10.
	SafeRuns int
	Parallel int    // plans at once within a search; 0: 1
	Out      string // output directory (required)
	// Shrink shrinks the first seed's detection of each class, to report how small the
	// counterexample gets; the other seeds only time the detection.
	Shrink     bool
	ShrinkTime time.Duration // per shrink; 0: the search's default
	Progress   func(string)  // one line per finished search; nil: silent
	// Render is passed to every search (SearchOptions.Render).
	Render func(dir string, s *Summary) error
}

// DetectionRow is one class's result over its seeds.
type DetectionRow struct {
	Class   string          `json:"class"`
	Detect  []lin.Property  `json:"detect"`
	Seeds   int             `json:"seeds"`
	Found   int             `json:"found"`
	Times   []plan.Duration `json:"times"` // per seed that found it: time to the first detection
	Plans   []int           `json:"plans"` // per seed that found it: plans run by then, that one included
	Missed  []int64         `json:"missed,omitempty"`
	Shrunk  *Failure        `json:"shrunk,omitempty"` // the first seed's detection, shrunk
	Elapsed plan.Duration   `json:"elapsed"`
	Space   Space           `json:"space"`
}

// DetectionResult is the whole benchmark.
type DetectionResult struct {
	Started     time.Time      `json:"started"`
	Elapsed     plan.Duration  `json:"elapsed"`
	Seeds       int            `json:"seeds"`
	FirstSeed   int64          `json:"first_seed"`
	MaxRuns     int            `json:"max_runs"`
	Rows        []DetectionRow `json:"rows"`
	SafeRuns    int            `json:"safe_runs"`    // fault-free plans on safe configurations
	FalseAlarms int            `json:"false_alarms"` // of those, runs with a safe-configuration violation
	SafeErrors  int            `json:"safe_errors"`  // of those, runs that failed to run
	GoVersion   string         `json:"go_version"`
	Interrupted bool           `json:"interrupted,omitempty"`
}

func (o DetectionOptions) withDefaults() DetectionOptions {
	if o.Registry == nil {
		o.Registry = locks.All()
	}
	if o.Seeds == 0 {
		o.Seeds = 10
	}
	if o.MaxRuns == 0 {
		o.MaxRuns = 60
	}
	if o.SafeRuns == 0 {
		o.SafeRuns = 10
	}
	return o
}

// Detection runs the benchmark. A cancelled ctx ends it early; what was measured is
// returned with Interrupted set.
func Detection(ctx context.Context, o DetectionOptions) (res DetectionResult, err error) {
	o = o.withDefaults()
	if o.Out == "" {
		return DetectionResult{}, fmt.Errorf("detection: no output directory")
	}
	if o.Seeds < 1 || o.MaxRuns < 1 || o.SafeRuns < 0 {
		return DetectionResult{}, fmt.Errorf("detection: seeds and max runs must be positive")
	}
	var classes []Class
	if len(o.Classes) == 0 {
		classes = Classes(o.Registry)
	}
	for _, id := range o.Classes {
		c, err := ClassByID(o.Registry, id)
		if err != nil {
			return DetectionResult{}, err
		}
		classes = append(classes, c)
	}
	res = DetectionResult{Started: time.Now().UTC(), Seeds: o.Seeds, FirstSeed: o.Seed, MaxRuns: o.MaxRuns, GoVersion: runtime.Version()}
	start := time.Now()
	defer func() { res.Elapsed = plan.D(time.Since(start)) }()
	for _, c := range classes {
		row := DetectionRow{Class: c.ID, Detect: c.Detect, Seeds: o.Seeds, Space: c.Space}
		classStart := time.Now()
		for k := range o.Seeds {
			seed := o.Seed + int64(k)
			class := c
			shrink := time.Duration(-1)
			if o.Shrink && k == 0 {
				shrink = o.ShrinkTime // 0: the search's default
			}
			sum, err := Search(ctx, SearchOptions{
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
	// False alarms: fault-free plans on every correct implementation, whose properties
	// the models say must all hold (Expected).
	for k := range o.Seeds {
		if o.SafeRuns == 0 {
			break
		}
		seed := o.Seed + int64(k)
		sum, err := Search(ctx, SearchOptions{
			Registry: o.Registry, Space: safeSpace(o.Registry), Seed: seed, MaxRuns: o.SafeRuns,
			Parallel: o.Parallel, Out: filepath.Join(o.Out, "fault-free", fmt.Sprint(seed)), SafeOnly: true, Confirm: -1, Render: o.Render,
		})
		if ctx.Err() != nil {
			res.Interrupted = true
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("fault-free campaign, seed %d: %w", seed, err)
		}
		res.SafeRuns += sum.Runs
		res.FalseAlarms += sum.SafeViolations
		res.SafeErrors += sum.Errors
		o.progress("fault-free seed %d: %d plans, %d safe-configuration violations, %d errors", seed, sum.Runs, sum.SafeViolations, sum.Errors)
	}
	return res, nil
}

func (o DetectionOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(format, args...))
	}
}

// safeSpace is every correct implementation of reg with no faults at all.
func safeSpace(reg *lockimpl.Registry) Space {
	var impls []string
	for _, i := range reg.List() {
		if !i.Mutant {
			impls = append(impls, i.Name)
		}
	}
	return Space{Impls: impls, Faults: []string{NoFaults}}
}

// shrunkDetection is the class's first failure of sum, when it was shrunk.
func shrunkDetection(sum *Summary, class string) *Failure {
	for _, f := range sum.Failures {
		if slices.Contains(f.Classes, class) && f.Shrunk != nil {
			return f
		}
	}
	return nil
}
