package histories

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Recorder collects the operations of concurrent clients on one monotonic base clock.
// Each client records through its own Stream, which appends without locking, so that
// recording costs no contention between clients.
type Recorder struct {
	base     time.Time
	meta     Meta
	nextProc atomic.Int64

	mu      sync.Mutex
	streams []*Stream
	faults  []FaultWindow
	sink    func(Op) // not nil: operations go there and are not kept
}

// NewRecorder starts the base clock now.
func NewRecorder(meta Meta) *Recorder {
	base := time.Now()
	meta.Started = base.UTC()
	return &Recorder{base: base, meta: meta}
}

// NewStreamingRecorder is a recorder that keeps no operation: each one is handed to
// sink as it is recorded (from many goroutines at once; sink must be safe for that), so
// that a run of days records in constant memory. Its History has the faults only.
func NewStreamingRecorder(meta Meta, sink func(Op)) *Recorder {
	r := NewRecorder(meta)
	r.sink = sink
	return r
}

// Now is the time since the base in nanoseconds, on the monotonic clock.
func (r *Recorder) Now() int64 { return int64(time.Since(r.base)) }

// Base is the recorder's base time (with its monotonic reading).
func (r *Recorder) Base() time.Time { return r.base }

// NewProcess hands out a fresh process id.
func (r *Recorder) NewProcess() int { return int(r.nextProc.Add(1) - 1) }

// Watermark is how far the run has come for a reader of its operations as they are
// recorded: every operation called before it has been recorded (handed to the sink),
// provided each stream takes its operations' call times from Begin. It is the earliest
// call of an operation in flight, or now.
func (r *Recorder) Watermark() int64 {
	t := r.Now() // before reading the streams: a Begin that none of them shows yet returns later
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.streams {
		if p := s.inflight.Load(); p > 0 && p-1 < t {
			t = p - 1
		}
	}
	return t
}

// Faults is the fault windows so far, those still active with End -1.
func (r *Recorder) Faults() []FaultWindow {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.faults)
}

// Stream returns a new stream for one client. A stream must be used by one goroutine at a time.
// A nil recorder hands out nil streams, which record nothing.
func (r *Recorder) Stream(client int) *Stream {
	if r == nil {
		return nil
	}
	s := &Stream{rec: r, client: client, lockProc: r.NewProcess(), storeProc: r.NewProcess()}
	r.mu.Lock()
	r.streams = append(r.streams, s)
	r.mu.Unlock()
	return s
}

// FaultStart records that a fault became active and returns its index for FaultEnd.
func (r *Recorder) FaultStart(kind, target, detail string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, FaultWindow{Kind: kind, Target: target, Detail: detail, Start: r.Now(), End: -1})
	return len(r.faults) - 1
}

// Acting reports whether a fault acts on the server named target right now: a window on
// it is open, or a failover (which changes every server's role) is under way.
func (r *Recorder) Acting(target string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.faults {
		if w.End == -1 && (w.Target == target || w.Kind == "failover") {
			return true
		}
	}
	return false
}

// FaultDetail replaces the detail of the window FaultStart returned: a fault may learn
// what happened only after it began (which replica a failover promoted, and when).
func (r *Recorder) FaultDetail(i int, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= 0 && i < len(r.faults) {
		r.faults[i].Detail = detail
	}
}

// FaultUpdate changes window i (from FaultStart) with update, e.g. to record a clock
// fault's offset or the server a failover promoted.
func (r *Recorder) FaultUpdate(i int, update func(*FaultWindow)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= 0 && i < len(r.faults) {
		update(&r.faults[i])
	}
}

// FaultEnd records that the fault returned by FaultStart healed.
func (r *Recorder) FaultEnd(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= 0 && i < len(r.faults) && r.faults[i].End == -1 {
		r.faults[i].End = r.Now()
	}
}

