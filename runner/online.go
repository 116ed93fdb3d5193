package runner

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/internal/jsonfile"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/linearizability/online"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/timeline"
)

// Online makes a run of hours or days (locklab soak): its history is never held. Every
// operation goes, in call order as soon as nothing called before it is still in flight,
// to compressed segments of the run directory (histories.SegmentWriter) and to a checker
// that cuts each key's history into windows and checks them while the run goes on
// (linearizability/online). A window with a violation is written at once into
// violations/ with its history, its timeline and a plan that replays the load and the
// faults around it. The run's result is the checker's: the verdicts an offline check of
// the segments gives.
type Online struct {
	SegmentOps int           // operations per history segment; 0: DefaultSegmentOps
	Tick       time.Duration // how often windows are cut and the history written; 0: 200 ms
	Workers    int           // windows checked at once; 0: GOMAXPROCS
	// MaxViolations bounds the violation directories written (the rest are counted);
	// 0: 100.
	MaxViolations int
	// Progress, when set, is called about once a second while the run goes on and once
	// when it is over, from one goroutine.
	Progress func(Progress)
}

// DefaultSegmentOps is how many operations a history segment holds unless told.
const DefaultSegmentOps = 1_000_000

// ViolationsDir is where a long run writes its violations, one directory each; FoundFile
// in each says when it was found.
const (
	ViolationsDir = "violations"
	FoundFile     = "found.json"
)

// Found is when a long run found a violation: the properties its window breaks, the
// moment the last of their first violations was complete (Until, ns on the run's clock),
// when the window was checked and written (Reported), and the time between (Latency).
type Found struct {
	Properties []linearizability.Property `json:"properties"`
	Until      int64                      `json:"until_ns"`
	Reported   int64                      `json:"reported_ns"`
	Latency    time.Duration              `json:"latency_ns"`
}

// Progress is how far a long run has come. A long run appends it to ProgressFile once a
// minute and at its end: its memory and checking over time.
type Progress struct {
	Elapsed time.Duration `json:"elapsed_ns"` // since the plan's clock started
	online.Status
	InFlight    int    `json:"in_flight"`     // operations recorded and not yet written: something called before them is in flight
	Resident    uint64 `json:"resident"`      // the process's resident memory, bytes (0 where unknown)
	Heap        uint64 `json:"heap"`          // bytes of Go heap in use
	Written     int    `json:"written"`       // violation directories written
	SegmentOps  int64  `json:"segment_ops"`   // operations written to segments
	Done        bool   `json:"done"`          // the run is over and everything is checked
	LastWritten string `json:"last,omitzero"` // the latest violation directory, "" for none
}

// ProgressFile is where a long run logs its Progress, a JSON line a minute.
const ProgressFile = "progress.jsonl"

// live is a long run's checking and writing while its clients run.
type live struct {
	opts    Online
	plan    plan.Plan
	dir     string
	order   histories.Orderer
	seg     *histories.SegmentWriter
	checker *online.Checker
	rec     *histories.Recorder // the run's clock, once the recorder exists

	mu       sync.Mutex // guards seg, errs, written, last
	errs     []error
	written  int
	last     string
	found    atomic.Int64
	finished atomic.Bool
}

