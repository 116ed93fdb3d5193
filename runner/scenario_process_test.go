package runner

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl/subprocess"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"

	lin "github.com/locklab/locklab/linearizability"
)

// buildLockserve builds cmd/locklab-lockserve for the *-process implementations.
func buildLockserve(t *testing.T) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "locklab-lockserve")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/locklab-lockserve").CombinedOutput()
	if err != nil {
		t.Fatalf("build locklab-lockserve: %v\n%s", err, out)
	}
	t.Setenv(subprocess.EnvLockserve, bin)
}

// TestStopTheWorldPause: the renewals of watchdog and rueidislock save its lease through a pause of the
// holder's own steps, but not through a pause of its whole process (a long GC pause):
// then the lease expires, another client takes the lock, and the late write loses an
// update. Run out of process, the same lock takes either pause.
func TestStopTheWorldPause(t *testing.T) {
	buildLockserve(t)
	for _, impl := range []string{"watchdog-process", "rueidislock-process"} {
		for _, c := range []struct {
			mode string
			want verdicts
		}{
			{"client", verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.L1: lin.OK}},
			{"process", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal}},
		} {
			t.Run(impl+"/"+c.mode, func(t *testing.T) {
				p := scenario(t, "pause-past-ttl", func(p *plan.Plan) {
					p.Impl = impl
					p.Faults[0].Mode = c.mode
				})
				rep := runPlan(t, nil, p)
				assertVerdicts(t, rep, c.want)
				assertFaultsFired(t, rep)
			})
		}
	}
}

// TestStopTheWorldNeedsAProcess: a stop-the-world pause of an in-process client is
// refused by the plan's validation, naming the field and saying why.
func TestStopTheWorldNeedsAProcess(t *testing.T) {
	p := scenario(t, "pause-past-ttl", func(p *plan.Plan) { p.Impl = "watchdog"; p.Faults[0].Mode = "process" })
	_, err := p.Resolve(locks.All())
	if err == nil || !strings.Contains(err.Error(), "faults[0].mode") || !strings.Contains(err.Error(), "process of its own") {
		t.Fatalf("err = %v", err)
	}
}

// TestWaitOutOfProcess: locklab-lockserve's locks take the plan's WAIT from their
// environment. While the only replica is frozen every grant goes unacknowledged and is
// refused; before and after, grants are kept.
func TestWaitOutOfProcess(t *testing.T) {
	buildLockserve(t)
	p := plan.Default()
	p.Impl, p.Topology, p.Clients = "fenced-process", "replicated:2", 2
	p.TTL, p.Duration, p.Work = plan.D(2*time.Second), plan.D(3*time.Second), plan.D(50*time.Millisecond)
	p.Think, p.Retry = plan.D(100*time.Millisecond), plan.D(50*time.Millisecond)
	p.WaitReplicas, p.WaitTimeout = 1, plan.D(300*time.Millisecond)
	p.Faults = []plan.FaultSpec{{Kind: "server-pause", Target: "redis-1", At: plan.D(time.Second), Duration: plan.D(time.Second)}}
	// fenced-process is no implementation of the registry (assess registers such forms
	// on the fly, as references): this test does the same.
	reg := locks.All()
	fenced, err := reg.Get("fenced")
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(subprocess.OutOfProcess(fenced)); err != nil {
		t.Fatal(err)
	}
	rep := runPlanIn(t, nil, reg, p)
	assertVerdicts(t, rep, verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.OK})
	assertFaultsFired(t, rep)
	h, err := histories.Load(rep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	granted, unacked := 0, 0
	for _, op := range h.Ops {
		switch {
		case op.Kind != histories.Acquire:
		case op.Outcome == histories.OK:
			granted++
		case strings.Contains(op.Output.Error, "0 of 1 replicas acknowledged it, so released"):
			unacked++
		}
	}
	if granted == 0 || unacked == 0 {
		t.Errorf("%d acquires granted and %d refused for want of the frozen replica's acknowledgement; want some of each", granted, unacked)
	}
}
