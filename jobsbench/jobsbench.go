// Package jobsbench is the double-processing experiment: a job queue on real Redis whose
// jobs are re-delivered in each of two regimes, while the first run still holds the job's
// lock (held) and after it released it (released), each run without a lock, with one, with
// an idempotency record instead and with the lock held until the acknowledgement, measured
// side by side (jobs run twice, jobs lost, lock acquire latency, throughput), plus the
// same-key check. Every phase is an ordinary plan (workload "jobs") run by the runner; the
// phases stream their operations into counters, so that a run of days takes constant
// memory.
package jobsbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/workload"
)

// Options set the experiment. Defaults are the published setting (4 workers, 1,200 jobs a
// minute, a 15 s lock TTL, jitter on the workers' links) with stalls that outlast the
// visibility timeout, at half a minute per phase.
type Options struct {
	Impl       string        // the per-job lock, by registry name
	Workers    int           // concurrent workers
	PerMinute  float64       // jobs enqueued per minute
	Duration   time.Duration // how long jobs are enqueued, per phase
	Work       time.Duration // each job's processing time (jittered ±50 %)
	TTL        time.Duration // the lock's lease
	Visibility time.Duration // a job not acknowledged within it is re-delivered
	Latency    time.Duration // added to each worker's link to the queue, both ways
	Jitter     time.Duration // ± around Latency
	OnTaken    string        // what a worker does with a job whose lock is taken: drop or retry
	// StallRate is the share of jobs whose first run stalls past the visibility timeout:
	// it waits until the queue re-delivered the job, then StallAfter more (plan
	// jobs.stall). Where the stall falls makes the regime: in the job, its lock held
	// (held), or between the release and the ack (released).
	StallRate  float64
	StallAfter time.Duration
	StallFail  float64 // share of stalled runs that then fail, never acknowledged
	SameKey    int     // jobs of the same-key check (0: skip the check)
	Seed       int64
	Out        string // one directory per phase: plan.json (replayable) and ledger.jsonl
	Registry   *lockimpl.Registry
	Progress   func(string) // nil: silent
}

// Defaults returns the published setting with its stalls, at half a minute per phase:
// eight phases and the same-key check take about five minutes.
func Defaults() Options {
	return Options{
		Impl: "seed-withlock", Workers: 4, PerMinute: 1200, Duration: 30 * time.Second,
		Work: 100 * time.Millisecond, TTL: 15 * time.Second, Visibility: 500 * time.Millisecond,
		Latency: 10 * time.Millisecond, Jitter: 10 * time.Millisecond, OnTaken: "drop",
		StallRate: 0.05, StallAfter: 300 * time.Millisecond, StallFail: 0.25,
		SameKey: 100, Seed: 1, Out: "out/bench-jobs",
	}
}

// The regimes of a re-delivery: where the stall that outlasts the visibility timeout falls.
const (
	Held     = "held"     // in the job, its lock held: the copy arrives while the first run holds the lock
	Released = "released" // after the side effect and the release, before the ack: the copy arrives after the release
)

// The settings each regime runs with.
const (
	NoLock     = "no lock"
	WithLock   = "with lock"          // released right after the side effect, as withLock does
	Idempotent = "idempotency record" // written with the side effect, no lock
	UntilAck   = "lock until ack"     // the lock released after the acknowledgement
)

// Phase is one run of the experiment, as measured from its operation stream.
type Phase struct {
	Name    string    `json:"name"`    // "held, no lock", …, "same key"
	Regime  string    `json:"regime"`  // Held or Released; "" for the same-key check
	Setting string    `json:"setting"` // NoLock, WithLock, Idempotent or UntilAck
	Plan    plan.Plan `json:"plan"`
	Dir     string    `json:"dir"`
	// Jobs: enqueued for certain, run at least once, run twice or more, never run.
	Enqueued   int64 `json:"enqueued"`
	Ran        int64 `json:"ran"`
	Duplicated int64 `json:"duplicated"`
	Lost       int64 `json:"lost"`
	Effects    int64 `json:"effects"`     // side effects in the ledger, duplicates included
	Skipped    int64 `json:"skipped"`     // deliveries skipped because the lock was taken
	Redelivers int64 `json:"redelivered"` // deliveries the reaper took back
	Failed     int64 `json:"failed"`      // stalled runs that failed before their side effect
	Done       int64 `json:"done"`        // side effects the idempotency record refused: done already
	// Acquire latency of granted locks, and how many were granted or refused.
	Granted    int64         `json:"granted"`
	Refused    int64         `json:"refused"`
	AcquireP50 time.Duration `json:"acquire_p50_ns"`
	AcquireP99 time.Duration `json:"acquire_p99_ns"`
	// PerMinute is jobs run for the first time while jobs were being enqueued, per minute.
	PerMinute float64       `json:"per_minute"`
	Wall      time.Duration `json:"wall_ns"`
	Perturbed string        `json:"perturbed,omitempty"` // the harness itself stalled (runner.Report)
	Warnings  []string      `json:"warnings,omitempty"`
}

