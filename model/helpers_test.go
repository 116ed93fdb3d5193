package model

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
)

// inf is the return time of an operation with an unknown outcome.
const inf = math.MaxInt64

// lockOp builds a lock operation on key k by process p over [call, ret]. fence is the
// granted fence (acquire ok only).
func lockOp(p int, kind Kind, outcome Outcome, call, ret int64, fence int64) porcupine.Operation {
	return porcupine.Operation{
		ClientId: p,
		Input:    LockInput{Key: "k", Kind: kind, Process: p},
		Output:   LockOutput{Outcome: outcome, Fence: fence},
		Call:     call,
		Return:   ret,
	}
}

// withKey moves a lock or store operation to another key.
func withKey(op porcupine.Operation, key string) porcupine.Operation {
	switch in := op.Input.(type) {
	case LockInput:
		in.Key = key
		op.Input = in
	case RegisterInput:
		in.Key = key
		op.Input = in
	}
	return op
}

// readOp builds a read of key k that returned value (outcome ok) or nothing.
func readOp(p int, fence int64, outcome Outcome, value int64, call, ret int64) porcupine.Operation {
	return porcupine.Operation{
		ClientId: p,
		Input:    RegisterInput{Key: "k", Kind: Read, Process: p, Fence: fence},
		Output:   RegisterOutput{Outcome: outcome, Value: value},
		Call:     call,
		Return:   ret,
	}
}

// writeOp builds a write of value over base on key k.
func writeOp(p int, fence, value, base int64, outcome Outcome, call, ret int64) porcupine.Operation {
	return porcupine.Operation{
		ClientId: p,
		Input:    RegisterInput{Key: "k", Kind: Write, Process: p, Fence: fence, Value: value, Base: base},
		Output:   RegisterOutput{Outcome: outcome},
		Call:     call,
		Return:   ret,
	}
}

// check runs Porcupine without a timeout (these histories are tiny) and fails the test if
// the verdict differs from want.
func check(t *testing.T, m porcupine.Model, ops []porcupine.Operation, want bool) {
	t.Helper()
	if got := porcupine.CheckOperations(m, ops); got != want {
		t.Errorf("linearizable = %v, want %v", got, want)
	}
}

// exclusion and fences are the lock model as P1 and as P3 check it.
func exclusion() porcupine.Model { return LockModel(LockOptions{Exclusion: true}) }
func fences() porcupine.Model    { return LockModel(LockOptions{Fences: true}) }
