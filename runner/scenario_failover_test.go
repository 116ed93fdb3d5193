package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/histories"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
)

// failover-loss: the first grant exists only on a primary that dies before replicating
// it, and the promoted replica hands the lock out again with the same fencing token.
// What the checkers say, with Sentinel's failover and with a promotion by hand:
//   - P1: the other client acquires on the new primary while the first still believes.
//   - P3: the second grant repeats the first one's fence (the replica missed its INCR).
//   - P2: both read the value before either writes it. Without fencing the second
//     write loses the first; with fencing full both carry the same fence, which the
//     store's rule (f ≥ the largest fence seen) accepts twice: fencing does not save
//     the data when the fence source itself fails over.
func TestFailoverLoss(t *testing.T) {
	illegal := verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.Illegal, lin.L1: lin.OK}
	for _, backend := range testBackends {
		for _, name := range []string{"failover-loss", "failover-loss-manual"} {
			for _, fencing := range []string{"off", "full"} {
				t.Run(backend+"/"+name+"/"+fencing, func(t *testing.T) {
					t.Parallel()
					rep := runPlan(t, nil, scenario(t, name, onBackend(backend, func(p *plan.Plan) { p.Fencing = fencing })))
					assertVerdicts(t, rep, illegal)
					assertFaultsFired(t, rep)
					assertFailoverStruck(t, rep)
					if t.Failed() {
						logHistory(t, rep)
						logSentinels(t, rep.Dir)
					}
				})
			}
		}
	}
}

// The same story with WAIT 1 after each grant. The primary dies between the first
// client's grant and its WAIT; the WAIT fails on the dead primary, so that client never
// believes, and the other client, granted by the new primary, is the only holder: every
// property holds, with and without fencing. The conditions are the failover-loss ones,
// except that the held client's acquire must fail at its WAIT.
func TestFailoverWait(t *testing.T) {
	ok := verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}
	for _, backend := range testBackends {
		for _, fencing := range []string{"off", "full"} {
			t.Run(backend+"/"+fencing, func(t *testing.T) {
				t.Parallel()
				rep := runPlan(t, nil, scenario(t, "failover-wait", onBackend(backend, func(p *plan.Plan) { p.Fencing = fencing })))
				assertVerdicts(t, rep, ok)
				assertFaultsFired(t, rep)
				assertWindowSays(t, rep, "failover", []struct{ says, condition string }{
					{"acquire:waiting", "the primary killed between a grant and its WAIT"},
					{"promoted", "a replica promoted"},
					{"granted by the new primary", "the other client granted by the new primary within the fault's duration"},
					{"and read, client", "the other client's read while the first was held"},
					{"gave up before client", "the first client's acquire ended (it gave up) before the other's write"},
				})
				h, err := histories.Load(rep.Dir)
				if err != nil {
					t.Fatal(err)
				}
				failed := 0
				for _, op := range h.Ops {
					if op.Kind == histories.Acquire && op.Outcome != histories.OK && strings.Contains(op.Output.Error, "granted on the primary, then") {
						failed++
					}
				}
				if failed != 1 {
					t.Errorf("%d acquires failed at their WAIT after a grant on the primary, want 1 (the held client's)", failed)
				}
				if t.Failed() {
					logHistory(t, rep)
					logSentinels(t, rep.Dir)
				}
			})
		}
	}
}

// The control: a graceful CLUSTER FAILOVER, sent while the first client holds the lock
// (its trigger holds it there), hands the slot over only once the replica caught up, so
// every property holds and every release finds its lock on the new primary, following
// the MOVED redirection.
func TestClusterFailoverGraceful(t *testing.T) {
	ok := verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}
	for _, backend := range testBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			rep := runPlan(t, nil, scenario(t, "cluster-failover-graceful", onBackend(backend, func(p *plan.Plan) { p.Fencing = "full" })))
			assertVerdicts(t, rep, ok)
			assertFaultsFired(t, rep)
			assertWindowSays(t, rep, "failover", []struct{ says, condition string }{
				{"took over", "the replica took over"},
			})
			h, err := histories.Load(rep.Dir)
			if err != nil {
				t.Fatal(err)
			}
			releases := 0
			for _, op := range h.Ops {
				if op.Kind != histories.Release {
					continue
				}
				releases++
				if op.Outcome != histories.OK {
					t.Errorf("release %+v -> %+v: want every release to find its lock", op.Input, op.Output)
				}
			}
			if releases < 2 {
				t.Errorf("%d releases, want the holder's across the handover and later ones", releases)
			}
			if t.Failed() {
				logHistory(t, rep)
			}
		})
	}
}

// WAIT's limit: a replica acknowledged the first client's grant, but the primary's
// other replica, cut off from it alone, is the one promoted (the acknowledging one is
// barred from promotion), so the grant is lost all the same: P1, P2 and P3 break as in
// failover-loss, on Sentinel and on a Redis Cluster. The window must say that the
// promoted replica is the one that was cut off.
func TestFailoverWaitLagging(t *testing.T) {
	illegal := verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.Illegal, lin.L1: lin.OK}
	for _, backend := range testBackends {
		for _, c := range []struct{ name, fencing string }{{"failover-wait-lagging", "off"}, {"cluster-failover-wait-lagging", "full"}} {
			t.Run(backend+"/"+c.name+"/"+c.fencing, func(t *testing.T) {
				t.Parallel()
				rep := runPlan(t, nil, scenario(t, c.name, onBackend(backend, func(p *plan.Plan) { p.Fencing = c.fencing })))
				assertVerdicts(t, rep, illegal)
				assertFaultsFired(t, rep)
				assertFailoverStruck(t, rep)
				h, err := histories.Load(rep.Dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range h.Faults {
					if w.Kind == "failover" && (w.Promoted == "" || !strings.Contains(w.Detail, "only "+w.Promoted+" was cut off")) {
						t.Errorf("failover window %q: promoted %q, want the replica that was cut off alone", w.Detail, w.Promoted)
					}
				}
				if t.Failed() {
					logHistory(t, rep)
				}
			})
		}
	}
}

