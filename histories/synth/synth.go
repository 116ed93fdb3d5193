// Package synth makes synthetic histories for measuring the checkers: legal ones at any
// scale (many keys, many clients, unknown outcomes) and adversarial ones that make
// Porcupine's search blow up. Real runs are the evidence about locks; these histories are
// only about the checker's cost, so they are generated, not recorded.
package synth

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/locklab/locklab/histories"
)

// Legal describes a legal history: clients doing lock-protected read-modify-writes
// (acquire, read, write, release; a refused acquire is retried), as a real run records
// them. Client i works on key i mod Keys, so each key has Clients/Keys clients.
type Legal struct {
	Seed    uint64
	Clients int     // concurrent clients in all
	Keys    int     // lock keys (each has its store key of the same name)
	Ops     int     // operations to record (the last critical sections may be cut short)
	Unknown float64 // probability that a write's outcome is unknown (it does take effect)
	Fencing string  // off, writes or full: the store's rule, written into Meta
}

// Check reports what is wrong with l, naming the field.
func (l Legal) Check() error {
	switch {
	case l.Clients < 1:
		return fmt.Errorf("clients %d: want at least 1", l.Clients)
	case l.Keys < 1:
		return fmt.Errorf("keys %d: want at least 1", l.Keys)
	case l.Ops < 0:
		return fmt.Errorf("ops %d: want 0 or more", l.Ops)
	case l.Unknown < 0 || l.Unknown > 1:
		return fmt.Errorf("unknown %g: want a probability in [0, 1]", l.Unknown)
	}
	switch l.Fencing {
	case "off", "writes", "full":
		return nil
	}
	return fmt.Errorf("fencing %q: want off, writes or full", l.Fencing)
}

// ttl is the lease every synthetic acquire asks for: far longer than any critical
// section here, so that no lease expires and the history is legal under every property.
const ttl = 10 * time.Second

// History generates the history l describes. Every operation takes effect at one
// instant inside its [call, return], in one global order, so the history is legal by
// construction, while operations of different clients overlap as in a real run. After a
// write with an unknown outcome the client's store operations go on as a new process,
// as the recorder does; its lock process (the believer) stays. Durations are about a
// millisecond.
func (l Legal) History() (histories.History, error) {
	if err := l.Check(); err != nil {
		return histories.History{}, fmt.Errorf("synthetic history: %w", err)
	}
	rng := rand.New(rand.NewPCG(l.Seed, l.Seed^0x9e3779b97f4a7c15))
	type lock struct {
		holder int // client, -1 when free
		fence  int64
		value  int64
	}
	keys := make([]string, l.Keys)
	locks := make([]lock, l.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
		locks[i].holder = -1
	}
	const ms = int64(time.Millisecond)
	cs := make(clients, l.Clients)
	for i := range cs {
		cs[i] = &client{id: i, key: i % l.Keys, process: i, store: l.Clients + i, ready: rng.Int64N(ms)}
	}
	heap.Init(&cs)
	nextProcess := 2 * l.Clients
	var last int64
	ops := make([]histories.Op, 0, l.Ops)
	for len(ops) < l.Ops {
		c := cs[0]
		call := c.ready
		at := max(call+rng.Int64N(ms), last+1) // the instant it takes effect
		last = at
		o := histories.Op{Process: c.process, Client: c.id, Call: call, Return: at + rng.Int64N(ms), Outcome: histories.OK}
		switch c.phase {
		case 0:
			k := &locks[c.key]
			o.Kind, o.Key, o.Input.TTL = histories.Acquire, keys[c.key], ttl
			if k.holder >= 0 {
				o.Outcome, o.Output.Error = histories.Fail, "lock not acquired: held by another client"
				break
			}
			k.holder, k.fence = c.id, k.fence+1
			c.fence, c.token = k.fence, fmt.Sprintf("t%d-%d", c.id, k.fence)
			o.Output.Fence, o.Output.Token, o.Output.Validity = c.fence, c.token, ttl
			c.phase = 1
		case 1:
			k := &locks[c.key]
			o.Kind, o.Key, o.Input.Fence, o.Process = histories.Read, keys[c.key], c.fence, c.store
			c.read, o.Output.Value, c.phase = k.value, k.value, 2
		case 2:
			k := &locks[c.key]
			o.Kind, o.Key, o.Input.Fence, o.Process = histories.Write, keys[c.key], c.fence, c.store
			o.Input.Value, o.Input.Base = c.read+1, c.read
			k.value, c.phase = c.read+1, 3
			if rng.Float64() < l.Unknown {
				o.Outcome, o.Output.Error = histories.Unknown, "i/o timeout"
			}
		case 3:
			o.Kind, o.Key, o.Input.Token = histories.Release, keys[c.key], c.token
			locks[c.key].holder, c.phase = -1, 0
		}
		ops = append(ops, o)
		c.ready = o.Return + rng.Int64N(ms)
		if o.Outcome == histories.Fail {
			c.ready += rng.Int64N(4 * ms) // back off before trying again
		}
		if o.Outcome == histories.Unknown {
			c.store, nextProcess = nextProcess, nextProcess+1
		}
		heap.Fix(&cs, 0)
	}
	histories.SortOps(ops)
	meta := histories.Meta{Fencing: l.Fencing, TTL: ttl, Impl: "synthetic", Seed: int64(l.Seed)}
	return histories.History{Meta: meta, Ops: ops}, nil
}