// DuplicatePercent is the share of jobs run at least once that ran twice or more.
func (p Phase) DuplicatePercent() float64 {
	if p.Ran == 0 {
		return 0
	}
	return 100 * float64(p.Duplicated) / float64(p.Ran)
}

// Regime is one regime's load under each setting.
type Regime struct {
	NoLock     Phase `json:"no_lock"`
	WithLock   Phase `json:"with_lock"`
	Idempotent Phase `json:"idempotent"`
	UntilAck   Phase `json:"lock_until_ack"`
}

// Phase is the phase of a setting (NoLock, WithLock, Idempotent or UntilAck).
func (r *Regime) Phase(setting string) *Phase {
	switch setting {
	case NoLock:
		return &r.NoLock
	case WithLock:
		return &r.WithLock
	case Idempotent:
		return &r.Idempotent
	case UntilAck:
		return &r.UntilAck
	}
	return nil
}

// Settings are the settings every regime runs with, in the order they run.
func Settings() []string { return []string{NoLock, WithLock, Idempotent, UntilAck} }

// Result is the whole experiment.
type Result struct {
	Options  Options `json:"-"`
	Started  time.Time
	Held     Regime `json:"held"`
	Released Regime `json:"released"`
	SameKey  *Phase `json:"same_key,omitempty"`
}

// Regime is the result of a regime (Held or Released).
func (r *Result) Regime(name string) *Regime {
	if name == Held {
		return &r.Held
	}
	return &r.Released
}

// ThroughputRatio is jobs per minute with the lock over without it, in the released
// regime: there every run takes the lock, as it does without stalls.
func (r Result) ThroughputRatio() float64 {
	if r.Released.NoLock.PerMinute == 0 {
		return 0
	}
	return r.Released.WithLock.PerMinute / r.Released.NoLock.PerMinute
}

// Validate checks the options, naming the flag-like field that is wrong.
func (o Options) Validate() error {
	switch {
	case o.Workers < 1:
		return fmt.Errorf("workers: want at least 1, got %d", o.Workers)
	case o.PerMinute <= 0:
		return fmt.Errorf("rate: want more than 0 jobs a minute, got %g", o.PerMinute)
	case o.Duration <= 0:
		return fmt.Errorf("duration: must be positive, got %s", o.Duration)
	case o.Work < 0:
		return fmt.Errorf("work: must not be negative, got %s", o.Work)
	case o.Latency < 0:
		return fmt.Errorf("latency: must not be negative, got %s", o.Latency)
	case o.Jitter < 0:
		return fmt.Errorf("jitter: must not be negative, got %s", o.Jitter)
	case o.TTL <= 0:
		return fmt.Errorf("ttl: must be positive, got %s", o.TTL)
	case o.Visibility <= 0:
		return fmt.Errorf("visibility: must be positive, got %s", o.Visibility)
	case o.OnTaken != "drop" && o.OnTaken != "retry":
		return fmt.Errorf("on-taken: want drop or retry, got %q", o.OnTaken)
	case o.StallRate < 0 || o.StallRate > 1:
		return fmt.Errorf("stall-rate: want a share from 0 to 1, got %g", o.StallRate)
	case o.StallAfter < 0:
		return fmt.Errorf("stall-after: must not be negative, got %s", o.StallAfter)
	case o.StallFail < 0 || o.StallFail > 1:
		return fmt.Errorf("stall-fail: want a share from 0 to 1, got %g", o.StallFail)
	case o.SameKey < 0:
		return fmt.Errorf("same-key: must not be negative, got %d", o.SameKey)
	case o.Registry == nil:
		return errors.New("no registry of lock implementations")
	}
	return nil
}

// PhasePlan is a phase of the experiment as a plan.
type PhasePlan struct {
	Regime, Setting string
	Plan            plan.Plan
}

