package model

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// RegisterInput is one operation on the protected store as it reached the store.
type RegisterInput struct {
	Key     string
	Kind    Kind // Read or Write
	Process int  // for descriptions only: the register's legality does not depend on who
	Fence   int64
	Value   int64 // write: the new value
	Base    int64 // write: the value the writer last read and means to overwrite
}

// PartitionKey implements Keyed.
func (in RegisterInput) PartitionKey() string { return in.Key }

// RegisterOutput is what the store answered.
type RegisterOutput struct {
	Outcome Outcome // ok = accepted, fail = rejected by the fence rule, unknown = either
	Value   int64   // read ok: the value read
}

// RegisterState is the store's state for one key. Both fields start at 0.
type RegisterState struct {
	Value    int64
	MaxFence int64 // largest fence the store has accepted (never tracked with fencing off)
}

// StepRegister is the locked register's transition: every state the store may be in after
// in returned out from s, or none when that result is impossible. Unknown outcomes fork
// into "not applied" and, when legal, "applied".
func StepRegister(mode Fencing, s RegisterState, in RegisterInput, out RegisterOutput) []RegisterState {
	next, _ := stepRegister(mode, s, in, out)
	return next
}

// WhyIllegal explains in a short phrase why out cannot be the result of in from s, or
// returns "" when it can. The phrase has no subject, e.g. "the store held 1, not the 0 the
// writer had read (lost update)".
func WhyIllegal(mode Fencing, s RegisterState, in RegisterInput, out RegisterOutput) string {
	_, why := stepRegister(mode, s, in, out)
	return why
}

// FenceRule is the store's fencing rule: whether it accepts in from s, and the largest
// fence it has seen after accepting.
func FenceRule(mode Fencing, s RegisterState, in RegisterInput) (bool, int64) {
	if mode == FencingOff || (mode == FencingWrites && in.Kind == Read) {
		return true, s.MaxFence
	}
	return in.Fence >= s.MaxFence, max(s.MaxFence, in.Fence)
}

func stepRegister(mode Fencing, s RegisterState, in RegisterInput, out RegisterOutput) ([]RegisterState, string) {
	if in.Kind != Read && in.Kind != Write {
		return nil, fmt.Sprintf("%q is not a store operation", in.Kind)
	}
	accepted, maxFence := FenceRule(mode, s, in)
	applied := RegisterState{Value: s.Value, MaxFence: maxFence}
	if in.Kind == Write {
		applied.Value = in.Value
	}
	// A write may only overwrite the value its writer read: anything else is a lost update.
	lostUpdate := in.Kind == Write && s.Value != in.Base
	switch out.Outcome {
	case OK:
		switch {
		case !accepted:
			return nil, fmt.Sprintf("the store accepted fence %d although it had already seen fence %d", in.Fence, s.MaxFence)
		case in.Kind == Read && out.Value != s.Value:
			return nil, fmt.Sprintf("it read %d but the store held %d", out.Value, s.Value)
		case lostUpdate:
			return nil, fmt.Sprintf("the store held %d, not the %d the writer had read (lost update)", s.Value, in.Base)
		}
		return []RegisterState{applied}, ""
	case Fail:
		if accepted {
			if mode == FencingOff || (mode == FencingWrites && in.Kind == Read) {
				return nil, fmt.Sprintf("the store rejected it although fencing mode %s never rejects a %s", mode, in.Kind)
			}
			return nil, fmt.Sprintf("the store rejected fence %d although the largest fence it had seen was %d", in.Fence, s.MaxFence)
		}
		return []RegisterState{s}, ""
	case Unknown:
		if accepted && !lostUpdate && applied != s {
			return []RegisterState{s, applied}, ""
		}
		return []RegisterState{s}, ""
	}
	return nil, fmt.Sprintf("unknown outcome %q", out.Outcome)
}

// RegisterNondeterministic is the locked register as a nondeterministic Porcupine model,
// partitioned by key.
func RegisterNondeterministic(mode Fencing) porcupine.NondeterministicModel {
	return registerFrom(mode, RegisterState{})
}

// RegisterModelFrom is RegisterModel starting in state start instead of the empty store:
// a window of a history checked on its own starts where the windows before it left the
// store.
func RegisterModelFrom(mode Fencing, start RegisterState) porcupine.Model {
	nm := registerFrom(mode, start)
	return nm.ToModel()
}

