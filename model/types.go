// Package model holds the sequential specifications that locklab checks recorded histories
// against with Porcupine: the lock model (P1 mutual exclusion of beliefs, P3 fence
// monotonicity) and the locked-register model of the protected store (P2). It is pure code:
// no I/O, and it imports nothing else of locklab, so the models can be read on their own.
package model

import "fmt"

// Kind is what an operation did. The values match histories.Kind so that a conversion is a
// plain type conversion.
type Kind string

// Lock operations (and the crash that ends a belief) and store operations.
const (
	Acquire Kind = "acquire"
	Release Kind = "release"
	Extend  Kind = "extend"
	Crash   Kind = "crash"
	Read    Kind = "read"
	Write   Kind = "write"
)

// Outcome is what the client learnt about its operation; the values match histories.Outcome.
type Outcome string

// Unknown means the operation may or may not have taken effect. Its return time must be
// +infinity in the checked history so that Porcupine may place it anywhere after its call.
const (
	OK      Outcome = "ok"
	Fail    Outcome = "fail"
	Unknown Outcome = "unknown"
)

// Fencing is the protected store's rule for fencing tokens.
type Fencing string

// FencingOff accepts everything; FencingWrites rejects writes whose fence is below the largest
// fence seen on writes; FencingFull does the same for reads and writes, with one largest
// fence for both.
const (
	FencingOff    Fencing = "off"
	FencingWrites Fencing = "writes"
	FencingFull   Fencing = "full"
)

// ParseFencing accepts exactly "off", "writes" and "full".
func ParseFencing(s string) (Fencing, error) {
	switch f := Fencing(s); f {
	case FencingOff, FencingWrites, FencingFull:
		return f, nil
	}
	return "", fmt.Errorf("unknown fencing mode %q (want off, writes or full)", s)
}