// History merges every stream into one history ordered by call time. Faults still active
// are closed at the current time. Call it after the clients have stopped.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.streams {
		n += s.kept.len()
	}
	ops := make([]Op, 0, n)
	in := interner{}
	for _, s := range r.streams {
		ops = s.kept.appendOps(ops, in)
	}
	SortOps(ops)
	faults := slices.Clone(r.faults)
	now := r.Now()
	for i := range faults {
		if faults[i].End == -1 {
			faults[i].End = now
		}
	}
	return History{Meta: r.meta, Ops: ops, Faults: faults}
}

// SortOps orders operations by call time, then return time, then process: a stable,
// total order so that saved histories are byte-for-byte reproducible.
func SortOps(ops []Op) {
	slices.SortStableFunc(ops, func(a, b Op) int {
		switch {
		case a.Call != b.Call:
			return cmpInt64(a.Call, b.Call)
		case a.Return != b.Return:
			return cmpInt64(a.Return, b.Return)
		default:
			return a.Process - b.Process
		}
	})
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Stream records the operations of one client. An unknown operation never ends for the
// checkers, so after an unknown outcome the client continues under a fresh process id —
// except after an extend, whose caller still believes it holds the lock and ends that
// belief by releasing it, as the same process. Lock operations and store operations are
// checked in separate partitions (P1/P3 and P2), so each family has its own process id: a
// store write that timed out must not take away the lock its client still holds.
//
// A nil stream records nothing and reads no clock (Now is 0, Record returns the zero Op):
// it is a client without recording, against which the recorder's cost is measured.
type Stream struct {
	rec       *Recorder
	client    int
	lockProc  int
	storeProc int
	kept      store        // what it recorded (slots.go)
	inflight  atomic.Int64 // 1 + the call time Begin gave an operation not recorded yet; 0: none
}

// add keeps op, or hands it to the recorder's sink.
func (s *Stream) add(op Op) {
	if s.rec.sink != nil {
		s.rec.sink(op)
		return
	}
	s.kept.keep(op)
}

// Process is the stream's current process id for lock operations.
func (s *Stream) Process() int { return s.lockProc }

// StoreProcess is the stream's current process id for store operations.
func (s *Stream) StoreProcess() int { return s.storeProc }

// Client is the client this stream records for.
func (s *Stream) Client() int { return s.client }

// Now is the recorder's clock.
func (s *Stream) Now() int64 {
	if s == nil {
		return 0
	}
	return s.rec.Now()
}

// Begin is the call time of an operation about to be sent (Now), and marks it in flight
// until Record: the recorder's Watermark stays before it.
func (s *Stream) Begin() int64 {
	if s == nil {
		return 0
	}
	s.inflight.Store(s.rec.Now() + 1) // before the time it returns: a Watermark read meanwhile stays at or before it
	return s.rec.Now()
}

// Record appends a finished operation: call is the time taken before the operation was
// sent (from Now). Process, client and return time are filled in here. After an unknown
// outcome (but an extend's) the stream moves to a fresh process for that family.
func (s *Stream) Record(kind Kind, key string, in Input, out Output, outcome Outcome, call int64) Op {
	if s == nil {
		return Op{}
	}
	proc := &s.lockProc
	if kind.IsStore() || kind.IsJob() {
		proc = &s.storeProc
	}
	op := Op{
		Process: *proc, Client: s.client, Key: key, Kind: kind,
		Input: in, Output: out, Outcome: outcome, Call: call, Return: s.rec.Now(),
	}
	s.add(op)
	s.inflight.Store(0)
	if outcome == Unknown && kind != Extend {
		*proc = s.rec.NewProcess()
	}
	return op
}

// Crash records that the client stopped for good at this moment; it ends every belief of
// its current lock process on key.
func (s *Stream) Crash(key string) {
	if s == nil {
		return
	}
	now := s.Begin()
	s.add(Op{Process: s.lockProc, Client: s.client, Key: key, Kind: Crash, Outcome: OK, Call: now, Return: now})
	s.inflight.Store(0)
	s.lockProc, s.storeProc = s.rec.NewProcess(), s.rec.NewProcess()
}
