// Package histories holds the operation record of a locklab run: what every client did,
// when (on one monotonic base clock), and with what outcome, plus the fault windows.
package histories

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is what an operation did.
type Kind string

// Lock operations go to the lock service; Read and Write go to the protected store.
// Crash marks the moment a client stopped for good: it ends that process's belief.
const (
	Acquire Kind = "acquire"
	Release Kind = "release"
	Extend  Kind = "extend"
	Read    Kind = "read"
	Write   Kind = "write"
	Crash   Kind = "crash"
)

// Operations of the job-queue workload (docs/design.md, P4 and P5). Their key is the
// job's name; Output.Value carries a count where one is known.
const (
	Enqueue   Kind = "enqueue"   // the producer pushed the job onto the queue
	Deliver   Kind = "deliver"   // a worker took the job off the queue (BLMOVE)
	Skip      Kind = "skip"      // the worker's lock for the job was taken: it did not run it
	Effect    Kind = "effect"    // the job's side effect, appended to the ledger; Value: the job's effects so far
	Ack       Kind = "ack"       // the worker removed the job from its processing list; fail: it was no longer there
	Redeliver Kind = "redeliver" // the reaper put the job back: its visibility timeout expired
	Tally     Kind = "tally"     // the ledger read at the end: Value effects of the job (key TallyEnd: jobs read)
)

// TallyEnd is the key of the Tally operation that closes the ledger's read-back: without
// it the ledger was not read to the end, and no job can be called lost.
const TallyEnd = "*"

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool {
	switch k {
	case Acquire, Release, Extend, Read, Write, Crash:
		return true
	}
	return k.IsJob()
}

// IsJob reports whether k is an operation of the job-queue workload.
func (k Kind) IsJob() bool {
	switch k {
	case Enqueue, Deliver, Skip, Effect, Ack, Redeliver, Tally:
		return true
	}
	return false
}

// IsLock reports whether k is an operation on the lock service (or a crash, which ends a belief).
func (k Kind) IsLock() bool { return k == Acquire || k == Release || k == Extend || k == Crash }

// IsStore reports whether k is an operation on the protected store.
func (k Kind) IsStore() bool { return k == Read || k == Write }

// Outcome is what the client learnt about its operation.
type Outcome string

// Unknown means the operation may or may not have taken effect (timeout, connection
// error after the command may have been sent). The checkers treat its return as +infinity.
const (
	OK      Outcome = "ok"
	Fail    Outcome = "fail"
	Unknown Outcome = "unknown"
)

// Valid reports whether o is a known outcome.
func (o Outcome) Valid() bool { return o == OK || o == Fail || o == Unknown }

// Input is what the client sent.
type Input struct {
	TTL   time.Duration `json:"ttl,omitempty"`   // acquire, extend: lease duration asked for
	Token string        `json:"token,omitempty"` // release, extend: the lease's token
	Fence int64         `json:"fence,omitempty"` // read, write: fence presented to the store (0 = none)
	Value int64         `json:"value,omitempty"` // write: the new value
	Base  int64         `json:"base,omitempty"`  // write: the value this process last read, which it means to overwrite
}

// Output is what the client received.
type Output struct {
	Token    string        `json:"token,omitempty"`    // acquire: the lease's token
	Fence    int64         `json:"fence,omitempty"`    // acquire: fencing token granted (0 = none)
	Value    int64         `json:"value,omitempty"`    // read: the value read
	Validity time.Duration `json:"validity,omitempty"` // acquire, extend: validity the implementation reported
	// Granted, for an acquire or extend, is the lease the servers granted when the client
	// learnt it and it may differ from Input.TTL (etcd grants whole seconds, at least 1):
	// how long the lease may live. 0: not reported, the lease is the TTL asked for.
	Granted time.Duration `json:"granted,omitempty"`
	Error   string        `json:"error,omitempty"` // fail, unknown: why
	// Nodes, for an acquire ok of a lock on several servers (Redlock), are the servers
	// that granted it (indices into Meta.Servers), when the implementation says.
	Nodes []int `json:"nodes,omitempty"`
}

// Op is one recorded operation. Call and Return are nanoseconds since the run's base on a
// monotonic clock, never a faulted or skewed one. A process is sequential: after an
// unknown outcome the client continues under a fresh process id.
type Op struct {
	Process int     `json:"process"`
	Client  int     `json:"client"`
	Key     string  `json:"key"`
	Kind    Kind    `json:"kind"`
	Input   Input   `json:"input"`
	Output  Output  `json:"output"`
	Outcome Outcome `json:"outcome"`
	Call    int64   `json:"call"`
	Return  int64   `json:"return"`
}

