// Package online checks a history while it is recorded, for runs of hours or days whose
// history never fits in memory at once. Each key's lock operations and store operations
// are cut into windows at instants where a cut is sound for every property
// (Cutter), each window is checked from the state the key's earlier windows
// left (linearizability.CheckFrom) on a bounded pool of workers, and only the operations
// of windows still open are kept. The verdicts are those of linearizability.Check on the
// whole history; a violation is reported as soon as its window is checked.
package online

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/model"
)

// Options tune a Checker.
type Options struct {
	// Check is each window's check: its Timeout bounds Porcupine on each window, Slack is
	// L1's. HTMLPath is ignored: a window has no page of its own.
	Check linearizability.Options
	// Workers is how many windows are checked at once; 0 means GOMAXPROCS. Windows wait
	// in a queue of Workers×64 for a worker: when checking falls behind, Advance waits.
	Workers int
	// Violation, if not nil, is called at once for each window with an illegal property,
	// from the worker that checked it (calls may overlap).
	Violation func(Violation)
	// A key's window is cut once it holds MinWindow operations or its first operation was
	// called MaxAge before the run's progress (Advance), whichever comes first: a window
	// costs its check a fixed overhead, so windows of a few operations would cost more
	// than the operations, while MaxAge bounds how late a violation is found. 0: 256
	// operations and 1 s.
	MinWindow int
	MaxAge    time.Duration
}

// Violation is a window in which some property is illegal: the key's operations from one
// sound cut to the next, the run's faults during it, and the window's verdicts.
type Violation struct {
	Window histories.History
	Result linearizability.Result
}

// Status is how far the checking has come.
type Status struct {
	Ops            int64 `json:"ops"`             // operations added
	Windows        int64 `json:"windows"`         // windows checked
	Queued         int   `json:"queued"`          // windows cut, waiting for a worker or being checked
	Pending        int   `json:"pending"`         // operations added that are in no cut window yet
	LargestPending int   `json:"largest_pending"` // the most operations one key's open window holds now
	LargestWindow  int   `json:"largest_window"`  // the most operations a window checked so far held
	PeakPending    int   `json:"peak_pending"`    // the most operations one key's open window ever held
	Violations     int64 `json:"violations"`      // windows with an illegal property
	// Late counts operations that arrived after a window that should have held them was
	// cut: the caller advanced past an operation still in flight. Close reports them.
	Late int64 `json:"late"`
}

// family is which operations of a key a window holds: the lock's or the store's. They
// are cut apart: a store write of unknown outcome keeps the store's window open without
// holding back the lock's.
type family int

const (
	lockOps family = iota
	storeOps
)

type slot struct {
	key string
	fam family
}

// open is one key's operations in one family since its last cut, and what its earlier
// windows left.
type open struct {
	ops      []histories.Op
	unsorted bool    // an operation came out of call order: sort before cutting
	last     sortKey // the last operation added
	carry    linearizability.Carry
	cutter   Cutter
	upTo     int64 // the last cut was made with every operation called before upTo added
	hold     Hold  // what the rest waited for at the last try
	gen      int   // tries so far: an entry of Checker.afters from an earlier one is stale
	due      int64 // the moment it waits for in Checker.afters, while too small to cut
}

// after is a key waiting for the run to come past a moment before its window can end.
type after struct {
	at  int64
	key slot
	gen int
}

// afterHeap orders the keys waiting for the run by the moment they wait for.
type afterHeap []after