func startLive(opts Options, p plan.Plan, meta histories.Meta) (*live, error) {
	o := *opts.Online
	if opts.Dir == "" {
		return nil, errors.New("a long run (online checking) needs a run directory")
	}
	o.SegmentOps = cmp.Or(o.SegmentOps, DefaultSegmentOps)
	o.Tick = cmp.Or(o.Tick, 200*time.Millisecond)
	o.MaxViolations = cmp.Or(o.MaxViolations, 100)
	seg, err := histories.NewSegmentWriter(opts.Dir, meta, o.SegmentOps)
	if err != nil {
		return nil, err
	}
	l := &live{opts: o, plan: p, dir: opts.Dir, seg: seg}
	l.checker, err = online.New(meta, online.Options{
		Check: linearizability.Options{Timeout: opts.CheckTimeout}, Workers: o.Workers, Violation: l.violation,
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// pump writes and checks what the recorder has recorded, every tick, until done closes.
func (l *live) pump(rec *histories.Recorder, done <-chan struct{}) {
	tick := time.NewTicker(l.opts.Tick)
	defer tick.Stop()
	var buf []histories.Op
	lastProgress := time.Now()
	var lastLogged time.Duration
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		upTo := rec.Watermark()
		buf = l.step(upTo, rec.Faults(), buf[:0])
		if time.Since(lastProgress) >= time.Second {
			lastProgress = time.Now()
			p := l.progress(false)
			if p.Elapsed-lastLogged >= time.Minute {
				lastLogged = p.Elapsed
				l.log(p)
			}
			if l.opts.Progress != nil {
				l.opts.Progress(p)
			}
		}
	}
}

// step hands every operation called before upTo to the segments and the checker.
func (l *live) step(upTo int64, faults []histories.FaultWindow, buf []histories.Op) []histories.Op {
	buf = l.order.Take(upTo, buf)
	l.mu.Lock()
	for _, op := range buf {
		if err := l.seg.Write(op); err != nil && len(l.errs) == 0 {
			l.errs = append(l.errs, err)
		}
	}
	l.mu.Unlock()
	for _, op := range buf {
		if err := l.checker.Add(op); err != nil {
			l.fail(err)
		}
	}
	l.checker.Advance(upTo, faults)
	return buf
}

func (l *live) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < 10 {
		l.errs = append(l.errs, err)
	}
}

// finish writes and checks the rest once the clients stopped and the faults healed (h:
// the recorder's history, faults only), and returns the run's result.
func (l *live) finish(h histories.History) (linearizability.Result, online.Status, error) {
	l.finished.Store(true)
	l.step(histories.Infinity, h.Faults, nil)
	res, cerr := l.checker.Close(h.Faults)
	l.mu.Lock()
	serr := l.seg.Close()
	errs := append(l.errs, cerr, serr)
	l.mu.Unlock()
	p := l.progress(true)
	l.log(p)
	if l.opts.Progress != nil {
		l.opts.Progress(p)
	}
	return res, p.Status, errors.Join(errs...)
}

// log appends p to the run's progress log.
func (l *live) log(p Progress) {
	line, err := json.Marshal(p)
	if err == nil {
		var f *os.File
		if f, err = os.OpenFile(filepath.Join(l.dir, ProgressFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			_, err = f.Write(append(line, '\n'))
			err = errors.Join(err, f.Close())
		}
	}
	if err != nil {
		l.fail(fmt.Errorf("progress log: %w", err))
	}
}

// abandon stops the checker and closes the segments of a run that ended before its
// clock started (finish was never called).
func (l *live) abandon() {
	if l.finished.Swap(true) {
		return
	}
	_, _ = l.checker.Close(nil)
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.seg.Close()
}

func (l *live) progress(done bool) Progress {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	l.mu.Lock()
	defer l.mu.Unlock()
	return Progress{
		Elapsed: time.Duration(l.rec.Now()), Status: l.checker.Status(), InFlight: l.order.Len(),
		Resident: residentBytes(), Heap: ms.HeapInuse, Written: l.written, SegmentOps: l.seg.Ops(),
		Done: done, LastWritten: l.last,
	}
}

// keepOnline writes what a long run keeps beside its segments and violations: the
// faults and result.json (its verdicts and report).
func keepOnline(opts Options, h histories.History, rep *Report) error {
	if err := histories.SaveFaults(opts.Dir, h.Faults); err != nil {
		return err
	}
	return jsonfile.Write(filepath.Join(opts.Dir, ResultFile), rep)
}

// violation writes a window with a violation into its own directory, at once.
func (l *live) violation(v online.Violation) {
	n := l.found.Add(1)
	if n > int64(l.opts.MaxViolations) {
		return
	}
	reported := l.rec.Now()
	first, last := span(v.Window)
	props := []string{}
	found := Found{Reported: reported}
	for _, p := range v.Result.Properties {
		if p.Verdict == linearizability.Illegal {
			props = append(props, string(p.Property))
			found.Properties = append(found.Properties, p.Property)
			found.Until = max(found.Until, p.Until)
		}
	}
	found.Latency = time.Duration(reported - found.Until)
	dir := filepath.Join(l.dir, ViolationsDir, fmt.Sprintf("%04d-%s-%s", n, strings.Join(props, "-"), safeName(v.Window.Ops[0].Key)))
	err := writeViolation(dir, l.plan, v, first, last)
	if err == nil {
		err = jsonfile.Write(filepath.Join(dir, FoundFile), found)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("write violation: %w", err))
		return
	}
	l.written++
	l.last = dir
}

func span(h histories.History) (int64, int64) {
	first, last := h.Ops[0].Call, h.Ops[0].Return
	for _, op := range h.Ops {
		first, last = min(first, op.Call), max(last, op.Return)
	}
	return first, last
}

// safeName keeps a key fit for a directory name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, s)
}

