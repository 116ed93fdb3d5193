package runner

import (
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"

	lin "github.com/locklab/locklab/linearizability"
)

// Each scenario that must show a violation asserts that the checker found it, and the
// matching safe configuration asserts that it found none. Scenarios run in parallel: they
// are built on margins (a pause three times the lease) that a busy machine cannot erase.

func TestPausePastTTL(t *testing.T) {
	runImplCases(t, "pause-past-ttl", []implCase{
		// The textbook lock, no fencing: both the beliefs and the data break.
		{"setnx", "off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.NA, lin.L1: lin.OK}},
		{"fenced", "off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.OK, lin.L1: lin.OK}},
		// Fencing cannot stop two clients believing, but the store refuses the stale write.
		{"fenced", "full", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
		{"fenced", "writes", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
	})
}

func TestCheckThenSetIsCaught(t *testing.T) {
	t.Parallel()
	rep := runPlan(t, nil, scenario(t, "check-then-set", nil))
	assertVerdicts(t, rep, verdicts{lin.P1: lin.Illegal})
}

func TestCheckThenSetSafeCounterpart(t *testing.T) {
	t.Parallel()
	rep := runPlan(t, nil, scenario(t, "check-then-set", func(p *plan.Plan) { p.Impl = "setnx" }))
	assertVerdicts(t, rep, verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.L1: lin.OK})
	assertFaultsFired(t, rep)
}

func TestUnsafeReleaseIsCaught(t *testing.T) {
	t.Parallel()
	// The bug shows only when client 0's late DEL lands while another client holds the
	// lock. Client 0 may win none of the contended acquires of the run (four clients, one
	// key: a few runs in a hundred, more on a loaded machine), so it never releases and
	// the pause never comes; or its DEL may land in the milliseconds between two holders
	// (about one run in a hundred). Neither run exercised the bug: it is run again, three
	// times at most, saying which condition did not come. Whenever the DEL did hit a
	// holder, the checker must find the violation.
	for attempt := 1; ; attempt++ {
		rep := runPlan(t, nil, scenario(t, "unsafe-release", nil))
		fired := rep.Faults == len(rep.Plan.Faults)
		if (fired && lateReleaseHitAHolder(t, rep)) || attempt == 3 {
			assertFaultsFired(t, rep)
			assertVerdicts(t, rep, verdicts{lin.P1: lin.Illegal})
			return
		}
		if !fired {
			t.Logf("attempt %d: client 0 never reached its release (it won no acquire), so the pause never came; running again", attempt)
		} else {
			t.Logf("attempt %d: client 0's late release landed while nobody held the lock; running again", attempt)
		}
	}
}

// lateReleaseHitAHolder reports whether client 0's delayed release (the one that took
// the pause) returned while another client believed it held the lock.
func lateReleaseHitAHolder(t *testing.T, rep Report) bool {
	t.Helper()
	h, err := histories.Load(rep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var late *histories.Op
	for i, op := range h.Ops {
		if op.Client == 0 && op.Kind == histories.Release && op.Return-op.Call >= int64(time.Second) {
			late = &h.Ops[i]
			break
		}
	}
	if late == nil {
		return false
	}
	held := map[int]int64{} // process → return of its acquire, while it believes
	for _, op := range h.Ops {
		if op.Call > late.Return {
			break
		}
		switch {
		case op.Client == 0 || op.Kind.IsStore():
		case op.Kind == histories.Acquire && op.Outcome == histories.OK:
			held[op.Process] = op.Return
		case op.Kind == histories.Release || op.Kind == histories.Crash:
			delete(held, op.Process)
		}
	}
	for _, since := range held {
		if since < late.Return {
			return true
		}
	}
	return false
}

func TestUnsafeReleaseSafeCounterpart(t *testing.T) {
	t.Parallel()
	// The same late release by the textbook lock's compare-and-delete harms nobody.
	rep := runPlan(t, nil, scenario(t, "unsafe-release", func(p *plan.Plan) { p.Impl = "setnx" }))
	assertVerdicts(t, rep, verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.L1: lin.OK})
	assertFaultsFired(t, rep)
}

// TestLateExtend: client 0 stalls before its extend until client 1 is granted the lock,
// so its extend comes after another grant by construction. Every lock breaks P1 (client
// 0 believed through its stall); a correct lock refuses the extend, so its data and its
// answers are safe, while unsafe-extend renews client 1's lease, answers ok, and client
// 0's stale write loses client 1's update.
func TestLateExtend(t *testing.T) {
	runImplCases(t, "late-extend", []implCase{
		{"unsafe-extend", "off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P6: lin.Illegal, lin.L1: lin.OK}},
		{"setnx", "off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P6: lin.OK, lin.L1: lin.OK}},
		{"redislock", "off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P6: lin.OK, lin.L1: lin.OK}},
		{"redis-py", "off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P6: lin.OK, lin.L1: lin.OK}},
	})
}

func TestNoExpiryIsCaught(t *testing.T) {
	t.Parallel()
	rep := runPlan(t, nil, scenario(t, "no-expiry", nil))
	assertVerdicts(t, rep, verdicts{lin.P1: lin.OK, lin.L1: lin.Illegal})
	assertFaultsFired(t, rep)
}

func TestNoExpirySafeCounterpart(t *testing.T) {
	t.Parallel()
	// The textbook lock crashing while it holds the lock: the lease expires, others go on.
	rep := runPlan(t, nil, scenario(t, "no-expiry", func(p *plan.Plan) {
		p.Impl, p.Faults[0].Point = "setnx", "acquire:granted"
	}))
	assertVerdicts(t, rep, verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.L1: lin.OK})
	assertFaultsFired(t, rep)
}

func TestTTLTooShort(t *testing.T) {
	for _, c := range []struct {
		fencing string
		want    verdicts
	}{
		{"off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.OK, lin.L1: lin.OK}},
		{"full", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
	} {
		t.Run(c.fencing, func(t *testing.T) {
			t.Parallel()
			rep := runPlan(t, nil, scenario(t, "ttl-too-short", func(p *plan.Plan) { p.Fencing = c.fencing }))
			assertVerdicts(t, rep, c.want)
		})
	}
}

func TestTTLTooShortCarefulClient(t *testing.T) {
	t.Parallel()
	// The validity check makes the client give up instead of writing: beliefs still
	// overlap (the belief lasts until the release call), but the data is safe.
	rep := runPlan(t, nil, scenario(t, "ttl-too-short", func(p *plan.Plan) { p.Careless = false }))
	assertVerdicts(t, rep, verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.L1: lin.OK})
}

// TestUnfencedRead: fencing only the writes lets a stale write land between the new
// holder's read and its write, as TLC's LeaseLock_pause_writes counterexample shows.
func TestUnfencedRead(t *testing.T) {
	for _, c := range []struct {
		fencing string
		want    verdicts
	}{
		{"off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.OK}},
		{"writes", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.OK}},
		{"full", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK}},
	} {
		t.Run(c.fencing, func(t *testing.T) {
			t.Parallel()
			rep := runPlan(t, nil, scenario(t, "unfenced-read", func(p *plan.Plan) { p.Fencing = c.fencing }))
			assertVerdicts(t, rep, c.want)
			assertFaultsFired(t, rep)
		})
	}
}

// TestACrashStopsTheRenewer: a client that crashes holding the lock of an implementation
// that renews by itself stops renewing, as its dead process would, wherever it crashed:
// the lock expires by its TTL and the other client gets it (L1 holds).
func TestACrashStopsTheRenewer(t *testing.T) {
	for _, impl := range []string{"watchdog", "rueidislock"} {
		for _, point := range []string{workload.AfterAcquire, workload.BeforeWrite, workload.InRelease} {
			t.Run(impl+"/"+point, func(t *testing.T) {
				p := plan.Default()
				p.Name, p.Impl, p.Clients = "crash-"+point, impl, 2
				p.TTL, p.Duration = plan.D(300*time.Millisecond), plan.D(2*time.Second)
				p.Faults = []plan.FaultSpec{{Kind: "client-crash", Target: "client:0", Point: point}}
				rep := runPlan(t, nil, p)
				assertFaultsFired(t, rep)
				assertVerdicts(t, rep, verdicts{lin.L1: lin.OK})
			})
		}
	}
}
