package online

import (
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/model"
)

// Where a key's window may end (see linearizability's window.go for why each rule makes a
// window checkable on its own from the state the key's earlier windows left): at an
// instant no operation spans, nobody believing, no store operation of unknown outcome
// that may still take effect before it, and no acquire or extend of unknown outcome whose
// command a fault still active may be holding back.

// Hold is what the rest of a key's operations wait for before a window can end after the
// last of them, when Cut could not end one there.
type Hold int

// The holds, from the first that applies: the history's end (a store operation of
// unknown outcome that may still take effect), a fault's end (one that may hold back a
// command of unknown outcome), more operations (someone believes), or the run's progress
// past the latest return (Cut's After).
const (
	HoldNone Hold = iota
	HoldEnd
	HoldFault
	HoldOps
	HoldAfter
)

// Cutter finds how many of a key's operations (in call order) make a window that ends
// before the run's progress and can be checked on its own: the largest such prefix. A
// key's operations keep coming, so it scans each once, keeping what it learnt of those it
// has seen: trying a key again costs its new operations only. Its zero value is ready;
// one Cutter serves one key.
type Cutter struct {
	believing    map[int]bool
	end          int64
	storeBlocked bool
	faultBlocked bool
	best, seen   int
}

// Cut returns how many of ops make a window that ends before upTo (0 if none); every
// operation called before upTo must be among them, and faults are the run's fault
// windows so far (End -1: still active). When the window cannot take every operation,
// hold says what the rest waits for; with HoldAfter, after is the moment past which the
// run must have come (the latest return). ops must be the operations it was given last
// with new ones after them, less the window it returned last (cut off the front). After
// a fault ended, Reset it: a command held back by the fault may no longer hold the window
// open.
func (c *Cutter) Cut(ops []histories.Op, faults []histories.FaultWindow, mode model.Fencing, upTo int64) (n int, hold Hold, after int64) {
	if c.believing == nil {
		c.believing, c.end = map[int]bool{}, -1
	}
	for i := c.seen; i < len(ops); i++ {
		op := ops[i]
		if i > 0 && !c.storeBlocked && !c.faultBlocked && len(c.believing) == 0 && c.end < op.Call {
			c.best = i
		}
		c.end = max(c.end, op.Return)
		switch {
		case op.Kind.IsStore():
			if op.Outcome == histories.Unknown && !model.Inert(mode, op.RegisterInput()) {
				c.storeBlocked = true
			}
		case op.Kind == histories.Acquire && op.Outcome == histories.OK:
			c.believing[op.Process] = true
		case (op.Kind == histories.Acquire || op.Kind == histories.Extend) && op.Outcome == histories.Unknown:
			if heldBackActive(faults, op) {
				c.faultBlocked = true
			}
		case op.Kind == histories.Extend && op.Outcome == histories.OK:
		case op.Kind == histories.Release, op.Kind == histories.Extend, op.Kind == histories.Crash:
			delete(c.believing, op.Process)
		case op.Kind.IsJob():
			c.storeBlocked = true
		}
	}
	c.seen = len(ops)
	n = c.best
	switch {
	case len(ops) == 0:
		hold = HoldNone
	case c.storeBlocked:
		hold = HoldEnd
	case c.faultBlocked:
		hold = HoldFault
	case len(c.believing) > 0:
		hold = HoldOps
	case c.end >= upTo:
		hold, after = HoldAfter, c.end
	default:
		n = len(ops)
	}
	// What was learnt holds for the operations left: nobody believed at the cut, nothing
	// blocked it, and every return before it is before their calls.
	c.seen -= n
	c.best = 0
	if n == len(ops) {
		c.end = -1
	}
	return n, hold, after
}

// Reset forgets what the Cutter learnt: the next Cut scans every operation again.
func (c *Cutter) Reset() { *c = Cutter{} }

// heldBackActive reports whether a fault that may hold back op's command is still active.
func heldBackActive(faults []histories.FaultWindow, op histories.Op) bool {
	for _, w := range faults {
		if w.End == -1 && w.Start <= op.Return && linearizability.HoldsCommands(w, op.Client) {
			return true
		}
	}
	return false
}