// Plans are the experiment's phases as plans, each regime under each setting (regime by
// regime, in the order of Settings), and the same-key check (nil when SameKey is 0). The
// regimes and settings differ only in the plans' jobs fields: where the stall falls
// (jobs.stall.at), lock, idempotent and release. Each validates against the registry.
func (o Options) Plans() (phases []PhasePlan, sameKey *plan.Plan, err error) {
	base := plan.Default()
	base.Impl = o.Impl
	base.Workload = plan.WorkloadJobs
	base.Clients = o.Workers
	base.TTL = plan.D(o.TTL)
	base.Duration = plan.D(o.Duration)
	base.Work = plan.D(o.Work)
	base.Timeout = plan.D(max(2*time.Second, 4*(o.Latency+o.Jitter)))
	base.Seed = o.Seed
	if o.Latency > 0 || o.Jitter > 0 {
		base.Faults = []plan.FaultSpec{{Kind: "net-latency", At: plan.D(0), Duration: plan.D(o.Duration),
			Target: "client:*->store", Latency: plan.D(o.Latency), Jitter: plan.D(o.Jitter)}}
	}
	for _, regime := range []string{Held, Released} {
		at := workload.BeforeWrite
		if regime == Released {
			at = workload.BeforeAck
		}
		for _, setting := range Settings() {
			p := base
			p.Name = "jobs-" + regime + "-" + map[string]string{NoLock: "no-lock", WithLock: "with-lock", Idempotent: "idempotent", UntilAck: "until-ack"}[setting]
			j := plan.JobsSpec{Rate: o.PerMinute / 60, Visibility: plan.D(o.Visibility)}
			if o.StallRate > 0 {
				j.Stall = &plan.StallSpec{Rate: o.StallRate, At: at, After: plan.D(o.StallAfter), Fail: o.StallFail}
			}
			switch setting {
			case WithLock:
				j.Lock, j.OnTaken = true, o.OnTaken
			case Idempotent:
				j.Idempotent = true
			case UntilAck:
				j.Lock, j.OnTaken, j.Release = true, o.OnTaken, plan.ReleaseAfterAck
			}
			p.Jobs = &j
			if err := p.Validate(o.Registry); err != nil {
				return nil, nil, err
			}
			phases = append(phases, PhasePlan{Regime: regime, Setting: setting, Plan: p})
		}
	}
	if o.SameKey > 0 {
		// Every job locks one key; the first runs long enough (work at least 2 s) that the
		// others are delivered, refused and skipped while it holds the lock.
		s := base
		s.Name = "jobs-same-key"
		s.Faults = nil
		s.Duration = plan.D(time.Second)
		s.Work = plan.D(max(o.Work, 2*time.Second))
		s.TTL = plan.D(max(o.TTL, 2*s.Work.D()))
		s.Jobs = &plan.JobsSpec{Count: o.SameKey, SameKey: true, Visibility: plan.D(max(o.Visibility, 2*s.TTL.D())), Lock: true, OnTaken: "drop"}
		if err := s.Validate(o.Registry); err != nil {
			return nil, nil, err
		}
		sameKey = &s
	}
	return phases, sameKey, nil
}

// Run runs the phases one after the other on fresh servers.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, fmt.Errorf("bench jobs: %w", err)
	}
	phases, sameKey, err := o.Plans()
	if err != nil {
		return Result{}, fmt.Errorf("bench jobs: %w", err)
	}
	res := Result{Options: o, Started: time.Now().UTC()}
	type run struct {
		regime, setting string
		p               plan.Plan
		out             *Phase
	}
	var runs []run
	for _, ph := range phases {
		runs = append(runs, run{ph.Regime, ph.Setting, ph.Plan, res.Regime(ph.Regime).Phase(ph.Setting)})
	}
	if sameKey != nil {
		res.SameKey = &Phase{}
		runs = append(runs, run{"", "", *sameKey, res.SameKey})
	}
	for i, r := range runs {
		name := r.regime + ", " + r.setting
		if r.regime == "" {
			name = "same key"
		}
		if o.Progress != nil {
			o.Progress(fmt.Sprintf("[%d/%d] %s: %s, %d workers, %g jobs a minute for %s", i+1, len(runs), name, r.p.Impl, r.p.Clients, r.p.Jobs.Rate*60, r.p.Duration.D()))
		}
		got, err := runPhase(ctx, o, name, r.p)
		got.Regime, got.Setting = r.regime, r.setting
		*r.out = got
		if err != nil {
			return res, fmt.Errorf("bench jobs: phase %s: %w", name, err)
		}
	}
	return res, nil
}

func runPhase(ctx context.Context, o Options, name string, p plan.Plan) (Phase, error) {
	ph := Phase{Name: name, Plan: p, Dir: filepath.Join(o.Out, p.Name)}
	r, err := p.Resolve(o.Registry)
	if err != nil {
		return ph, err
	}
	if err := os.MkdirAll(ph.Dir, 0o755); err != nil {
		return ph, err
	}
	if err := os.WriteFile(filepath.Join(ph.Dir, runner.PlanFile), p.MarshalIndent(), 0o644); err != nil {
		return ph, err
	}
	f, err := os.Create(filepath.Join(ph.Dir, LedgerFile))
	if err != nil {
		return ph, err
	}
	defer f.Close()
	m := newMeter(f, p.Duration.D())
	start := time.Now()
	// No run directory: the runner would save a history the sink has taken the operations
	// of. The plan and the ledger are the phase's record.
	rep, err := runner.Run(ctx, r, runner.Options{Sink: m.observe})
	ph.Wall = time.Since(start)
	ph.Perturbed, ph.Warnings = rep.Perturbed, rep.Warnings
	if ferr := m.flush(); ferr != nil && err == nil {
		err = fmt.Errorf("write %s: %w", LedgerFile, ferr)
	}
	m.fill(&ph)
	return ph, err
}

