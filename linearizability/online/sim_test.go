package online_test

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"pgregory.net/rapid"

	"github.com/locklab/locklab/histories"
)

// simulate draws a small run: clients doing acquire, read, write, (extend), release on
// one or two keys against a simulated lock service and store, each operation taking
// effect at its call. Bugs and faults are drawn too, so that every property is sometimes
// broken: holders paused past their lease, a release that frees whatever holds the lock,
// fence counters that restart, a store that ignores fences, outcomes unknown (the effect
// drawn), crashes, leases that never expire, and fault windows that may hold commands back.
func simulate(t *rapid.T) histories.History {
	const ms = int64(time.Millisecond)
	ttl := 40 * ms
	fencing := rapid.SampledFrom([]string{"off", "writes", "full"}).Draw(t, "fencing")
	keys := rapid.IntRange(1, 2).Draw(t, "keys")
	clients := rapid.IntRange(1, 4).Draw(t, "clients")
	nOps := rapid.IntRange(20, 90).Draw(t, "ops")
	pPause := rapid.Float64Range(0, 0.3).Draw(t, "pause")
	pUnknown := rapid.Float64Range(0, 0.15).Draw(t, "unknown")
	pCrash := rapid.Float64Range(0, 0.1).Draw(t, "crash")
	loose := rapid.Bool().Draw(t, "loose-release")
	amnesia := rapid.Bool().Draw(t, "amnesia")
	unfencedStore := rapid.Bool().Draw(t, "store-ignores-fences")
	extends := rapid.Bool().Draw(t, "extends")
	noExpiry := rapid.IntRange(0, 4).Draw(t, "no-expiry") == 0
	// Each operation's draws come from a generator seeded by rapid: rapid's own draws lean
	// to the small and extreme values, which would make most operations' outcomes unknown.
	r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))

	type lock struct {
		holder  string
		expires int64
		fence   int64
	}
	type store struct{ value, maxFence int64 }
	locks, stores := map[string]*lock{}, map[string]*store{}
	for k := range keys {
		locks[fmt.Sprintf("k%d", k)], stores[fmt.Sprintf("k%d", k)] = &lock{}, &store{}
	}
	nextProc := 0
	proc := func() int { nextProc++; return nextProc - 1 }
	q := &queue{}
	for i := range clients {
		heap.Push(q, &simClient{id: i, at: int64(rapid.IntRange(0, 5).Draw(t, "start")) * ms, key: fmt.Sprintf("k%d", i%keys), lockP: proc(), storeP: proc()})
	}
	var h histories.History
	h.Meta = histories.Meta{Fencing: fencing, TTL: time.Duration(ttl), Impl: "simulated"}
	tokens := 0
	accepts := func(s *store, kind histories.Kind, fence int64) bool {
		if unfencedStore || fencing == "off" || (fencing == "writes" && kind == histories.Read) {
			return true
		}
		return fence >= s.maxFence
	}
	for len(h.Ops) < nOps && q.Len() > 0 {
		c := heap.Pop(q).(*simClient)
		l, s := locks[c.key], stores[c.key]
		call := c.at
		ret := call + int64(1+r.IntN(6))*ms
		outcome := histories.OK
		applies := true
		if r.Float64() < pUnknown {
			outcome, applies = histories.Unknown, r.IntN(2) == 0
		}
		op := histories.Op{Client: c.id, Key: c.key, Call: call, Return: ret}
		next := ret + int64(r.IntN(9))*ms
		switch c.step {
		case 0: // acquire
			op.Kind, op.Process, op.Input.TTL = histories.Acquire, c.lockP, time.Duration(ttl)
			free := l.holder == "" || l.expires <= call
			if free && applies {
				tokens++
				if amnesia && r.Float64() < 0.2 {
					l.fence = 0
				}
				l.holder, l.expires, l.fence = fmt.Sprint(tokens), call+ttl, l.fence+1
				if noExpiry {
					l.expires = histories.Infinity
				}
			}
			switch {
			case outcome == histories.Unknown:
				c.lockP = proc()
			case free:
				op.Output.Token, op.Output.Fence = l.holder, l.fence
				c.token, c.fence, c.step = l.holder, l.fence, 1
				if r.Float64() < pPause {
					next += int64(1+r.IntN(3)) * ttl
				}
			default:
				outcome = histories.Fail
			}
		case 1, 2: // read, write
			op.Kind, op.Process, op.Input.Fence = histories.Read, c.storeP, c.fence
			if c.step == 2 {
				op.Kind, op.Input.Value, op.Input.Base = histories.Write, c.read+1, c.read
			}
			ok := accepts(s, op.Kind, c.fence)
			if ok && applies {
				if fencing == "full" || (fencing == "writes" && op.Kind == histories.Write) {
					s.maxFence = max(s.maxFence, c.fence)
				}
				if op.Kind == histories.Write {
					s.value = op.Input.Value
				}
			}
			switch {
			case outcome == histories.Unknown:
				c.storeP = proc()
				c.step = 4 // give up the critical section
			case !ok:
				outcome, c.step = histories.Fail, 4
			case op.Kind == histories.Read:
				op.Output.Value, c.read, c.step = s.value, s.value, 2
			default:
				c.step = 4
				if extends {
					c.step = 3
				}
			}
		case 3: // extend
			op.Kind, op.Process, op.Input.Token, op.Input.TTL = histories.Extend, c.lockP, c.token, time.Duration(ttl)
			mine := l.holder == c.token && l.expires > call
			if mine && applies {
				l.expires = call + ttl
			}
			c.step = 4
			if outcome != histories.Unknown && !mine {
				outcome, c.step = histories.Fail, 0
			}
		case 4: // release
			op.Kind, op.Process, op.Input.Token = histories.Release, c.lockP, c.token
			mine := l.holder == c.token && l.expires > call
			if (mine || loose) && applies {
				l.holder = ""
			}
			switch {
			case outcome == histories.Unknown:
				c.lockP = proc()
			case !mine && !loose:
				outcome = histories.Fail
			}
			c.step = 0
		}
		op.Outcome = outcome
		h.Ops = append(h.Ops, op)
		if r.Float64() < pCrash {
			h.Ops = append(h.Ops, histories.Op{Process: c.lockP, Client: c.id, Key: c.key, Kind: histories.Crash, Outcome: histories.OK, Call: ret, Return: ret})
			c.lockP, c.storeP, c.step = proc(), proc(), 0
		}
		c.at = next
		heap.Push(q, c)
	}
	for range rapid.IntRange(0, 3).Draw(t, "faults") {
		start := int64(rapid.IntRange(0, 200).Draw(t, "fault-start")) * ms
		h.Faults = append(h.Faults, histories.FaultWindow{
			Kind:   rapid.SampledFrom([]string{"server-pause", "net-blackhole", "client-pause"}).Draw(t, "fault-kind"),
			Target: rapid.SampledFrom([]string{"lock-0", "client:0->lock-0", "client:1->lock-0", "client:0"}).Draw(t, "fault-target"),
			Start:  start, End: start + int64(rapid.IntRange(1, 80).Draw(t, "fault-len"))*ms,
		})
	}
	histories.SortOps(h.Ops)
	return h
}

// simClient is one simulated client: its next operation and what it holds.
type simClient struct {
	id            int
	at            int64 // when its next operation is called
	step          int   // 0 acquire, 1 read, 2 write, 3 extend, 4 release
	key, token    string
	fence, read   int64
	lockP, storeP int
}

// queue orders simulated clients by the time of their next operation.
type queue []*simClient

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q queue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)        { *q = append(*q, x.(*simClient)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