// writeViolation writes the window's history, its verdicts, its timeline and a plan that
// replays the load and faults around it.
func writeViolation(dir string, p plan.Plan, v online.Violation, first, last int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := histories.Save(dir, v.Window); err != nil {
		return err
	}
	if err := jsonfile.Write(filepath.Join(dir, ResultFile), v.Result); err != nil {
		return err
	}
	title := fmt.Sprintf("%s · window %.3f–%.3f s", Title(p), float64(first)/1e9, float64(last)/1e9)
	if err := timeline.Write(filepath.Join(dir, timeline.File), timeline.Run{History: v.Window, Result: v.Result, Title: title}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, PlanFile), ReplayAround(p, v.Window.Faults, first, last).MarshalIndent(), 0o644)
}

// ReplayAround is a plan that runs p's load again over the stretch [first, last] (ns since
// the run's start) of a long run, with the faults that struck around it (faults: the
// windows the run recorded) at the same offsets, each once: the same implementation,
// topology, clients, keys, timings and seed, for as long as the stretch and a margin of
// two TTLs (at least a second) on either side. It reproduces the conditions, not the
// interleaving.
func ReplayAround(p plan.Plan, faults []histories.FaultWindow, first, last int64) plan.Plan {
	margin := max(2*p.TTL.D(), time.Second)
	from := max(0, time.Duration(first)-margin)
	q := p
	q.Name = cmp.Or(p.Name, "soak") + "-window"
	q.Duration = plan.D(time.Duration(last) - from + margin)
	q.Faults = nil
	for _, w := range faults {
		spec, ok := strikeOf(p, w)
		if !ok {
			continue
		}
		spec.Every = plan.Duration{}
		spec.At = plan.D(max(0, time.Duration(w.Start)-from))
		if spec.At.D() >= q.Duration.D() {
			continue
		}
		if w.End > w.Start {
			spec.Duration = plan.D(time.Duration(w.End - w.Start))
		}
		q.Faults = append(q.Faults, spec)
	}
	return q
}

// strikeOf is the fault of p whose strike recorded window w: the timed fault of its kind
// and target, else the one timed fault of its kind (a target such as "any" is recorded
// as the client it struck).
func strikeOf(p plan.Plan, w histories.FaultWindow) (plan.FaultSpec, bool) {
	var kin []plan.FaultSpec
	for _, f := range p.Faults {
		if f.Kind != w.Kind || f.Trigger != "" {
			continue
		}
		if f.Target == w.Target {
			return f, true
		}
		kin = append(kin, f)
	}
	if len(kin) == 1 {
		return kin[0], true
	}
	return plan.FaultSpec{}, false
}

// residentBytes is the process's resident set size from /proc (0 where there is none).
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
