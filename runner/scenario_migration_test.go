package runner

import (
	"slices"
	"testing"

	"github.com/locklab/locklab/histories"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
)

// Moving the lock's slot under a holder keeps every property: MIGRATE moves the lock with
// its remaining TTL and the fence counter with it, the holder's release follows ASK to
// the new node, and a refused or unanswered acquire meanwhile (TRYAGAIN while a script's
// two keys are split) is no grant.
func TestSlotMigration(t *testing.T) {
	for impl, ok := range map[string]verdicts{
		"setnx":  {lin.P1: lin.OK, lin.P2: lin.OK},
		"fenced": {lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.OK},
	} {
		t.Run(impl, func(t *testing.T) {
			t.Parallel()
			rep := runPlan(t, nil, scenario(t, "slot-migration", func(p *plan.Plan) { p.Impl = impl }))
			assertVerdicts(t, rep, ok)
			assertFaultsFired(t, rep)
			assertWindowSays(t, rep, "slot-migration", []struct{ says, condition string }{
				{"slot 8579 (of k0) migrating from redis-1 to redis-2", "k0's slot moved from its primary"},
				{"keys moved by MIGRATE", "the keys moved at injection"},
				{"healed: redis-2 serves slot 8579", "the slot assigned to redis-2 at heal"},
			})
			// The holder's first release came after the move, and found the lock on the
			// new node (ASK): released, not refused nor unknown.
			h, err := histories.Load(rep.Dir)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(h.Ops, func(op histories.Op) bool { return op.Process == 0 && op.Kind == histories.Release })
			if i < 0 || h.Ops[i].Outcome != histories.OK {
				t.Errorf("client 0's first release, after its lock moved: %+v, want ok", h.Ops[max(i, 0)])
			}
			if t.Failed() {
				logHistory(t, rep)
			}
		})
	}
}