func (h afterHeap) Len() int           { return len(h) }
func (h afterHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h afterHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *afterHeap) Push(x any)        { *h = append(*h, x.(after)) }
func (h *afterHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// window is a cut window waiting to be checked.
type window struct {
	h    histories.History
	from linearizability.Carry
}

// Checker checks one run's history as it is recorded. Add, Advance and Status may be
// called from any goroutine; Close once, last.
type Checker struct {
	meta histories.Meta
	mode model.Fencing
	opts Options

	mu     sync.Mutex
	open   map[slot]*open
	status Status
	late   []string // the first few late operations, for Close's error
	// Which keys to try at the next cut, so that a cut costs what changed, not every key:
	// those with new operations, those whose wait for the run's progress is over, and,
	// once a fault ended, those waiting for one.
	dirty   map[slot]bool
	spare   map[slot]bool // the dirty map of the cut before, emptied, for the next
	afters  afterHeap
	faulted map[slot]bool
	ended   int // fault windows seen ended at the last cut

	work    chan window
	workers sync.WaitGroup
	merged  merger
}

// New starts a checker for a run described by meta and its workers.
func New(meta histories.Meta, opts Options) (*Checker, error) {
	mode, err := model.ParseFencing(meta.Fencing)
	if err != nil {
		return nil, fmt.Errorf("online check: %w", err)
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	opts.MinWindow = cmp.Or(opts.MinWindow, 256)
	opts.MaxAge = cmp.Or(opts.MaxAge, time.Second)
	opts.Check.HTMLPath = ""
	c := &Checker{meta: meta, mode: mode, opts: opts, open: map[slot]*open{}, work: make(chan window, opts.Workers*64),
		dirty: map[slot]bool{}, faulted: map[slot]bool{}}
	c.merged.init()
	for range opts.Workers {
		c.workers.Go(c.check)
	}
	return c, nil
}

// Add takes one finished operation. Operations of the job-queue workload are refused:
// P4 and P5 are about the whole run's ledger (locklab check decides them).
func (c *Checker) Add(op histories.Op) error {
	if err := op.Validate(); err != nil {
		return fmt.Errorf("online check: %w", err)
	}
	return c.add(&op)
}

// add is Add of an operation already validated (read from a history file, which
// validates every line).
func (c *Checker) add(op *histories.Op) error {
	if op.Kind.IsJob() {
		return fmt.Errorf("online check: %s of %q: the job-queue workload is checked on the whole history, not online", op.Kind, op.Key)
	}
	fam := lockOps
	if op.Kind.IsStore() {
		fam = storeOps
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status.Ops++
	key := slot{op.Key, fam}
	o := c.open[key]
	if o == nil {
		o = &open{}
		c.open[key] = o
	}
	c.dirty[key] = true
	if len(o.ops) > 0 && before(op, o.last) {
		o.unsorted = true
	}
	o.last = sortKey{op.Call, op.Return, op.Process}
	if op.Call < o.upTo {
		c.status.Late++
		if len(c.late) < 3 {
			c.late = append(c.late, fmt.Sprintf("%s of %q by process %d called at %d ns, after its key was cut at %d ns", op.Kind, op.Key, op.Process, op.Call, o.upTo))
		}
	}
	o.ops = append(o.ops, *op)
	c.status.Pending++
	c.status.PeakPending = max(c.status.PeakPending, len(o.ops))
	return nil
}

// Advance says that every operation called before upTo has been added, and faults are the
// run's fault windows so far (End -1 while active). It cuts every window that can end
// before upTo and queues it; it waits when the queue is full.
func (c *Checker) Advance(upTo int64, faults []histories.FaultWindow) {
	for _, w := range c.cut(upTo, faults, false) {
		c.work <- w
	}
}

// Close checks what is left (no operation comes after it) with faults, the run's fault
// windows, all ended, waits for every window, and returns the verdicts: those
// linearizability.Check gives for the whole history. Operations that arrived late are an
// error beside the result.
func (c *Checker) Close(faults []histories.FaultWindow) (linearizability.Result, error) {
	for _, w := range c.cut(histories.Infinity, faults, true) {
		c.work <- w
	}
	close(c.work)
	c.workers.Wait()
	res := c.merged.result(c.mode)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.merged.err; err != nil {
		return res, err
	}
	if c.status.Late > 0 {
		return res, fmt.Errorf("online check: %d operations arrived after their window was cut (the verdicts may miss them): %s", c.status.Late, strings.Join(c.late, "; "))
	}
	return res, nil
}

// Status is a snapshot of how far checking has come.
func (c *Checker) Status() Status {
	c.mu.Lock()
	s := c.status
	for _, o := range c.open {
		s.LargestPending = max(s.LargestPending, len(o.ops))
	}
	c.mu.Unlock()
	s.Queued = int(c.merged.queued.Load())
	s.Windows, s.Violations = c.merged.windows.Load(), c.merged.violations.Load()
	s.LargestWindow = int(c.merged.largest.Load())
	return s
}

// cut takes every window that can end before upTo out of the open ones (all of them when
// last). It tries the keys that may have changed since the last cut only.
func (c *Checker) cut(upTo int64, faults []histories.FaultWindow, last bool) []window {
	c.mu.Lock()
	defer c.mu.Unlock()
	tries := c.dirty
	c.dirty, c.spare = c.spare, nil // the other map, emptied below once tried
	if c.dirty == nil {
		c.dirty = map[slot]bool{}
	}
	defer func() { clear(tries); c.spare = tries }()
	if last {
		for key := range c.open {
			tries[key] = true
		}
	}
	for len(c.afters) > 0 && c.afters[0].at < upTo {
		a := heap.Pop(&c.afters).(after)
		if o := c.open[a.key]; o != nil && o.gen == a.gen {
			tries[a.key] = true
		}
	}
	ended := 0
	for _, w := range faults {
		if w.End != -1 {
			ended++
		}
	}
	if ended != c.ended {
		c.ended = ended
		for key := range c.faulted {
			tries[key] = true
		}
	}
	var out []window
	for key := range tries {
		if w, ok := c.try(key, c.open[key], upTo, faults, last); ok {
			out = append(out, w)
		}
	}
	c.merged.queued.Add(int64(len(out)))
	return out
}

// try cuts key's window if it can end before upTo (whatever is left, when last), and
// notes what the rest waits for.
func (c *Checker) try(key slot, o *open, upTo int64, faults []histories.FaultWindow, last bool) (window, bool) {
	o.upTo = upTo
	if len(o.ops) == 0 || (o.hold == HoldEnd && !last) {
		return window{}, false // nothing, or nothing before the end: a write of unknown outcome stays open
	}
	if due := o.ops[0].Call + int64(c.opts.MaxAge); !last && len(o.ops) < c.opts.MinWindow && upTo < due {
		if o.due != due { // tried again once the run is past due
			o.gen++
			o.due = due
			heap.Push(&c.afters, after{at: due - 1, key: key, gen: o.gen})
		}
		return window{}, false
	}
	o.due = 0
	if o.unsorted || o.hold == HoldFault {
		// Out of order, or held by a fault that may have ended: scan it all again.
		histories.SortOps(o.ops)
		o.unsorted = false
		o.cutter.Reset()
	}
	n, hold, at := len(o.ops), HoldNone, int64(0)
	if !last {
		n, hold, at = o.cutter.Cut(o.ops, faults, c.mode, upTo)
	}
	o.gen++
	o.hold = hold
	delete(c.faulted, key)
	switch hold {
	case HoldAfter:
		heap.Push(&c.afters, after{at: at, key: key, gen: o.gen})
	case HoldFault:
		c.faulted[key] = true
	}
	if n == 0 {
		return window{}, false
	}
	ops := o.ops[:n:n]
	h := histories.History{Meta: c.meta, Ops: ops, Faults: during(faults, ops)}
	w := window{h: h, from: o.carry}
	o.carry = linearizability.CarryAfter(h, o.carry)
	// The rest in a slice of its own (the window keeps its part), with a little room (room
	// for a window's worth, kept by each of thousands of keys, was most of the
	// ten-million check's live heap); none for a key left idle, so that ten thousand keys
	// that had their turn hold nothing.
	if rest := o.ops[n:]; len(rest) > 0 {
		o.ops = append(make([]histories.Op, 0, len(rest)+16), rest...)
	} else {
		o.ops = nil
	}
	c.status.Pending -= n
	return w, true
}

// sortKey is where an operation goes in histories.SortOps' order.
type sortKey struct {
	call, ret int64
	process   int
}

// before reports whether op comes before the operation at k in histories.SortOps' order.
func before(op *histories.Op, k sortKey) bool {
	switch {
	case op.Call != k.call:
		return op.Call < k.call
	case op.Return != k.ret:
		return op.Return < k.ret
	}
	return op.Process < k.process
}

// during is the fault windows that overlap ops' span.
func during(faults []histories.FaultWindow, ops []histories.Op) []histories.FaultWindow {
	from, to := ops[0].Call, ops[0].Return
	for _, op := range ops {
		to = max(to, op.Return)
	}
	var out []histories.FaultWindow
	for _, w := range faults {
		if w.Start <= to && (w.End == -1 || w.End >= from) {
			out = append(out, w)
		}
	}
	return out
}

// check is one worker: it checks windows until the queue closes.
func (c *Checker) check() {
	for w := range c.work {
		res, err := linearizability.CheckFrom(w.h, w.from, c.opts.Check)
		c.merged.add(w.h, res, err)
		if err == nil && res.Violation() && c.opts.Violation != nil {
			c.opts.Violation(Violation{Window: w.h, Result: res})
		}
	}
}

// merger combines the windows' verdicts into the run's, property by property: illegal if
// any window is (the earliest violation explains it), else unknown if any is, else ok if
// any is, else n/a.
type merger struct {
	mu    sync.Mutex
	props map[linearizability.Property]*linearizability.PropertyResult
	first map[linearizability.Property]string // n/a: the first window's reason
	err   error
	counters
}

func (m *merger) init() {
	m.props = map[linearizability.Property]*linearizability.PropertyResult{}
	m.first = map[linearizability.Property]string{}
}

func (m *merger) add(h histories.History, res linearizability.Result, err error) {
	m.queued.Add(-1)
	m.windows.Add(1)
	m.largest.max(int64(len(h.Ops)))
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.err = errors.Join(m.err, fmt.Errorf("online check: window of %q: %w", h.Ops[0].Key, err))
		return
	}
	if res.Violation() {
		m.violations.Add(1)
	}
	for _, p := range res.Properties {
		acc := m.props[p.Property]
		if acc == nil {
			acc = &linearizability.PropertyResult{Property: p.Property, Verdict: linearizability.NA}
			m.props[p.Property] = acc
			m.first[p.Property] = p.Explanation
		}
		acc.Ops += p.Ops
		acc.Elapsed += p.Elapsed
		acc.Undecided = append(acc.Undecided, p.Undecided...)
		switch {
		case p.Verdict == linearizability.Illegal:
			if acc.Verdict != linearizability.Illegal || p.At < acc.At {
				acc.Verdict, acc.Explanation, acc.Shape, acc.At, acc.Until = p.Verdict, p.Explanation, p.Shape, p.At, p.Until
			}
		case acc.Verdict == linearizability.Illegal:
		case p.Verdict == linearizability.Unknown:
			acc.Verdict = linearizability.Unknown
		case p.Verdict == linearizability.OK && acc.Verdict == linearizability.NA:
			acc.Verdict = linearizability.OK
		}
	}
}

// result is the run's verdicts, in the order of linearizability.AllProperties.
func (m *merger) result(mode model.Fencing) linearizability.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	res := linearizability.Result{Fencing: string(mode), Verdict: linearizability.OK}
	for _, prop := range linearizability.AllProperties() {
		p := linearizability.PropertyResult{Property: prop, Verdict: linearizability.NA, Explanation: "no operations"}
		if acc := m.props[prop]; acc != nil {
			p = *acc
			switch p.Verdict {
			case linearizability.NA:
				p.Explanation = m.first[prop]
			case linearizability.Unknown:
				p.Explanation = undecided(p.Undecided, int(m.windows.Load()))
			}
		}
		switch {
		case p.Verdict == linearizability.Illegal:
			res.Verdict = linearizability.Illegal
		case p.Verdict == linearizability.Unknown && res.Verdict != linearizability.Illegal:
			res.Verdict = linearizability.Unknown
		}
		res.Properties = append(res.Properties, p)
	}
	return res
}

// undecided says which windows Porcupine could not decide in time, the largest first.
func undecided(us []linearizability.Undecided, windows int) string {
	us = slices.Clone(us)
	slices.SortStableFunc(us, func(a, b linearizability.Undecided) int { return cmp.Compare(b.Ops, a.Ops) })
	var names []string
	for _, u := range us[:min(len(us), 3)] {
		names = append(names, fmt.Sprintf("key %q (%d ops, %d of unknown outcome)", u.Key, u.Ops, u.Unknown))
	}
	s := fmt.Sprintf("Porcupine did not decide %d of %d windows in time: %s", len(us), windows, strings.Join(names, ", "))
	if len(us) > 3 {
		s += fmt.Sprintf(" and %d more", len(us)-3)
	}
	return s
}

// counters are the merger's figures that Status reads without its lock.
type counters struct {
	queued, windows, violations atomic.Int64
	largest                     maxInt64
}

// maxInt64 keeps the largest value it was given.
type maxInt64 struct{ atomic.Int64 }

func (m *maxInt64) max(v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}
