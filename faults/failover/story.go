package failover

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/faults/gates"
	"github.com/locklab/locklab/faults/spec"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/workload"
)

// aftermath makes the lost grant count by construction, not by timing (a container can
// take seconds to die, Sentinel more to promote): the client struck at its point (the
// holder) stays held after the promotion until another client (the witness) was granted
// by the new primary and read; the witness is then held before its write until the holder
// has read (or given up). Every wait is bounded by the fault's duration; the window says
// which condition came.
type aftermath struct {
	f      *Fault
	sc     Scene
	holder int
	bound  time.Duration

	killed   chan struct{} // the old primary is dead: grants from now on are the new primary's
	promoted chan struct{} // the promotion is over; ok says whether a replica was promoted
	ok       bool
	doneAt   time.Time // when the promotion was over

	mu        sync.Mutex
	witness   int           // the client granted first after the promotion, once witnessed closed
	witnessed chan struct{} // closed when the witness is known
	at        time.Time     // when it was granted
	readers   []func()      // per client: marks it as having read (or given up), once
	read      []chan struct{}
}

// newAftermath arms, for every client other than holder, a gate at the grant that makes
// it the witness when it is granted after the promotion.
func newAftermath(f *Fault, sc Scene, holder int) *aftermath {
	a := &aftermath{f: f, sc: sc, holder: holder, bound: f.spec.Duration, witness: -1,
		killed: make(chan struct{}), promoted: make(chan struct{}), witnessed: make(chan struct{})}
	a.read, a.readers = make([]chan struct{}, sc.Clients), make([]func(), sc.Clients)
	for i := range sc.Clients {
		ch := make(chan struct{})
		a.read[i], a.readers[i] = ch, sync.OnceFunc(func() { close(ch) })
		if i != holder {
			a.armWitness(i)
		}
	}
	return a
}

func (a *aftermath) armWitness(client int) {
	a.sc.Gates.AddTrigger(client, lockimpl.StepGranted, func(ctx context.Context) { a.granted(ctx, client) })
}

// granted is client's grant. One reached before the old primary died came from it (a
// grant of another key): the gate is armed again for the next one.
func (a *aftermath) granted(ctx context.Context, client int) {
	select {
	case <-a.killed:
	default:
		a.armWitness(client)
		return
	}
	select {
	case <-a.promoted:
	case <-ctx.Done():
		return
	}
	a.mu.Lock()
	first := a.ok && a.witness == -1
	if first {
		a.witness, a.at = client, time.Now()
	}
	a.mu.Unlock()
	if first {
		a.armRead(client, true)
		close(a.witnessed)
	}
}

// armRead arms client's gates where it has read the protected value or given up: before
// its write (the witness waits there for the holder's read) and in its release.
func (a *aftermath) armRead(client int, wait bool) {
	g := a.sc.Gates
	g.AddTrigger(client, workload.BeforeWrite, func(ctx context.Context) {
		a.readers[client]()
		if wait {
			a.awaitHolderRead(ctx, client)
		}
	})
	g.AddTrigger(client, workload.InRelease, func(context.Context) { a.readers[client]() })
	// An acquire that ended without a grant (a WAIT that failed) reaches neither.
	g.AddTrigger(client, workload.AcquireFailed, func(context.Context) { a.readers[client]() })
}

// awaitHolderRead holds the witness before its write until the holder has read.
func (a *aftermath) awaitHolderRead(ctx context.Context, witness int) {
	start := time.Now()
	note := fmt.Sprintf("; client %d had not read %s after client %d reached its write, which went on", a.holder, a.bound, witness)
	if gates.AwaitUntil(ctx, a.read[a.holder], start.Add(a.bound)) {
		note = fmt.Sprintf("; client %d read or gave up before client %d wrote (client %d held %s before its write)", a.holder, witness, witness, spec.Short(time.Since(start)))
	}
	a.f.note(a.sc, note)
}

// struck ends the strike (which closed killed): ok says whether a replica was promoted.
func (a *aftermath) struck(ok bool) {
	a.ok, a.doneAt = ok, time.Now()
	close(a.promoted)
}

// holdHolder holds the holder after a promotion until the witness has read, at most the
// fault's duration, and arms its own read gates (or marks it read at once when its point
// comes after its read). It returns what the window should say.
func (a *aftermath) holdHolder(ctx context.Context) string {
	if a.sc.Clients < 2 {
		return "" // no other client to hand the lock to
	}
	deadline := time.Now().Add(a.bound)
	witnessed := gates.AwaitUntil(ctx, a.witnessed, deadline)
	came := witnessed && gates.AwaitUntil(ctx, a.read[a.witness], deadline)
	if strings.HasPrefix(a.f.spec.Point, "acquire:") || a.f.spec.Point == workload.AfterAcquire {
		a.armRead(a.holder, false)
	} else {
		a.readers[a.holder]() // struck after its read (or in its release)
	}
	if !witnessed {
		return fmt.Sprintf("; no other client was granted by the new primary within %s (client %d went on)", a.bound, a.holder)
	}
	after := spec.Short(max(0, a.at.Sub(a.doneAt)))
	if !came {
		return fmt.Sprintf("; client %d was granted by the new primary %s after the promotion but had not read %s after it (client %d went on)", a.witness, after, a.bound, a.holder)
	}
	return fmt.Sprintf("; client %d granted by the new primary %s after the promotion and read, client %d held until then", a.witness, after, a.holder)
}