func registerFrom(mode Fencing, start RegisterState) porcupine.NondeterministicModel {
	return porcupine.NondeterministicModel{
		Partition: PartitionByKey,
		Init:      func() []any { return []any{start} },
		Step: func(state, input, output any) []any {
			next := StepRegister(mode, state.(RegisterState), input.(RegisterInput), output.(RegisterOutput))
			states := make([]any, len(next))
			for i, n := range next {
				states[i] = n
			}
			return states
		},
		Equal: func(a, b any) bool { return a.(RegisterState) == b.(RegisterState) },
		Hash: func(state any) uint64 {
			s := state.(RegisterState)
			return mix(uint64(s.Value)) ^ mix(uint64(s.MaxFence)<<1|1)
		},
		DescribeOperation: func(input, output any) string {
			return DescribeRegisterOp(input.(RegisterInput), output.(RegisterOutput))
		},
		DescribeState: func(state any) string { return mode.DescribeRegisterState(state.(RegisterState)) },
	}
}

// RegisterModel is RegisterNondeterministic made deterministic by Porcupine's power-set
// construction: a state is the set of states the store may be in.
func RegisterModel(mode Fencing) porcupine.Model {
	nm := RegisterNondeterministic(mode)
	return nm.ToModel()
}

// DescribeRegisterOp renders a store operation, e.g. "p2 write 1 over 0, fence 2 → fail".
func DescribeRegisterOp(in RegisterInput, out RegisterOutput) string {
	var s string
	if in.Kind == Write {
		s = fmt.Sprintf("p%d write %d over %d", in.Process, in.Value, in.Base)
	} else {
		s = fmt.Sprintf("p%d read", in.Process)
	}
	if in.Fence > 0 {
		s += fmt.Sprintf(", fence %d", in.Fence)
	}
	s += " → " + string(out.Outcome)
	if in.Kind == Read && out.Outcome == OK {
		s += fmt.Sprintf(" %d", out.Value)
	}
	return s
}

// DescribeRegisterState renders a state; the largest fence only when mode tracks it.
func (mode Fencing) DescribeRegisterState(s RegisterState) string {
	if mode == FencingOff {
		return fmt.Sprintf("value %d", s.Value)
	}
	return fmt.Sprintf("value %d, max fence %d", s.Value, s.MaxFence)
}

// Inert reports whether an operation of unknown outcome leaves every state of the store as
// it was, whether it took effect or not: a read unless reads are fenced (a fenced read
// raises the largest fence), a write of the value it overwrites without a fence under a
// rule that tracks one. Only such an operation lets a window of the store's history end
// after it: any other may still take effect at any later moment.
func Inert(mode Fencing, in RegisterInput) bool {
	switch in.Kind {
	case Read:
		return mode != FencingFull || in.Fence == 0
	case Write:
		return in.Value == in.Base && (mode == FencingOff || in.Fence == 0)
	}
	return false
}

// RegisterAfter is the one state the store is in after ops, from start, in every order
// that explains them, when every operation of unknown outcome among them is Inert: each
// accepted write overwrote the value before it (a lost update is illegal), so the writes
// answered ok chain from the start's value, and the chain ends at the one value written
// once more than overwritten (the start's when there is none); the largest fence is the
// largest one the rule tracked. ops (in call order) that no order explains get a state
// all the same, for the windows after an illegal one: when the writes do not chain, the
// value of the last operation answered ok, as the store most likely holds it.
func RegisterAfter(mode Fencing, start RegisterState, ops []RegisterInput, outs []RegisterOutput) RegisterState {
	net := map[int64]int{}
	s := start
	lastOK := -1
	for i, in := range ops {
		if outs[i].Outcome != OK {
			continue
		}
		lastOK = i
		if in.Kind == Write && in.Value != in.Base {
			net[in.Value]++
			net[in.Base]--
		}
		if mode == FencingFull || (mode == FencingWrites && in.Kind == Write) {
			s.MaxFence = max(s.MaxFence, in.Fence)
		}
	}
	var ends []int64
	chain := true
	for v, n := range net {
		switch {
		case n == 1:
			ends = append(ends, v)
		case n == -1 && v == start.Value:
		case n != 0:
			chain = false
		}
	}
	switch {
	case chain && len(ends) == 1 && net[start.Value] == -1:
		s.Value = ends[0]
	case chain && len(ends) == 0 && net[start.Value] == 0:
	case lastOK >= 0: // no chain: an illegal window
		s.Value = ops[lastOK].Value
		if ops[lastOK].Kind == Read {
			s.Value = outs[lastOK].Value
		}
	}
	return s
}
