package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
)

// slotMigration is baseline on a Redis Cluster with k0's slot (8579, redis-1's) moved to
// redis-2 while client 0 holds the lock: client 0 is held right after its first grant
// until every key of the slot has moved, and the slot stays half moved (ASK) for a
// second before every primary assigns it to redis-2 (MOVED).
func slotMigration(impl string) func(*plan.Plan) {
	return func(p *plan.Plan) {
		p.Name = "slot migration while the lock is held"
		p.Impl, p.Topology, p.Clients, p.Keys = impl, "cluster:3x1", 2, 1
		p.TTL, p.Duration = plan.D(2*time.Second), plan.D(3*time.Second)
		p.Faults = []plan.FaultSpec{{Kind: "slot-migration", Trigger: "client:0@after-acquire", Duration: plan.D(time.Second)}}
	}
}

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
			rep := runPlan(t, nil, scenario(t, "baseline", slotMigration(impl)))
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
