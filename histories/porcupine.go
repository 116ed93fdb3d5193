package histories

import (
	"fmt"
	"math"
	"slices"
	"strings"

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

// LockChecked selects the lock operations P1 is checked on (acquire, release, extend,
// crash). An acquire with an unknown outcome starts no belief and ends none, so the lock
// model accepts it anywhere: leaving it out changes no verdict, while each one kept
// doubles the orders Porcupine may have to try (a restart can leave dozens of them).
func LockChecked() Selection {
	return Selection{
		Keep:  func(op Op) bool { return op.Kind.IsLock() && !(op.Kind == Acquire && op.Outcome == Unknown) },
		InOut: lockInOut,
	}
}

// FenceChecked selects the acquires that returned ok with a fence, the only operations
// P3 is about: the other lock operations would be no-ops in the fence-only model.
func FenceChecked() Selection {
	return Selection{
		Keep:  func(op Op) bool { return op.Kind == Acquire && op.Outcome == OK && op.Output.Fence > 0 },
		InOut: lockInOut,
	}
}

// StoreChecked selects the reads and writes, for model.RegisterModel (P2).
func StoreChecked() Selection {
	return Selection{Keep: func(op Op) bool { return op.Kind.IsStore() }, InOut: storeInOut}
}

// Selection is which operations of a history one model is checked on, and their inputs
// and outputs for that model.
type Selection struct {
	Keep  func(Op) bool
	InOut func(Op) (in, out any)
}

// LockOperations converts the lock operations of h for model.LockModel (P1).
func LockOperations(h History) []porcupine.Operation { return LockChecked().Operations(h) }

// FenceOperations converts the acquires granted a fence, for model.LockModel with fences (P3).
func FenceOperations(h History) []porcupine.Operation { return FenceChecked().Operations(h) }

// StoreOperations converts the reads and writes of h for model.RegisterModel (P2).
func StoreOperations(h History) []porcupine.Operation { return StoreChecked().Operations(h) }

// Operations converts every operation of h that s selects, in the order of h.Ops, with
// dense lanes over the whole history (so that every conversion of h draws a process on
// the same lane).
func (s Selection) Operations(h History) []porcupine.Operation {
	var idx []int
	for i, op := range h.Ops {
		if s.Keep(op) {
			idx = append(idx, i)
		}
	}
	return s.Convert(h, idx, Lanes(h.Ops))
}

// Partition is the operations of one key that a selection keeps: indices into
// History.Ops, in order.
type Partition struct {
	Key string
	Ops []int
}

// Partitions groups the operations s selects by key, in sorted key order. Keys are
// independent locks and registers, so each partition can be checked on its own, and
// converted only when its turn comes: a history of a million operations is never held
// in Porcupine's form all at once.
func (s Selection) Partitions(h History) []Partition {
	byKey := make(map[string]int)
	var parts []Partition
	for i, op := range h.Ops {
		if !s.Keep(op) {
			continue
		}
		p, ok := byKey[op.Key]
		if !ok {
			p = len(parts)
			byKey[op.Key] = p
			parts = append(parts, Partition{Key: op.Key})
		}
		parts[p].Ops = append(parts[p].Ops, i)
	}
	slices.SortFunc(parts, func(a, b Partition) int { return strings.Compare(a.Key, b.Key) })
	return parts
}

// Convert turns the operations of h at idx into Porcupine operations, with Infinity as
// the return of unknown outcomes. lanes numbers the processes for Porcupine's ClientId
// (Lanes) and each operation gets its OpMeta, for a visualisation or an explanation;
// with lanes nil, for a search alone, ClientId is the process and there is no Metadata,
// which saves a third of the conversion's allocations.
func (s Selection) Convert(h History, idx []int, lanes map[int]int) []porcupine.Operation {
	out := make([]porcupine.Operation, len(idx))
	for j, i := range idx {
		op := h.Ops[i]
		in, res := s.InOut(op)
		ret := op.Return
		if op.Outcome == Unknown {
			ret = Infinity
		}
		out[j] = porcupine.Operation{ClientId: op.Process, Input: in, Output: res, Call: op.Call, Return: ret}
		if lanes != nil {
			out[j].ClientId = lanes[op.Process]
			out[j].Metadata = OpMeta{Index: i, Process: op.Process, Client: op.Client, Call: op.Call, Return: op.Return, Outcome: op.Outcome}
		}
	}
	return out
}

func storeInOut(op Op) (any, any) {
	return op.RegisterInput(), model.RegisterOutput{Outcome: model.Outcome(op.Outcome), Value: op.Output.Value}
}

// RegisterInput is op, a read or write, as the locked register's model takes it.
func (op Op) RegisterInput() model.RegisterInput {
	return model.RegisterInput{
		Key: op.Key, Kind: model.Kind(op.Kind), Process: op.Process,
		Fence: op.Input.Fence, Value: op.Input.Value, Base: op.Input.Base,
	}
}

// lockInOut builds the lock model's input and output. The process is the believer: the
// recorder keeps a client's lock process across unknown store operations (see Stream).
func lockInOut(op Op) (any, any) {
	in := model.LockInput{Key: op.Key, Kind: model.Kind(op.Kind), Process: op.Process}
	return in, model.LockOutput{Outcome: model.Outcome(op.Outcome), Fence: op.Output.Fence}
}
