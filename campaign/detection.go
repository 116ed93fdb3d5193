package campaign

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
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
}

// DetectionRow is one class's result over its seeds.
type DetectionRow struct {
	Class   string         `json:"class"`
	Detect  []lin.Property `json:"detect"`
	Seeds   int            `json:"seeds"`
	Found   int            `json:"found"`
	Times   []Duration     `json:"times"` // per seed that found it: time to the first detection
	Plans   []int          `json:"plans"` // per seed that found it: plans run by then, that one included
	Missed  []int64        `json:"missed,omitempty"`
	Shrunk  *Failure       `json:"shrunk,omitempty"` // the first seed's detection, shrunk
	Elapsed Duration       `json:"elapsed"`
	Space   Space          `json:"space"`
}

// DetectionResult is the whole benchmark.
type DetectionResult struct {
	Started     time.Time      `json:"started"`
	Elapsed     Duration       `json:"elapsed"`
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
		o.Registry = lockimpl.Builtin()
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
	defer func() { res.Elapsed = D(time.Since(start)) }()
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
				Parallel: o.Parallel, Out: filepath.Join(o.Out, c.ID, fmt.Sprint(seed)), ShrinkTime: shrink, SafeOnly: true,
			})
			if ctx.Err() != nil {
				res.Interrupted = true
				row.Elapsed = D(time.Since(classStart))
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
		row.Elapsed = D(time.Since(classStart))
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
			Parallel: o.Parallel, Out: filepath.Join(o.Out, "fault-free", fmt.Sprint(seed)), SafeOnly: true, Confirm: -1,
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

// median and worst of a sample (zero for none).
func medianWorst[T int | Duration](xs []T, less func(a, b T) bool) (T, T) {
	var zero T
	if len(xs) == 0 {
		return zero, zero
	}
	s := slices.Clone(xs)
	slices.SortFunc(s, func(a, b T) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2], s[len(s)-1]
}

// Markdown renders the result as BENCHMARKS.md's time-to-detection section.
func (r DetectionResult) Markdown(command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Produced by `%s` on %s (%s, %s in all). Each class: %d class searches (seeds %d…%d), each until the first detection or %d plans; a search draws random plans from the class's space only (its implementation and fault kinds, never times, targets or points).\n\n",
		command, r.Started.Format(time.RFC3339), r.GoVersion, r.Elapsed.D().Round(time.Second), r.Seeds, r.FirstSeed, r.FirstSeed+int64(r.Seeds)-1, r.MaxRuns)
	if r.Interrupted {
		b.WriteString("**Interrupted:** the rows below are what was measured before.\n\n")
	}
	b.WriteString("| class | detects | found | median time | worst time | median plans | worst plans | shrunk counterexample (first seed) |\n|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		mt, wt := medianWorst(row.Times, func(a, b Duration) bool { return a.D() < b.D() })
		mp, wp := medianWorst(row.Plans, func(a, b int) bool { return a < b })
		props := make([]string, len(row.Detect))
		for i, p := range row.Detect {
			props[i] = string(p)
		}
		shrunk := "—"
		if f := row.Shrunk; f != nil {
			shrunk = fmt.Sprintf("%d faults, %d clients, %d ops (from %d faults, %d clients, %d ops)", f.Shrunk.Faults, f.Shrunk.Clients, f.Shrunk.Ops, f.Original.Faults, f.Original.Clients, f.Original.Ops)
		}
		found := fmt.Sprintf("%d/%d", row.Found, row.Seeds)
		if row.Found == 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | — | — | — | — | %s |\n", row.Class, strings.Join(props, ", "), found, shrunk)
			continue
		}
		worst := wt.D().Round(100 * time.Millisecond).String()
		worstPlans := fmt.Sprint(wp)
		if row.Found < row.Seeds {
			worst, worstPlans = "> "+worst+" (missed)", fmt.Sprintf("> %d (missed)", r.MaxRuns)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %s | %s |\n", row.Class, strings.Join(props, ", "), found,
			mt.D().Round(100*time.Millisecond), worst, mp, worstPlans, shrunk)
	}
	fmt.Fprintf(&b, "\nFalse alarms: **%d** safe-configuration violations in %d fault-free plans on every correct implementation (%d failed to run).\n", r.FalseAlarms, r.SafeRuns, r.SafeErrors)
	return b.String()
}
