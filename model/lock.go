package model

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
)

// NoHolder is LockState.Holder when nobody holds the lock.
const NoHolder = -1

// LockInput is one lock operation (or crash) as the lock model sees it.
type LockInput struct {
	Key  string
	Kind Kind // Acquire, Release, Extend or Crash
	// Process is the believer: the process whose belief this operation starts, keeps or
	// ends. Holder identity is compared on it.
	Process int
}

// PartitionKey implements Keyed.
func (in LockInput) PartitionKey() string { return in.Key }

// LockOutput is what the lock operation returned.
type LockOutput struct {
	Outcome Outcome
	Fence   int64 // acquire ok: the fencing token granted, 0 when the implementation has none
}

// LockState is the state of one key.
type LockState struct {
	Holder    int   // the believing process, or NoHolder
	LastFence int64 // largest fence granted so far (only tracked when checking fences)
}

// LockOptions selects what the lock model checks, so that P1 and P3 get separate verdicts.
type LockOptions struct {
	Exclusion bool // P1: at most one process believes it holds the lock
	Fences    bool // P3: fences granted by acquire ok grow strictly in real-time order
}

// InitialLock is the state of a key nobody has acquired yet.
func InitialLock() LockState { return LockState{Holder: NoHolder} }

// StepLock is the lock model's transition: whether out is a legal result of in from s, and
// the next state. With Exclusion off the holder is never tracked; with Fences off the last
// fence is never tracked, so that the two properties cannot influence each other.
func StepLock(opts LockOptions, s LockState, in LockInput, out LockOutput) (LockState, bool) {
	held := s.Holder != NoHolder
	mine := held && s.Holder == in.Process
	// endBelief is what every operation that may have lost the lease does: whatever else
	// happened, the caller no longer believes it holds the lock.
	endBelief := func() LockState {
		if mine {
			s.Holder = NoHolder
		}
		return s
	}
	switch in.Kind {
	case Acquire:
		if out.Outcome != OK {
			return s, true // a refusal or an unknown result starts no belief
		}
		if opts.Exclusion {
			if held {
				return s, false
			}
			s.Holder = in.Process
		}
		// An acquire ok without a fence (0) grants none; it cannot break monotonicity.
		if opts.Fences && out.Fence > 0 {
			if out.Fence <= s.LastFence {
				return s, false
			}
			s.LastFence = out.Fence
		}
		return s, true
	case Release:
		if out.Outcome == OK {
			if opts.Exclusion && !mine {
				return s, false
			}
			s.Holder = NoHolder
			return s, true
		}
		return endBelief(), true // the lease may have expired: release fail is always legal
	case Extend:
		switch out.Outcome {
		case OK:
			return s, !opts.Exclusion || mine
		case Unknown:
			// The caller cannot tell whether it renewed: it goes on believing until it
			// releases (the recorder keeps its process), and nothing changes here.
			return s, true
		}
		return endBelief(), true
	case Crash:
		return endBelief(), true
	}
	return s, false // not a lock operation
}

// LockModel is the Porcupine model of a lock, partitioned by key.
func LockModel(opts LockOptions) porcupine.Model { return LockModelFrom(opts, InitialLock()) }

// LockModelFrom is LockModel starting in state start instead of a lock nobody acquired:
// a window of a history checked on its own starts where the windows before it left the
// lock.
func LockModelFrom(opts LockOptions, start LockState) porcupine.Model {
	return porcupine.Model{
		Partition: PartitionByKey,
		Init:      func() any { return start },
		Step: func(state, input, output any) (bool, any) {
			next, ok := StepLock(opts, state.(LockState), input.(LockInput), output.(LockOutput))
			return ok, next
		},
		Equal: func(a, b any) bool { return a.(LockState) == b.(LockState) },
		Hash: func(state any) uint64 {
			s := state.(LockState)
			return mix(uint64(int64(s.Holder))) ^ mix(uint64(s.LastFence)<<1|1)
		},
		DescribeOperation: func(input, output any) string {
			return DescribeLockOp(input.(LockInput), output.(LockOutput))
		},
		DescribeState: func(state any) string { return opts.DescribeLockState(state.(LockState)) },
	}
}

// DescribeLockOp renders a lock operation for the visualisation, e.g. "p3 acquire → ok, fence 5".
func DescribeLockOp(in LockInput, out LockOutput) string {
	if in.Kind == Crash {
		return fmt.Sprintf("p%d crash", in.Process)
	}
	s := fmt.Sprintf("p%d %s → %s", in.Process, in.Kind, out.Outcome)
	if out.Fence > 0 {
		s += fmt.Sprintf(", fence %d", out.Fence)
	}
	return s
}

// DescribeLockState renders a state, showing only what opts tracks.
func (opts LockOptions) DescribeLockState(s LockState) string {
	var parts []string
	if opts.Exclusion {
		if s.Holder == NoHolder {
			parts = append(parts, "free")
		} else {
			parts = append(parts, fmt.Sprintf("held by p%d", s.Holder))
		}
	}
	if opts.Fences {
		parts = append(parts, fmt.Sprintf("last fence %d", s.LastFence))
	}
	return strings.Join(parts, ", ")
}
