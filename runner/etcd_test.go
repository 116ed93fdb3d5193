package runner

import (
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
)

// TestEtcdCrashedHolderUnderShortTTL: etcd grants whole seconds, so a holder that crashes
// under a 300 ms plan TTL leaves a 1 s lease behind it. The acquire records the lease
// granted, and L1 waits for that lease, not the 300 ms asked for: no finding, whether the
// holder dies once the grant arrived (its acquire ok) or at the grant (its acquire
// unknown). The other client keeps trying meanwhile, so a lock stuck past the lease
// would show. etcd-process reports the lease through the subprocess protocol (granted_ms).
func TestEtcdCrashedHolderUnderShortTTL(t *testing.T) {
	for _, c := range []struct{ impl, point string }{
		{"etcd", "after-acquire"}, {"etcd", "acquire:granted"}, {"etcd-process", "after-acquire"},
	} {
		t.Run(c.impl+"/"+c.point, func(t *testing.T) {
			p := plan.Default()
			p.Name, p.Impl, p.Topology, p.Fencing, p.Clients, p.Keys = "etcd-crash", c.impl, "etcd:1", "full", 2, 1
			p.TTL, p.Duration = plan.D(300*time.Millisecond), plan.D(3*time.Second)
			p.Work, p.Think, p.Retry = plan.D(10*time.Millisecond), plan.D(20*time.Millisecond), plan.D(10*time.Millisecond)
			p.Faults = []plan.FaultSpec{{Kind: "client-crash", Target: "client:0", Point: c.point}}
			rep := runPlan(t, nil, p)
			assertFaultsFired(t, rep)
			assertVerdicts(t, rep, verdicts{lin.L1: lin.OK, lin.P1: lin.OK, lin.P2: lin.OK})
			h, err := histories.Load(rep.Dir)
			if err != nil {
				t.Fatal(err)
			}
			crash, refusedAfter, granted, lastRefused := int64(-1), 0, 0, int64(0)
			for _, op := range h.Ops {
				switch {
				case op.Kind == histories.Crash && op.Client == 0:
					crash = op.Call
				case op.Kind == histories.Acquire && op.Output.Granted == time.Second:
					granted++
				case op.Kind == histories.Acquire && op.Outcome == histories.Fail && crash >= 0 && op.Call > crash+int64(600*time.Millisecond):
					refusedAfter++ // refused later than the 300 ms asked for and the slack
				}
				if op.Kind == histories.Acquire && op.Outcome == histories.Fail && crash >= 0 {
					lastRefused = max(lastRefused, op.Call-crash)
				}
			}
			if crash < 0 || granted == 0 {
				t.Fatalf("client 0 crashed at %d, %d acquires with 1 s granted: want a crash and the lease recorded", crash, granted)
			}
			t.Logf("%d acquires refused more than 600 ms after the crash (each an L1 finding by the TTL asked for), the last %s after it",
				refusedAfter, time.Duration(lastRefused).Round(time.Millisecond))
		})
	}
}
