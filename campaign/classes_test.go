package campaign

import (
	"slices"
	"testing"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// TestClassesCoverTheCatalog: every catalog scenario with a violation is a class whose
// space holds the scenario's implementation and fault kinds, and the mutants' classes
// count only what their correct counterpart is expected to keep.
func TestClassesCoverTheCatalog(t *testing.T) {
	reg := locks.All()
	classes := Classes(reg)
	plans, err := plan.Scenarios(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		switch p.Name {
		case "baseline", "restart-aof-always", "leader-partition", "failover-wait", "cluster-failover-wait", "cluster-split-brain", "slot-migration", "cluster-failover-graceful":
			// Safe counterparts: leader-partition is etcd's to failover-loss, the -wait ones
			// WAIT's, cluster-split-brain the cluster's to split-brain, slot-migration a
			// reshard done as Redis prescribes, cluster-failover-graceful a failover that
			// waits for the replica.
			continue
		}
		if p.Name == "stop-the-world" || p.Name == "partitioned-holder" {
			// pause-past-ttl with the renewal stopped (the process frozen, or its links to the
			// lock servers cut); that class searches setnx, which has no renewal to stop.
			continue
		}
		if p.Workload == plan.WorkloadJobs {
			continue // the job-queue scenarios fix their lock and are asserted in runner's tests, not searched by class
		}
		i := slices.IndexFunc(classes, func(c Class) bool { return slices.Contains(c.Scenarios, p.Name) })
		if i < 0 {
			t.Errorf("scenario %s belongs to no class", p.Name)
			continue
		}
		c := classes[i]
		if len(c.Space.Impls) > 0 && !slices.Contains(c.Space.Impls, p.Impl) && !(p.Impl == "fenced" && slices.Contains(c.Space.Impls, "setnx")) {
			t.Errorf("class %s does not draw %s, the implementation of scenario %s", c.ID, p.Impl, p.Name)
		}
		// The class draws the scenario's essential fault (slow-grant's scenario also uses a
		// latency, only to arrange who takes the lock first).
		none := len(c.Space.Faults) == 1 && c.Space.Faults[0] == NoFaults
		if len(p.Faults) > 0 && (none || !slices.ContainsFunc(p.Faults, func(f plan.FaultSpec) bool {
			return len(c.Space.Faults) == 0 || slices.Contains(c.Space.Faults, f.Kind)
		})) {
			t.Errorf("class %s draws none of the fault kinds of scenario %s (%s)", c.ID, p.Name, faultKinds(p))
		}
	}
	for _, impl := range reg.List() {
		if impl.Mutant && !slices.ContainsFunc(classes, func(c Class) bool { return slices.Contains(c.Space.Impls, impl.Name) }) {
			t.Errorf("mutant %s has no class", impl.Name)
		}
	}
	// check-then-set under a pause before the write: the pause alone breaks P1 of the
	// correct lock, so that run does not count as finding the mutant; without faults it does.
	c, _ := ClassByID(reg, "check-then-set")
	p := plan.Default()
	p.Impl = "check-then-set"
	if got := c.Detects(p, []lin.Property{lin.P1}); !slices.Equal(got, []lin.Property{lin.P1}) {
		t.Errorf("fault-free check-then-set P1: detects %v", got)
	}
	p.Faults = []plan.FaultSpec{{Kind: "client-pause", Target: "client:0", Point: "before-write", Duration: plan.D(time.Second)}}
	if got := c.Detects(p, []lin.Property{lin.P1}); len(got) != 0 {
		t.Errorf("check-then-set with a pause before the write: detects %v", got)
	}
	// unsafe-extend under a pause before its extend: P1 breaks for setnx too, P6 does not.
	c, _ = ClassByID(reg, "unsafe-extend")
	p.Impl, p.Extend = "unsafe-extend", 1
	p.Faults[0].Point = "before-extend"
	if got := c.Detects(p, []lin.Property{lin.P1, lin.P2, lin.P6}); !slices.Equal(got, []lin.Property{lin.P6}) {
		t.Errorf("unsafe-extend with a pause before its extend: detects %v, want P6 alone", got)
	}
}
