package model

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func TestExclusion(t *testing.T) {
	const a, b = 1, 2
	tests := []struct {
		name  string
		ops   []porcupine.Operation
		legal bool
	}{
		{"sequential handover", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Release, OK, 20, 30, 0),
			lockOp(b, Acquire, OK, 40, 50, 0),
			lockOp(b, Release, OK, 60, 70, 0),
		}, true},
		{"release call overlaps the next acquire", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Release, OK, 20, 40, 0),
			lockOp(b, Acquire, OK, 30, 50, 0), // called before a's release returned
		}, true},
		{"acquire returns at the instant the release is called", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Release, OK, 20, 30, 0),
			lockOp(b, Acquire, OK, 5, 20, 0), // intervals are closed: 20 touches 20
		}, true},
		{"refused while held", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(b, Acquire, Fail, 12, 14, 0),
			lockOp(a, Release, OK, 20, 30, 0),
		}, true},
		{"unknown acquire starts no belief", []porcupine.Operation{
			lockOp(a, Acquire, Unknown, 0, inf, 0),
			lockOp(b, Acquire, OK, 20, 30, 0),
			lockOp(b, Release, OK, 40, 50, 0),
		}, true},
		{"release fail ends the belief", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Release, Fail, 100, 110, 0),
			lockOp(b, Acquire, OK, 120, 130, 0),
		}, true},
		{"release fail may be linearized before the next acquire it overlaps", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Release, Fail, 100, 140, 0),
			lockOp(b, Acquire, OK, 120, 130, 0),
		}, true},
		{"release unknown ends the belief", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Release, Unknown, 20, inf, 0),
			lockOp(b, Acquire, OK, 30, 40, 0),
		}, true},
		{"extend ok keeps, extend fail ends the belief", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Extend, OK, 20, 30, 0),
			lockOp(a, Extend, Fail, 40, 50, 0),
			lockOp(b, Acquire, OK, 60, 70, 0),
		}, true},
		{"extend unknown keeps the belief until the release", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Extend, Unknown, 40, inf, 0),
			lockOp(a, Release, OK, 50, 55, 0),
			lockOp(b, Acquire, OK, 60, 70, 0),
		}, true},
		{"extend unknown, then the release finds the lease gone", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Extend, Unknown, 40, inf, 0),
			lockOp(a, Release, Fail, 50, 55, 0),
			lockOp(b, Acquire, OK, 60, 70, 0),
		}, true},
		{"another acquires while the extend is unknown and its caller still believes", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Extend, Unknown, 40, inf, 0),
			lockOp(b, Acquire, OK, 45, 48, 0),
			lockOp(a, Release, Fail, 50, 55, 0),
		}, false},
		{"crash ends the belief", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Crash, OK, 20, 20, 0),
			lockOp(b, Acquire, OK, 30, 40, 0),
		}, true},
		{"crash of a non-holder changes nothing", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(b, Crash, OK, 20, 20, 0),
			lockOp(a, Release, OK, 30, 40, 0),
		}, true},
		{"different keys are independent", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			withKey(lockOp(b, Acquire, OK, 0, 10, 0), "other"),
		}, true},
		{"fences are not P1's business", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 5),
			lockOp(a, Release, OK, 20, 30, 0),
			lockOp(b, Acquire, OK, 40, 50, 3),
		}, true},

		{"two beliefs at once", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(b, Acquire, OK, 20, 30, 0),
			lockOp(a, Release, OK, 40, 50, 0),
		}, false},
		{"holder paused past its lease, release comes late", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(b, Acquire, OK, 100, 110, 0),
			lockOp(b, Release, OK, 120, 130, 0),
			lockOp(a, Release, Fail, 200, 210, 0),
		}, false},
		{"re-acquire without release", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Acquire, OK, 20, 30, 0),
		}, false},
		{"release ok by a process that never acquired", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(b, Release, OK, 20, 30, 0),
		}, false},
		{"release ok twice", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Release, OK, 20, 30, 0),
			lockOp(a, Release, OK, 40, 50, 0),
		}, false},
		{"extend ok after the belief ended", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(a, Extend, Fail, 20, 30, 0),
			lockOp(a, Extend, OK, 40, 50, 0),
		}, false},
		{"an unknown acquire does not excuse a second holder", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 0),
			lockOp(3, Acquire, Unknown, 15, inf, 0),
			lockOp(b, Acquire, OK, 20, 30, 0),
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, exclusion(), tt.ops, tt.legal) })
	}
}

func TestFences(t *testing.T) {
	const a, b, c = 1, 2, 3
	tests := []struct {
		name  string
		ops   []porcupine.Operation
		legal bool
	}{
		{"increasing in real time", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 1),
			lockOp(b, Acquire, OK, 20, 30, 2),
			lockOp(c, Acquire, OK, 40, 50, 7),
		}, true},
		{"concurrent acquires can be ordered by fence", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 30, 3),
			lockOp(b, Acquire, OK, 5, 20, 2), // returned first, but overlaps a
		}, true},
		{"exclusion is not P3's business", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 1),
			lockOp(b, Acquire, OK, 20, 30, 2), // a still holds
		}, true},
		{"acquires without fences are ignored", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 4),
			lockOp(b, Acquire, OK, 20, 30, 0),
			lockOp(c, Acquire, Fail, 40, 50, 0),
			lockOp(c, Acquire, OK, 60, 70, 5),
		}, true},
		{"fences of different keys are independent", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 9),
			withKey(lockOp(b, Acquire, OK, 20, 30, 1), "other"),
		}, true},

		{"decreasing in real time", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 2),
			lockOp(b, Acquire, OK, 20, 30, 1),
		}, false},
		{"duplicate, sequential", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 2),
			lockOp(b, Acquire, OK, 20, 30, 2),
		}, false},
		{"duplicate, concurrent", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 30, 2),
			lockOp(b, Acquire, OK, 5, 20, 2),
		}, false},
		{"smaller fence after a larger one, with a concurrent one in between", []porcupine.Operation{
			lockOp(a, Acquire, OK, 0, 10, 5),
			lockOp(b, Acquire, OK, 5, 40, 6),
			lockOp(c, Acquire, OK, 20, 30, 4),
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, fences(), tt.ops, tt.legal) })
	}
}

func TestStepLockRejectsStoreOps(t *testing.T) {
	if _, ok := StepLock(LockOptions{Exclusion: true}, InitialLock(), LockInput{Key: "k", Kind: Read}, LockOutput{Outcome: OK}); ok {
		t.Error("a read is not a lock operation")
	}
}

func TestDescribeLock(t *testing.T) {
	m := LockModel(LockOptions{Exclusion: true, Fences: true})
	if got, want := m.DescribeOperation(LockInput{Key: "k", Kind: Acquire, Process: 3}, LockOutput{Outcome: OK, Fence: 5}), "p3 acquire → ok, fence 5"; got != want {
		t.Errorf("DescribeOperation = %q, want %q", got, want)
	}
	if got, want := m.DescribeState(LockState{Holder: 3, LastFence: 5}), "held by p3, last fence 5"; got != want {
		t.Errorf("DescribeState = %q, want %q", got, want)
	}
	if got, want := m.DescribeState(InitialLock()), "free, last fence 0"; got != want {
		t.Errorf("DescribeState = %q, want %q", got, want)
	}
}
