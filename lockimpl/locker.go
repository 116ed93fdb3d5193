// Package lockimpl holds the Locker interface and what every implementation shares
// (Lease, the errors, Clock, StepFunc, Renewer, Config and its Redis clients), the
// Registry type, and locklab's own locks: the correct single-instance ones (setnx,
// fenced), the deliberately broken mutants, redlock and watchdog (Impls).
//
// The adapters of third-party libraries are in lockimpl/libs, the subprocess-protocol
// clients in lockimpl/subprocess, and the registry of all of them is locks.All. This
// package must not import lockimpl/libs, lockimpl/subprocess or locks: they import it.
package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locklab/locklab/histories"
)

// ErrNotAcquired is a definite refusal of an acquire: the lock is held by someone else.
var ErrNotAcquired = errors.New("lock not acquired")

// ErrNotHeld is a definite refusal of a release or extend: the lease is no longer ours.
var ErrNotHeld = errors.New("lock not held")

// Lease is what a successful acquire or extend grants.
type Lease struct {
	Key      string
	Token    string
	Fence    int64         // fencing token; 0 when the implementation has none
	Validity time.Duration // validity left when Acquire/Extend returned, as the implementation computes it
	Deadline time.Time     // by the Locker's Clock: when the implementation considers the lease over
	Nodes    []int         // of a lock on several servers: the ones that granted it (by index), when known
	// Granted is the lease the servers granted, when the implementation learns it and it
	// may differ from the TTL asked for (etcd grants whole seconds, at least 1): how long
	// the lease may live on the servers. 0: the TTL asked for.
	Granted time.Duration
}

// GrantedError is an error of unknown outcome from an acquire or extend after the servers
// had granted a lease of Granted (etcd: the lease was granted, then the lock's own
// command failed): the lock may hold that lease for that long.
type GrantedError struct {
	Granted time.Duration
	Err     error
}

func (e *GrantedError) Error() string { return e.Err.Error() }
func (e *GrantedError) Unwrap() error { return e.Err }

// GrantedOf is the lease an error says the servers granted (GrantedError), 0 when none.
func GrantedOf(err error) time.Duration {
	if ge, ok := errors.AsType[*GrantedError](err); ok {
		return ge.Granted
	}
	return 0
}

// Remaining is the lease's validity left at now (by the same clock as Deadline).
func (l Lease) Remaining(now time.Time) time.Duration { return l.Deadline.Sub(now) }

// Locker is a distributed lock client. Errors other than ErrNotAcquired and ErrNotHeld
// (wrapped or not) mean the outcome is unknown: the command may have taken effect.
type Locker interface {
	Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error)
	Release(ctx context.Context, lease Lease) error
	Extend(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error)
	Close() error
}

// Clock is the client's view of time; faults inject a skewed one.
type Clock interface{ Now() time.Time }

// SystemClock is the machine's clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// StepFunc is called by an implementation between the commands of one operation, with a
// step name such as "acquire:after-setnx". A non-nil error makes the implementation stop
// right there and return it: that is how a client crash between two commands is injected.
type StepFunc func(ctx context.Context, step string) error

// Classify maps a Locker error to the outcome recorded in the history.
func Classify(err error) histories.Outcome {
	switch {
	case err == nil:
		return histories.OK
	case errors.Is(err, ErrNotAcquired), errors.Is(err, ErrNotHeld):
		return histories.Fail
	}
	return histories.Unknown
}

// ErrCrashed is what a StepFunc returns to make the client stop for good at that step:
// the next command is never sent. Classify maps it to unknown, as a crashed client
// cannot know what happened.
var ErrCrashed = errors.New("client crashed (injected)")

// ErrUnsupported is what Extend returns, without sending anything, when an
// implementation has no way to extend a lease (its library renews by itself or not at
// all). Callers skip the operation: it is not recorded.
var ErrUnsupported = errors.New("operation not supported by this lock")

// Renewer is a Locker that keeps its leases alive by itself in the background (a
// watchdog, as Redisson does). Current reports the lease as the implementation knows it
// now: renewed (a later Deadline), or lost (false) when a renewal was refused.
// A careful client asks it, not the lease it got from Acquire, before it touches the store.
type Renewer interface {
	Current(lease Lease) (Lease, bool)
}

// Crasher is a Locker with work of its own besides its calls (renewals, a client
// process). Crash stops all of it the way the death of the client's process would: no
// more renewals, connections closed, and nothing released — the keys stay until they
// expire. The workload calls Crash when its client crashes, at whatever point; Close still
// follows at the end of the run and must release nothing after a Crash. A Locker without
// such work needs no Crash: closing it releases nothing.
type Crasher interface {
	Crash()
}

// CallStep calls the Step hook fn (nil: none); its error is the injected crash and ends
// the operation there. Every implementation calls its hook through it, so that an
// injected crash reads the same everywhere.
func CallStep(ctx context.Context, fn StepFunc, step string) error {
	if fn == nil {
		return nil
	}
	if err := fn(ctx, step); err != nil {
		return fmt.Errorf("stopped at step %s: %w", step, err)
	}
	return nil
}