// Validate reports the first thing wrong with op, if anything.
func (op Op) Validate() error {
	switch {
	case op.Process < 0:
		return fmt.Errorf("negative process %d", op.Process)
	case op.Client < 0:
		return fmt.Errorf("negative client %d", op.Client)
	case op.Key == "":
		return fmt.Errorf("empty key")
	case !op.Kind.Valid():
		return fmt.Errorf("unknown kind %q", op.Kind)
	case !op.Outcome.Valid():
		return fmt.Errorf("unknown outcome %q", op.Outcome)
	case op.Call < 0:
		return fmt.Errorf("negative call time %d", op.Call)
	case op.Return < op.Call:
		return fmt.Errorf("return time %d before call time %d", op.Return, op.Call)
	case op.Input.TTL < 0:
		return fmt.Errorf("negative ttl %s", op.Input.TTL)
	case op.Output.Granted < 0:
		return fmt.Errorf("negative granted lease %s", op.Output.Granted)
	}
	return nil
}

// FaultWindow is one injected fault as it actually happened: Start and End on the same
// base clock as the operations. End is -1 while the fault is still active.
type FaultWindow struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	Detail string `json:"detail,omitempty"`
	// What a picture of the run needs beyond the words: a clock fault's jump, and the
	// server a failover promoted.
	Offset   time.Duration `json:"offset,omitempty"`
	Promoted string        `json:"promoted,omitempty"`
}

// Validate reports the first thing wrong with w, if anything.
func (w FaultWindow) Validate() error {
	switch {
	case w.Kind == "":
		return fmt.Errorf("empty fault kind")
	case w.Start < 0:
		return fmt.Errorf("negative start %d", w.Start)
	case w.End != -1 && w.End < w.Start:
		return fmt.Errorf("end %d before start %d", w.End, w.Start)
	}
	return nil
}

// Client is the client a window's target names: "client:N", or the client side of one
// of its links ("client:N->lock-0"); the older form "client N" too.
func (w FaultWindow) Client() (int, bool) {
	t, _, _ := strings.Cut(w.Target, "->")
	rest, ok := strings.CutPrefix(t, "client:")
	if !ok {
		if rest, ok = strings.CutPrefix(t, "client "); !ok {
			return 0, false
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(rest))
	return n, err == nil && n >= 0
}

// ByCall returns the indices of ops in call order (then return, then index), leaving ops
// as they are.
func ByCall(ops []Op) []int {
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(ops[a].Call, ops[b].Call), cmp.Compare(ops[a].Return, ops[b].Return))
	})
	return idx
}

// Meta describes the run a history came from: what the checkers need to know offline.
type Meta struct {
	Fencing string        `json:"fencing"` // off, writes, full: the store's rule
	TTL     time.Duration `json:"ttl"`     // lease duration the clients asked for
	Impl    string        `json:"impl,omitempty"`
	Seed    int64         `json:"seed,omitempty"`
	Started time.Time     `json:"started,omitempty"` // wall-clock time of the base, for humans only
	// Servers are the lock service's servers in topology order (lock-0, lock-1, …), for
	// pictures of the run; Output.Nodes indexes them.
	Servers  []string `json:"servers,omitempty"`
	Topology string   `json:"topology,omitempty"` // single, replicated:3, nodes:5, etcd:3
	// Renews: the implementation keeps its leases alive in the background without
	// recording it (lockimpl.Impl.Renews), so a lease's end is not its TTL after a grant.
	Renews bool `json:"renews,omitempty"`
	// Persistence of the lock servers (none, aof-everysec, aof-always; "" unsaid): whether
	// a server crash loses the leases it held.
	Persistence string `json:"persistence,omitempty"`
	// ExpiryLag is how late the lock servers may free a lease once it expired (etcd
	// revokes expired leases on a 500 ms tick): L1 allows it beside its slack. 0 for
	// Redis, and in histories written before it was recorded.
	ExpiryLag time.Duration `json:"expiry_lag,omitempty"`
}

// History is a whole run's record.
type History struct {
	Meta   Meta
	Ops    []Op
	Faults []FaultWindow
}
