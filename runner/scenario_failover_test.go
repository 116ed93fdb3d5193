package runner

import (
	"fmt"
	"strings"
	"testing"

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

// assertFailoverStruck fails unless the failover killed the primary at a grant, a replica
// was promoted, the other client was granted by it and read while the first was held,
// and the first read before the other wrote: the conditions the violations are made of,
// each named when it did not come. It shows what the window says.
func assertFailoverStruck(t *testing.T, rep Report) {
	t.Helper()
	h, err := histories.Load(rep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range h.Faults {
		if w.Kind != "failover" {
			continue
		}
		t.Logf("%s/fencing %s: %s (run %s)", rep.Plan.Name, rep.Plan.Fencing, w.Detail, rep.RunTime.Round(1e6))
		for _, c := range []struct{ says, condition string }{
			{"acquire:granted", "the primary killed at a grant"},
			{"promoted", "a replica promoted"},
			{"granted by the new primary", "the other client granted by the new primary within the fault's duration"},
			{"and read, client", "the other client's read while the first was held"},
			{"wrote (client", "the first client's read before the other's write"},
			{"healed", "the heal"},
		} {
			if !strings.Contains(w.Detail, c.says) {
				t.Errorf("failover window %q: %s did not come", w.Detail, c.condition)
			}
		}
		return
	}
	t.Errorf("%s: no failover window", rep.Plan.Name)
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
