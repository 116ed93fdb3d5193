package linearizability

import (
	"time"

	"github.com/locklab/locklab/histories"
)

// opt adjusts an operation built by op.
type opt func(*histories.Op)

// op builds an operation of process p (and, unless client says otherwise, client p) with
// call and return given in milliseconds since the base.
func op(p int, kind histories.Kind, key string, outcome histories.Outcome, callMS, retMS float64, opts ...opt) histories.Op {
	o := histories.Op{Process: p, Client: p, Key: key, Kind: kind, Outcome: outcome, Call: ms(callMS), Return: ms(retMS)}
	for _, f := range opts {
		f(&o)
	}
	return o
}

func ms(x float64) int64 { return int64(x * float64(time.Millisecond)) }

// client sets the client of an operation whose process is not its client's first.
func client(c int) opt { return func(o *histories.Op) { o.Client = c } }

// fence is the fence granted to an acquire, or presented by a read or write.
func fence(f int64) opt {
	return func(o *histories.Op) {
		if o.Kind == histories.Acquire {
			o.Output.Fence = f
		} else {
			o.Input.Fence = f
		}
	}
}

// write sets a write's new value and the base it overwrites.
func write(value, base int64) opt {
	return func(o *histories.Op) { o.Input.Value, o.Input.Base = value, base }
}

// got sets the value a read returned.
func got(v int64) opt { return func(o *histories.Op) { o.Output.Value = v } }

// ttl sets the TTL an acquire or extend asked for.
func ttl(d time.Duration) opt { return func(o *histories.Op) { o.Input.TTL = d } }

// granted is the lease the servers granted, as the client reported it.
func granted(d time.Duration) opt { return func(o *histories.Op) { o.Output.Granted = d } }

// history assembles a history in the recorder's order.
func history(fencing string, ttl time.Duration, ops ...histories.Op) histories.History {
	histories.SortOps(ops)
	return histories.History{Meta: histories.Meta{Fencing: fencing, TTL: ttl}, Ops: ops}
}

// kleppmann is the pause schedule of "How to do distributed locking": A (process 0) acquires
// with fence 1 and reads 0, then pauses; its 50 ms lease expires; B (process 1) acquires with
// fence 2, reads 0, writes 1 and releases; A wakes and writes 1 over 0 with fence 1, which
// the store answers with aWrite, and A's release fails.
func kleppmann(fencing string, aWrite histories.Outcome) histories.History {
	const a, b = 0, 1
	h := history(fencing, 50*time.Millisecond,
		op(a, histories.Acquire, "k", histories.OK, 0, 10, fence(1)),
		op(a, histories.Read, "res", histories.OK, 20, 30, fence(1), got(0)),
		op(b, histories.Acquire, "k", histories.OK, 100, 110, fence(2)),
		op(b, histories.Read, "res", histories.OK, 120, 130, fence(2), got(0)),
		op(b, histories.Write, "res", histories.OK, 140, 150, fence(2), write(1, 0)),
		op(b, histories.Release, "k", histories.OK, 160, 170),
		op(a, histories.Write, "res", aWrite, 200, 210, fence(1), write(1, 0)),
		op(a, histories.Release, "k", histories.Fail, 220, 230),
	)
	h.Faults = []histories.FaultWindow{{Kind: "client-pause", Target: "client 0", Start: ms(40), End: ms(190), Detail: "GC pause of 150 ms"}}
	return h
}