type client struct {
	id, process, store int // lock and store process ids, as histories.Stream keeps them
	phase              int // 0 acquire, 1 read, 2 write, 3 release
	key                int
	fence, read        int64
	token              string
	ready              int64
}

// clients is a min-heap of clients by the time they are ready for their next operation.
type clients []*client

func (h clients) Len() int           { return len(h) }
func (h clients) Less(i, j int) bool { return h[i].ready < h[j].ready }
func (h clients) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *clients) Push(x any)        { *h = append(*h, x.(*client)) }
func (h *clients) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Adversarial describes a history made to blow Porcupine's search up, the shape a
// partition leaves behind: Concurrent writes to one store key whose outcomes are unknown
// (each may take effect at any moment after its call, so their intervals all overlap
// and never end), then a read of a value none of them wrote. No order explains the read,
// and proving that means trying every subset of the writes: the search doubles with
// each write. Keys more keys beside it carry a small legal history each, so that a
// report must say which key it could not decide.
type Adversarial struct {
	Concurrent int
	Keys       int    // keys in all, at least 1; the adversarial one is "k0"
	Fencing    string // off, writes or full
}

// History generates the history a describes. Decided, it is illegal: a checker may say
// illegal or, out of time, unknown, never ok.
func (a Adversarial) History() (histories.History, error) {
	if a.Concurrent < 1 || a.Keys < 1 {
		return histories.History{}, fmt.Errorf("adversarial history: concurrent %d and keys %d: want at least 1 each", a.Concurrent, a.Keys)
	}
	others := a.Keys - 1
	rest, err := Legal{Seed: uint64(a.Concurrent), Clients: max(2*others, 1), Keys: max(others, 1), Ops: 40 * others, Fencing: a.Fencing}.History()
	if err != nil {
		return histories.History{}, fmt.Errorf("adversarial history: %w", err)
	}
	ops := rest.Ops
	for i := range ops {
		ops[i].Key = fmt.Sprintf("k%d", keyNumber(ops[i].Key)+1) // k0 is the adversarial key
		ops[i].Process += a.Concurrent + 1
	}
	const us = int64(time.Microsecond)
	for i := range a.Concurrent {
		ops = append(ops, histories.Op{
			Process: i, Client: i, Key: "k0", Kind: histories.Write,
			Input:  histories.Input{Value: int64(i + 1)},
			Output: histories.Output{Error: "i/o timeout"}, Outcome: histories.Unknown,
			Call: int64(i) * us, Return: int64(i)*us + int64(time.Second),
		})
	}
	read := int64(a.Concurrent+10) * us
	ops = append(ops, histories.Op{
		Process: a.Concurrent, Client: a.Concurrent, Key: "k0", Kind: histories.Read,
		Output: histories.Output{Value: -1}, Outcome: histories.OK, Call: read, Return: read + us,
	})
	histories.SortOps(ops)
	rest.Meta.Impl = "synthetic-adversarial"
	return histories.History{Meta: rest.Meta, Ops: ops}, nil
}

// keyNumber is N of a key "kN" that Legal made.
func keyNumber(key string) int {
	var n int
	fmt.Sscanf(key, "k%d", &n)
	return n
}
