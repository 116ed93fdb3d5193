package runner

import (
	"testing"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/plan"

	lin "github.com/locklab/locklab/linearizability"
)

// The job-queue scenarios: where a per-job lock still lets a job run twice (P4) or lose
// it (P5), each beside the configuration that holds.

func TestJobsWhereTheLockFails(t *testing.T) {
	cases := []struct {
		scenario, name string
		edit           func(*plan.Plan)
		want           verdicts
	}{
		{"jobs-redelivered-after-release", "lock", nil, verdicts{lin.P1: lin.OK, lin.P4: lin.Illegal, lin.P5: lin.OK}},
		{"jobs-redelivered-after-release", "idempotent", func(p *plan.Plan) { p.Jobs.Idempotent = true },
			verdicts{lin.P1: lin.OK, lin.P4: lin.OK, lin.P5: lin.OK}},
		{"jobs-longer-than-ttl", "fencing-off", nil, verdicts{lin.P1: lin.Illegal, lin.P4: lin.Illegal, lin.P5: lin.OK}},
		// The beliefs still collide, but the ledger refuses the late effect's older fence.
		{"jobs-longer-than-ttl", "fencing-full", func(p *plan.Plan) { p.Fencing = "full" },
			verdicts{lin.P1: lin.Illegal, lin.P3: lin.OK, lin.P4: lin.OK, lin.P5: lin.OK}},
		{"jobs-lock-restart", "lock", nil, verdicts{lin.P1: lin.Illegal, lin.P4: lin.Illegal, lin.P5: lin.OK}},
		// The fence counter died with the lock: fencing full lets both effects through.
		{"jobs-lock-restart", "fencing-full", func(p *plan.Plan) { p.Fencing = "full" },
			verdicts{lin.P1: lin.Illegal, lin.P3: lin.Illegal, lin.P4: lin.Illegal}},
		{"jobs-lock-restart", "idempotent", func(p *plan.Plan) { p.Jobs.Idempotent = true },
			verdicts{lin.P1: lin.Illegal, lin.P4: lin.OK, lin.P5: lin.OK}},
		{"jobs-skip-lost", "drop", nil, verdicts{lin.P1: lin.OK, lin.P4: lin.OK, lin.P5: lin.Illegal}},
		{"jobs-skip-lost", "retry", func(p *plan.Plan) { p.Jobs.OnTaken = "retry" },
			verdicts{lin.P1: lin.OK, lin.P4: lin.OK, lin.P5: lin.OK}},
		{"jobs-seed-reset", "drop", nil, verdicts{lin.P1: lin.OK, lin.P4: lin.OK, lin.P5: lin.Illegal}},
		{"jobs-seed-reset", "retry", func(p *plan.Plan) { p.Jobs.OnTaken = "retry" },
			verdicts{lin.P1: lin.OK, lin.P4: lin.OK, lin.P5: lin.OK}},
	}
	for _, c := range cases {
		t.Run(c.scenario+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			rep := runPlan(t, nil, scenario(t, c.scenario, c.edit))
			assertVerdicts(t, rep, c.want)
			assertFaultsFired(t, rep)
		})
	}
}

// TestJobsFaultFree: with no fault and a visibility timeout far longer than any job,
// every job runs exactly once, with and without the lock.
func TestJobsFaultFree(t *testing.T) {
	for _, lock := range []bool{false, true} {
		t.Run(map[bool]string{false: "no-lock", true: "lock"}[lock], func(t *testing.T) {
			t.Parallel()
			p := plan.Default()
			p.Name, p.Impl, p.Clients = "jobs-fault-free", "setnx", 3
			p.TTL, p.Duration, p.Work = plan.D(5e9), plan.D(1e9), plan.D(10e6)
			p.Workload = plan.WorkloadJobs
			p.Jobs = &plan.JobsSpec{Rate: 100, Count: 20, Visibility: plan.D(5e9), Lock: lock}
			rep := runPlan(t, nil, p)
			want := verdicts{lin.P4: lin.OK, lin.P5: lin.OK}
			if lock {
				want[lin.P1], want[lin.L1] = lin.OK, lin.OK
			}
			assertVerdicts(t, rep, want)
			if pr, _ := rep.Result.Property(lin.P5); pr.Ops < 100 {
				t.Errorf("P5 judged %d operations: the run made too few jobs to mean anything", pr.Ops)
			}
		})
	}
}

// TestJobsSameKey is the write-up's check: 4 workers, 100 jobs with the same key pushed
// at once. The first job holds the key's lock for its whole second of work, so every
// other delivery finds it taken: 1 runs, 99 are skipped (and, dropped, lost: P5).
func TestJobsSameKey(t *testing.T) {
	t.Parallel()
	for _, impl := range []string{"setnx", "seed-withlock"} {
		t.Run(impl, func(t *testing.T) {
			p := plan.Default()
			p.Name, p.Impl, p.Clients = "same-key", impl, 4
			p.TTL, p.Duration, p.Work = plan.D(10e9), plan.D(5e8), plan.D(2e9)
			p.Workload = plan.WorkloadJobs
			p.Jobs = &plan.JobsSpec{Count: 100, SameKey: true, Visibility: plan.D(30e9), Lock: true}
			rep := runPlan(t, nil, p)
			assertVerdicts(t, rep, verdicts{lin.P1: lin.OK, lin.P4: lin.OK, lin.P5: lin.Illegal})
			h, err := histories.Load(rep.Dir)
			if err != nil {
				t.Fatal(err)
			}
			ran, skipped := 0, 0
			for _, op := range h.Ops {
				switch {
				case op.Kind == histories.Effect && op.Outcome == histories.OK:
					ran++
				case op.Kind == histories.Skip:
					skipped++
				}
			}
			if ran != 1 || skipped != 99 {
				t.Errorf("%d jobs ran and %d were skipped, want 1 and 99", ran, skipped)
			}
		})
	}
}