// LedgerFile is a phase's ledger: every side effect and the read-back at the end, one
// JSON operation per line (histories' record format).
const LedgerFile = "ledger.jsonl"

// meter counts a phase's operations as they stream by, in constant memory.
type meter struct {
	mu     sync.Mutex
	w      *bufio.Writer
	enc    *json.Encoder
	werr   error
	window int64 // ns: how long jobs are enqueued
	// start is the call of the first enqueue, where the plan's clock starts: the history's
	// base comes earlier, before the lock clients were started (seconds for subprocess
	// clients on a loaded machine), and must not eat into the window.
	start   int64
	started bool
	enq     int64
	ran     int64 // jobs in the read-back with at least one effect
	dup     int64
	effects int64
	first   int64 // first effects of a job within the window
	failed  int64
	done    int64
	skipped int64
	redeliv int64
	refused int64
	lat     histogram
}

func newMeter(f *os.File, window time.Duration) *meter {
	w := bufio.NewWriterSize(f, 1<<16)
	return &meter{w: w, enc: json.NewEncoder(w), window: int64(window)}
}

func (m *meter) observe(op histories.Op) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch op.Kind {
	case histories.Enqueue:
		if op.Outcome == histories.OK {
			m.enq++
		}
		if !m.started || op.Call < m.start {
			m.start, m.started = op.Call, true
		}
	case histories.Skip:
		m.skipped++
	case histories.Redeliver:
		m.redeliv++
	case histories.Acquire:
		switch op.Outcome {
		case histories.OK:
			m.lat.add(time.Duration(op.Return - op.Call))
		case histories.Fail:
			m.refused++
		}
	case histories.Effect:
		switch {
		case op.Outcome == histories.OK && op.Output.Value == 1 && op.Return-m.start <= m.window:
			m.first++
		case op.Outcome == histories.Fail && op.Output.Error == workload.ErrJobFailed.Error():
			m.failed++
		case op.Outcome == histories.Fail && op.Output.Error == workload.ErrAlreadyDone.Error():
			m.done++
		}
		m.write(op)
	case histories.Tally:
		if op.Key != histories.TallyEnd {
			m.ran++
			m.effects += op.Output.Value
			if op.Output.Value > 1 {
				m.dup++
			}
		}
		m.write(op)
	}
}

func (m *meter) write(op histories.Op) {
	if m.werr == nil {
		m.werr = m.enc.Encode(op)
	}
}

func (m *meter) flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.werr != nil {
		return m.werr
	}
	return m.w.Flush()
}

func (m *meter) fill(ph *Phase) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ph.Enqueued, ph.Ran, ph.Duplicated, ph.Effects = m.enq, m.ran, m.dup, m.effects
	ph.Lost = max(0, m.enq-m.ran)
	ph.Skipped, ph.Redelivers, ph.Failed, ph.Done = m.skipped, m.redeliv, m.failed, m.done
	ph.Granted, ph.Refused = m.lat.n, m.refused
	ph.AcquireP50, ph.AcquireP99 = m.lat.quantile(0.50), m.lat.quantile(0.99)
	if m.window > 0 {
		ph.PerMinute = float64(m.first) / (float64(m.window) / float64(time.Minute))
	}
}

// histogram holds durations in logarithmic buckets 1 % wide, from 1 µs up: quantiles to
// 1 % in constant memory, however long the run.
type histogram struct {
	counts [histBuckets]int64
	n      int64
}

const (
	histBuckets = 2000 // 1 µs × 1.01^2000 ≈ 440 s
	histGrowth  = 1.01
)

func (h *histogram) add(d time.Duration) {
	i := 0
	if us := float64(d) / float64(time.Microsecond); us > 1 {
		i = min(histBuckets-1, int(math.Log(us)/math.Log(histGrowth))+1)
	}
	h.counts[i]++
	h.n++
}

// quantile is the upper edge of the bucket holding the q-quantile, 0 when empty.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for i, c := range h.counts {
		if seen += c; seen >= max(rank, 1) {
			return time.Duration(math.Pow(histGrowth, float64(i)) * float64(time.Microsecond))
		}
	}
	return time.Duration(math.Pow(histGrowth, histBuckets) * float64(time.Microsecond))
}