// assertWindowSays fails unless the window of the fault of kind says each condition's
// words, naming each condition that did not come.
func assertWindowSays(t *testing.T, rep Report, kind string, conditions []struct{ says, condition string }) {
	t.Helper()
	h, err := histories.Load(rep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range h.Faults {
		if w.Kind != kind {
			continue
		}
		t.Logf("%s/fencing %s: %s (run %s)", rep.Plan.Name, rep.Plan.Fencing, w.Detail, rep.RunTime.Round(1e6))
		for _, c := range conditions {
			if !strings.Contains(w.Detail, c.says) {
				t.Errorf("%s window %q: %s did not come", kind, w.Detail, c.condition)
			}
		}
		return
	}
	t.Errorf("%s: no %s window", rep.Plan.Name, kind)
}

// assertFailoverStruck fails unless the failover killed the primary at a grant, a replica
// was promoted, the other client was granted by it and read while the first was held,
// and the first read before the other wrote: the conditions the violations are made of,
// each named when it did not come. It shows what the window says.
func assertFailoverStruck(t *testing.T, rep Report) {
	t.Helper()
	assertWindowSays(t, rep, "failover", []struct{ says, condition string }{
		{"acquire:granted", "the primary killed at a grant"},
		{"promoted", "a replica promoted"},
		{"granted by the new primary", "the other client granted by the new primary within the fault's duration"},
		{"and read, client", "the other client's read while the first was held"},
		{"wrote (client", "the first client's read before the other's write"},
		{"healed", "the heal"},
	})
}

// logHistory shows the run's operations, one line each, for a failed assertion.
func logHistory(t *testing.T, rep Report) {
	t.Helper()
	h, err := histories.Load(rep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, op := range h.Ops {
		fmt.Fprintf(&b, "%8.3f %8.3f  client %d p%-3d %-7s %-7s in %+v out %+v\n",
			float64(op.Call)/1e9, float64(op.Return)/1e9, op.Client, op.Process, op.Kind, op.Outcome, op.Input, op.Output)
	}
	t.Logf("history of %s/fencing %s:\n%s", rep.Plan.Name, rep.Plan.Fencing, b.String())
}

// The failover-loss story on a Redis Cluster, with each way its replica takes over: the
// cluster's own failover after the node timeout, CLUSTER FAILOVER FORCE and TAKEOVER.
// The replica never saw the grant nor the fence counter's increment (in the lock key's
// slot, on the same primary), so the checkers say what they say of failover-loss:
// P1, P2 and P3 violated, with and without fencing.
func TestClusterFailoverLoss(t *testing.T) {
	illegal := verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.Illegal, lin.L1: lin.OK}
	for _, backend := range testBackends {
		for _, mode := range []string{faults.FailoverCluster, faults.FailoverForce, faults.FailoverTakeover} {
			for _, fencing := range []string{"off", "full"} {
				if mode != faults.FailoverCluster && (fencing == "off" || backend == plan.BackendDocker) {
					// The mode changes who promotes, not what the store sees, nor what the
					// backend does: FORCE and TAKEOVER run once, on processes.
					continue
				}
				t.Run(backend+"/"+mode+"/"+fencing, func(t *testing.T) {
					t.Parallel()
					rep := runPlan(t, nil, scenario(t, "cluster-failover-loss", onBackend(backend, func(p *plan.Plan) {
						p.Faults[0].Mode = mode
						p.Fencing = fencing
					})))
					assertVerdicts(t, rep, illegal)
					assertFaultsFired(t, rep)
					assertFailoverStruck(t, rep)
					if t.Failed() {
						logHistory(t, rep)
					}
				})
			}
		}
	}
}

// The same on a Redis Cluster with WAIT 1 after each grant, the primary killed between
// the first client's grant and its WAIT: the WAIT fails on the dead primary, so that
// client never believes, and every property holds. Two replicas per primary: with one,
// the promoted replica is left with none to acknowledge, and every grant after the
// failover is refused until the dead primary rejoins (safe, not live).
func TestClusterFailoverWait(t *testing.T) {
	ok := verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}
	for _, backend := range testBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			rep := runPlan(t, nil, scenario(t, "cluster-failover-wait", onBackend(backend, nil)))
			assertVerdicts(t, rep, ok)
			assertFaultsFired(t, rep)
			assertWindowSays(t, rep, "failover", []struct{ says, condition string }{
				{"acquire:waiting", "the primary killed between a grant and its WAIT"},
				{"promoted", "a replica promoted"},
				{"granted by the new primary", "the other client granted by the new primary within the fault's duration"},
			})
			if t.Failed() {
				logHistory(t, rep)
			}
		})
	}
}
