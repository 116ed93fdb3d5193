package linearizability

import (
	"math/rand/v2"
	"time"

	"github.com/locklab/locklab/histories"
)

// generate simulates clients doing lock-protected read-modify-writes (acquire, read, write,
// release; a refused acquire is retried later) on keys, with fencing full, until about n
// operations are recorded. Every operation takes effect at one instant inside its
// [call, return], in one global order, so the history is legal by construction; operations
// still overlap as they would in a real run. A write has an unknown outcome with
// probability unknown (it does take effect) and its client's store operations then go on
// as a new process, as the recorder does; its lock process (the believer) stays. Durations are in the order of a millisecond.
func generate(seed uint64, clients, keys, n int, unknown float64) histories.History {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	type lock struct {
		holder int // client, -1 when free
		fence  int64
		value  int64
		max    int64
	}
	type client struct {
		process, store int // lock and store process ids, as histories.Stream keeps them
		phase          int // 0 acquire, 1 read, 2 write, 3 release
		key            string
		fence, read    int64
		ready          int64
	}
	locks := make(map[string]*lock)
	names := make([]string, keys)
	for i := range names {
		names[i] = string(rune('a' + i))
		locks[names[i]] = &lock{holder: -1}
	}
	cs := make([]*client, clients)
	for i := range cs {
		cs[i] = &client{process: i, store: clients + i, ready: rng.Int64N(int64(time.Millisecond))}
	}
	nextProcess := 2 * clients
	var last int64
	ops := make([]histories.Op, 0, n)
	for len(ops) < n {
		ci := 0
		for i, c := range cs {
			if c.ready < cs[ci].ready {
				ci = i
			}
		}
		c := cs[ci]
		call := c.ready
		at := max(call+rng.Int64N(int64(time.Millisecond)), last+1) // the instant it takes effect
		last = at
		o := histories.Op{Process: c.process, Client: ci, Call: call, Return: at + rng.Int64N(int64(time.Millisecond)), Outcome: histories.OK}
		switch c.phase {
		case 0:
			c.key = names[rng.IntN(keys)]
			l := locks[c.key]
			o.Kind, o.Key, o.Input.TTL = histories.Acquire, c.key, time.Second
			if l.holder >= 0 {
				o.Outcome = histories.Fail
				break
			}
			l.holder, l.fence = ci, l.fence+1
			c.fence, o.Output.Fence, c.phase = l.fence, l.fence, 1
		case 1:
			l := locks[c.key]
			o.Kind, o.Key, o.Input.Fence, o.Process = histories.Read, "store-"+c.key, c.fence, c.store
			l.max = max(l.max, c.fence)
			c.read, o.Output.Value, c.phase = l.value, l.value, 2
		case 2:
			l := locks[c.key]
			o.Kind, o.Key, o.Input.Fence, o.Process = histories.Write, "store-"+c.key, c.fence, c.store
			o.Input.Value, o.Input.Base = c.read+1, c.read
			l.value, l.max, c.phase = c.read+1, max(l.max, c.fence), 3
			if rng.Float64() < unknown {
				o.Outcome = histories.Unknown
			}
		case 3:
			o.Kind, o.Key = histories.Release, c.key
			locks[c.key].holder, c.phase = -1, 0
		}
		ops = append(ops, o)
		c.ready = o.Return + rng.Int64N(int64(time.Millisecond))
		if o.Outcome == histories.Unknown {
			c.store, nextProcess = nextProcess, nextProcess+1
		}
	}
	histories.SortOps(ops)
	return histories.History{Meta: histories.Meta{Fencing: "full", TTL: time.Second}, Ops: ops}
}
