// Package faults injects faults into a run behind one small interface, scheduled by the
// plan: each fault is injected at its time and healed after its duration, and every fault
// is healed when the run ends, whatever happened.
package faults

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/histories"
)

// Fault is one injectable fault, built from a Spec.
type Fault interface {
	// Available says why the fault cannot run in env (nil when it can).
	Available(env *Env) error
	// Inject starts the fault.
	Inject(ctx context.Context, env *Env) error
	// Heal ends it. It must be safe to call more than once and after a failed Inject.
	Heal(ctx context.Context, env *Env) error
}

// Env is what faults act on.
type Env struct {
	Cluster *cluster.Cluster // nil in tests that need no servers
	Gates   *Gates
	Rec     *histories.Recorder
	Clients int
}

// Spec is one scheduled fault: plain data from the plan.
type Spec struct {
	Kind     string
	At       time.Duration // since the start of the run
	Duration time.Duration
	Target   string // e.g. "client:0", "any"
	Point    string // client faults: where in the client's steps it strikes
}

func (s Spec) String() string {
	b := fmt.Sprintf("%s at %s for %s on %s", s.Kind, s.At, s.Duration, s.Target)
	if s.Point != "" {
		b += " at point " + s.Point
	}
	return b
}

// KindInfo describes a fault kind for `locklab list` and for validation.
type KindInfo struct {
	Name        string
	Description string
	Targets     string // what Target may name
	Points      bool   // whether Point applies
	build       func(Spec) (Fault, error)
}

// Kinds lists the fault kinds this locklab can inject.
func Kinds() []KindInfo {
	return []KindInfo{
		{
			Name:        "client-pause",
			Description: "the target client stalls for the duration when it next reaches the point (a GC pause); default point before-write, after its validity check",
			Targets:     "client:N or any",
			Points:      true,
			build:       func(s Spec) (Fault, error) { return &clientGate{spec: s, crash: false}, nil },
		},
		{
			Name:        "client-crash",
			Description: "the target client stops for good when it next reaches the point, holding whatever it holds (points include a lock implementation's steps, e.g. acquire:after-setnx)",
			Targets:     "client:N or any",
			Points:      true,
			build:       func(s Spec) (Fault, error) { return &clientGate{spec: s, crash: true}, nil },
		},
	}
}

// New builds the fault a spec describes, or says what is wrong with the spec.
func New(s Spec) (Fault, error) {
	for _, k := range Kinds() {
		if k.Name != s.Kind {
			continue
		}
		if s.At < 0 || s.Duration < 0 {
			return nil, fmt.Errorf("fault %s: negative time", s.Kind)
		}
		if !k.Points && s.Point != "" {
			return nil, fmt.Errorf("fault %s takes no point", s.Kind)
		}
		return k.build(s)
	}
	names := make([]string, 0, 8)
	for _, k := range Kinds() {
		names = append(names, k.Name)
	}
	return nil, fmt.Errorf("unknown fault kind %q (known: %s)", s.Kind, strings.Join(names, ", "))
}

// Schedule runs faults at their times. Stop heals every fault and waits for the schedule.
type Schedule struct {
	cancel context.CancelFunc
	done   chan struct{}
	env    *Env
	faults []Fault
	errs   []error
}

// Start checks every fault's availability, then runs the schedule in the background.
// Times are relative to now.
func Start(ctx context.Context, env *Env, specs []Spec) (*Schedule, error) {
	specs = append([]Spec(nil), specs...)
	sort.SliceStable(specs, func(i, j int) bool { return specs[i].At < specs[j].At })
	fs := make([]Fault, len(specs))
	for i, s := range specs {
		f, err := New(s)
		if err != nil {
			return nil, err
		}
		if err := f.Available(env); err != nil {
			return nil, fmt.Errorf("fault %s: %w", s, err)
		}
		fs[i] = f
	}
	return startFaults(ctx, env, specs, fs), nil
}

// startFaults runs built faults fs (one per spec, in the order of specs, sorted by At).
func startFaults(ctx context.Context, env *Env, specs []Spec, fs []Fault) *Schedule {
	ctx, cancel := context.WithCancel(ctx)
	sch := &Schedule{cancel: cancel, done: make(chan struct{}), env: env, faults: fs}
	go sch.run(ctx, specs)
	return sch
}

func (sch *Schedule) run(ctx context.Context, specs []Spec) {
	defer close(sch.done)
	start := time.Now()
	type healAt struct {
		at time.Duration
		f  Fault
	}
	var pending []healAt
	next := 0
	for next < len(specs) || len(pending) > 0 {
		// The next event is the earliest of the next injection and the earliest heal.
		wake := time.Duration(1<<63 - 1)
		if next < len(specs) {
			wake = specs[next].At
		}
		sort.Slice(pending, func(i, j int) bool { return pending[i].at < pending[j].at })
		if len(pending) > 0 && pending[0].at < wake {
			wake = pending[0].at
		}
		t := time.NewTimer(wake - time.Since(start))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		now := time.Since(start)
		for len(pending) > 0 && pending[0].at <= now {
			if err := pending[0].f.Heal(ctx, sch.env); err != nil {
				sch.errs = append(sch.errs, err)
			}
			pending = pending[1:]
		}
		for next < len(specs) && specs[next].At <= now {
			s := specs[next]
			if err := sch.faults[next].Inject(ctx, sch.env); err != nil {
				sch.errs = append(sch.errs, fmt.Errorf("inject %s: %w", s, err))
			}
			pending = append(pending, healAt{s.At + s.Duration, sch.faults[next]})
			next++
		}
	}
}

// Stop ends the schedule and heals every fault, injected or not (Heal is idempotent),
// with a fresh context so that healing happens even when the run's context is gone.
// It returns every injection and healing error.
func (sch *Schedule) Stop() error {
	sch.cancel()
	<-sch.done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := sch.errs
	for _, f := range sch.faults {
		if err := f.Heal(ctx, sch.env); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
