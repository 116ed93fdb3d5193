package histories

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/model"
)

// Infinity is the return time an operation with an unknown outcome gets when checked: it
// may take effect at any moment after its call, so Porcupine may linearize it anywhere.
const Infinity int64 = math.MaxInt64

// OpMeta is the Metadata of every converted operation: where it came from in the history.
type OpMeta struct {
	Index   int     // position in History.Ops
	Process int     // the recorded process id (the operation's ClientId is a dense lane number)
	Client  int     // the client that ran the process
	Call    int64   // ns since the base
	Return  int64   // ns since the base, as recorded: finite even when the outcome is unknown
	Outcome Outcome // as recorded
}

// String is what the visualisation shows for the operation's metadata.
func (m OpMeta) String() string {
	s := fmt.Sprintf("op %d: process %d (client %d), called at %s", m.Index, m.Process, m.Client, seconds(m.Call))
	if m.Outcome == Unknown {
		return s + fmt.Sprintf(", gave up at %s with outcome unknown", seconds(m.Return))
	}
	return s + fmt.Sprintf(", returned at %s", seconds(m.Return))
}

// seconds renders ns since the base as seconds with millisecond precision.
func seconds(ns int64) string { return fmt.Sprintf("%.3f s", float64(ns)/1e9) }

// Lanes numbers the processes of ops densely, 0..n-1 in order of first appearance, for
// Porcupine's ClientId: the visualiser draws one lane per id up to the largest.
func Lanes(ops []Op) map[int]int {
	lanes := make(map[int]int)
	for _, op := range ops {
		if _, ok := lanes[op.Process]; !ok {
			lanes[op.Process] = len(lanes)
		}
	}
	return lanes
}

// LockOperations converts the lock operations (acquire, release, extend, crash) of h for
// model.LockModel: P1 (and P3, which only looks at acquires).
func LockOperations(h History) []porcupine.Operation {
	// An acquire with an unknown outcome starts no belief and ends none, so the lock model
	// accepts it anywhere: leaving it out changes no verdict, while each one kept doubles
	// the orders Porcupine may have to try (a restart can leave dozens of them).
	keep := func(op Op) bool { return op.Kind.IsLock() && !(op.Kind == Acquire && op.Outcome == Unknown) }
	return convert(h, keep, lockInOut)
}

// FenceOperations converts the acquires that returned ok with a fence, the only operations
// P3 is about: the other lock operations would be no-ops in the fence-only model.
func FenceOperations(h History) []porcupine.Operation {
	granted := func(op Op) bool { return op.Kind == Acquire && op.Outcome == OK && op.Output.Fence > 0 }
	return convert(h, granted, lockInOut)
}

// StoreOperations converts the reads and writes of h for model.RegisterModel (P2).
func StoreOperations(h History) []porcupine.Operation {
	return convert(h, func(op Op) bool { return op.Kind.IsStore() }, func(op Op) (any, any) {
		in := model.RegisterInput{
			Key: op.Key, Kind: model.Kind(op.Kind), Process: op.Process,
			Fence: op.Input.Fence, Value: op.Input.Value, Base: op.Input.Base,
		}
		return in, model.RegisterOutput{Outcome: model.Outcome(op.Outcome), Value: op.Output.Value}
	})
}

// lockInOut builds the lock model's input and output. The process is the believer: the
// recorder keeps a client's lock process across unknown store operations (see Stream).
func lockInOut(op Op) (any, any) {
	in := model.LockInput{Key: op.Key, Kind: model.Kind(op.Kind), Process: op.Process}
	return in, model.LockOutput{Outcome: model.Outcome(op.Outcome), Fence: op.Output.Fence}
}

// convert turns the operations of h that keep selects into Porcupine operations, in the
// order of h.Ops, with dense lanes over the whole history (so that every conversion of h
// draws a process on the same lane) and Infinity as the return of unknown outcomes.
func convert(h History, keep func(Op) bool, inOut func(Op) (any, any)) []porcupine.Operation {
	lanes := Lanes(h.Ops)
	var out []porcupine.Operation
	for i, op := range h.Ops {
		if !keep(op) {
			continue
		}
		in, res := inOut(op)
		ret := op.Return
		if op.Outcome == Unknown {
			ret = Infinity
		}
		out = append(out, porcupine.Operation{
			ClientId: lanes[op.Process],
			Input:    in,
			Output:   res,
			Call:     op.Call,
			Return:   ret,
			Metadata: OpMeta{Index: i, Process: op.Process, Client: op.Client, Call: op.Call, Return: op.Return, Outcome: op.Outcome},
		})
	}
	return out
}
