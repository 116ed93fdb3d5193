package online

import (
	"cmp"
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
