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
	// Reading (parsing, for a file) goes on in a goroutine of its own, a batch at a time,
	// while this one adds and cuts.
	// A batch, once added, goes back to the reader through free (its operations were
	// copied to their keys): the whole file is read through six batches.
	batches := make(chan []histories.Op, 4)
	free := make(chan []histories.Op, 6)
	for range cap(free) {
		free <- make([]histories.Op, 0, 1024)
	}
	stop := make(chan struct{})
	read := make(chan error, 1)
	go func() {
		defer close(batches)
		batch := <-free
		err := each(func(op histories.Op) error {
			if batch = append(batch, op); len(batch) == cap(batch) {
				select {
				case batches <- batch:
				case <-stop:
					return errStopped
				}
				select {
				case batch = <-free:
				case <-stop:
					return errStopped
				}
			}
			return nil
		})
		if len(batch) > 0 && err == nil {
			batches <- batch
		}
		read <- err
	}()
	var n int
	var last int64
	var feedErr error
	for batch := range batches {
		for i := range batch {
			op := &batch[i]
			if feedErr != nil {
				break
			}
			switch {
			case n > 0 && op.Call < last:
				feedErr = fmt.Errorf("operation %d called at %d ns, before the one above it (%d ns): not in call order", n+1, op.Call, last)
			case n > 0 && n%every == 0:
				c.Advance(op.Call, faultsAt(faults, op.Call))
			}
			if feedErr == nil {
				last = op.Call
				n++
				if feedErr = op.Validate(); feedErr != nil {
					feedErr = fmt.Errorf("operation %d: %w", n, feedErr)
				} else {
					feedErr = c.add(op)
				}
			}
		}
		if feedErr != nil {
			close(stop)
			for range batches { // let the reader end
			}
			break
		}
		free <- batch[:0]
	}
	readErr := <-read
	if errors.Is(readErr, errStopped) {
		readErr = nil
	}
	res, err := c.Close(faults)
	return res, c.Status(), errors.Join(readErr, feedErr, err)
}

var errStopped = errors.New("stopped")
