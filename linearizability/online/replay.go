package online

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
)

// Replay checks a recorded history h as if it were being recorded: its operations are
// added in the order they returned, and after every `every` of them (1 if less) the
// checker is advanced as far as a live run could have been, to the earliest call of an
// operation not yet added, with the faults as they stood then. Its verdicts are those of
// linearizability.Check on h; what it adds is the windows' sizes and the moments each
// violation was found (Status, Options.Violation).
func Replay(h histories.History, every int, opts Options) (linearizability.Result, Status, error) {
	c, err := New(h.Meta, opts)
	if err != nil {
		return linearizability.Result{}, Status{}, err
	}
	byReturn := slices.Clone(h.Ops)
	slices.SortStableFunc(byReturn, func(a, b histories.Op) int { return cmp.Compare(a.Return, b.Return) })
	// laterCall[i] is the earliest call among byReturn[i:]: how far the run had come when
	// the first i operations had returned.
	laterCall := make([]int64, len(byReturn)+1)
	laterCall[len(byReturn)] = histories.Infinity
	for i := len(byReturn) - 1; i >= 0; i-- {
		laterCall[i] = min(laterCall[i+1], byReturn[i].Call)
	}
	every = max(every, 1)
	var addErr error
	for i, op := range byReturn {
		if err := c.Add(op); err != nil && addErr == nil {
			addErr = err
		}
		if (i+1)%every == 0 && i+1 < len(byReturn) {
			// The run's clock read op's return; nothing called before the next call is missing.
			upTo := min(laterCall[i+1], op.Return)
			c.Advance(upTo, faultsAt(h.Faults, upTo))
		}
	}
	res, err := c.Close(h.Faults)
	if err == nil {
		err = addErr
	}
	return res, c.Status(), err
}

// faultsAt is faults as a live run knew them at t: those begun by then, ended or still
// active (End -1).
func faultsAt(faults []histories.FaultWindow, t int64) []histories.FaultWindow {
	var out []histories.FaultWindow
	for _, w := range faults {
		if w.Start > t {
			continue
		}
		if w.End == -1 || w.End > t {
			w.End = -1
		}
		out = append(out, w)
	}
	return out
}

// Sorted checks a history whose operations come in call order (a history file as locklab
// writes it, or a long run's segments), one at a time through each, without holding it:
// before every `every`-th operation the checker is advanced to its call, since every
// operation called before it has been added. faults are the run's fault windows, all
// ended. An operation out of call order is an error.
func Sorted(meta histories.Meta, faults []histories.FaultWindow, every int, opts Options, each func(yield func(histories.Op) error) error) (linearizability.Result, Status, error) {
	c, err := New(meta, opts)
	if err != nil {
		return linearizability.Result{}, Status{}, err
	}
	every = max(every, 1)
	var n int
	var last int64
	feedErr := each(func(op histories.Op) error {
		if n > 0 && op.Call < last {
			return fmt.Errorf("operation %d called at %d ns, before the one above it (%d ns): not in call order", n+1, op.Call, last)
		}
		if n > 0 && n%every == 0 {
			c.Advance(op.Call, faultsAt(faults, op.Call))
		}
		last = op.Call
		n++
		return c.Add(op)
	})
	res, err := c.Close(faults)
	return res, c.Status(), errors.Join(feedErr, err)
}
