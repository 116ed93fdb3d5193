package model

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// The schedules below are the ones from Kleppmann's "How to do distributed locking", told
// as histories: the lock service's operations (P1) and the store's operations (P2) are
// checked separately, as the checkers do. Times are in milliseconds.

const clientA, clientB = 1, 2

// pauseLockOps: A acquires with fence 1 and pauses; its lease expires; B acquires with
// fence 2 and releases; A wakes up and its release fails.
func pauseLockOps() []porcupine.Operation {
	return []porcupine.Operation{
		lockOp(clientA, Acquire, OK, 0, 10, 1),
		lockOp(clientB, Acquire, OK, 100, 110, 2),
		lockOp(clientB, Release, OK, 160, 170, 0),
		lockOp(clientA, Release, Fail, 220, 230, 0),
	}
}

// pauseStoreOps: A reads 0 before its pause; B reads 0 and writes 1; A wakes and writes 1
// over the 0 it read, with fence 1, and the store answers aWrite.
func pauseStoreOps(aWrite Outcome) []porcupine.Operation {
	return []porcupine.Operation{
		readOp(clientA, 1, OK, 0, 20, 30),
		readOp(clientB, 2, OK, 0, 120, 130),
		writeOp(clientB, 2, 1, 0, OK, 140, 150),
		writeOp(clientA, 1, 1, 0, aWrite, 200, 210),
	}
}

func TestKleppmannPause(t *testing.T) {
	t.Run("P1 is violated whatever the fencing", func(t *testing.T) {
		check(t, exclusion(), pauseLockOps(), false)
	})
	t.Run("P3 holds: fences 1 then 2", func(t *testing.T) {
		check(t, fences(), pauseLockOps(), true)
	})
	t.Run("fencing off: A's write is a lost update", func(t *testing.T) {
		check(t, RegisterModel(FencingOff), pauseStoreOps(OK), false)
	})
	t.Run("fencing full: the store rejects A's write", func(t *testing.T) {
		check(t, RegisterModel(FencingFull), pauseStoreOps(Fail), true)
	})
	t.Run("fencing writes: the store rejects A's write", func(t *testing.T) {
		check(t, RegisterModel(FencingWrites), pauseStoreOps(Fail), true)
	})
	t.Run("fencing full: a store that accepted A's write broke its rule", func(t *testing.T) {
		check(t, RegisterModel(FencingFull), pauseStoreOps(OK), false)
	})
}

// pauseBeforeReadStoreOps: A (fence 1) pauses before reading; B (fence 2) reads 0 and
// pauses; A reads, and if the store lets it, writes 1 over 0; then B writes 1 over 0.
func pauseBeforeReadStoreOps(aRead Outcome, aWrites bool) []porcupine.Operation {
	ops := []porcupine.Operation{
		readOp(clientB, 2, OK, 0, 120, 130),
		readOp(clientA, 1, aRead, 0, 200, 210),
	}
	if aWrites {
		ops = append(ops, writeOp(clientA, 1, 1, 0, OK, 220, 230))
	}
	return append(ops, writeOp(clientB, 2, 1, 0, OK, 300, 310))
}

func TestPauseBeforeRead(t *testing.T) {
	t.Run("fencing writes: both writes are accepted and A's update is lost", func(t *testing.T) {
		// Reads are unfenced, A's write with fence 1 is the first fenced write, and B's
		// fence 2 is larger: the store accepts both, B overwrites A's 1 believing it was 0.
		check(t, RegisterModel(FencingWrites), pauseBeforeReadStoreOps(OK, true), false)
	})
	t.Run("fencing full: B's read raised the fence, A's read is rejected and A gives up", func(t *testing.T) {
		check(t, RegisterModel(FencingFull), pauseBeforeReadStoreOps(Fail, false), true)
	})
	t.Run("fencing full: a store that served A's stale read broke its rule", func(t *testing.T) {
		check(t, RegisterModel(FencingFull), pauseBeforeReadStoreOps(OK, false), false)
	})
	t.Run("fencing full: a store that also took A's write broke its rule", func(t *testing.T) {
		check(t, RegisterModel(FencingFull), pauseBeforeReadStoreOps(OK, true), false)
	})
}
