package runner

import (
	"testing"
	"time"

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
	// By construction: the first client to release stalls until another client was
	// granted the lock (its lease expired), so its plain DEL lands on the new holder's
	// lease, and a third client takes the lock while that holder believes and writes.
	rep := runPlan(t, nil, scenario(t, "unsafe-release", nil))
	assertFaultsFired(t, rep)
	assertVerdicts(t, rep, verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal})
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
