package runner

import (
	"strconv"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"

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

// TestJobsRedeliveryRegimes: the two regimes of a re-delivery, made by construction. Four
// jobs at once, twice as many workers as jobs, and every job's first run stalls until the
// queue has re-delivered it (its 200 ms visibility timeout) and 1 s more: during the job
// with its lock held (before-write), or after its side effect and the release
// (before-ack). The re-delivered copy never stalls. What each setting gives follows from
// the order the stall imposes; the only timing left is an idle worker taking the copy and
// asking for its lock within that second.
func TestJobsRedeliveryRegimes(t *testing.T) {
	const jobs = 4
	cases := []struct {
		name    string
		at      string // where the first run stalls
		edit    func(*plan.JobsSpec)
		want    verdicts
		effects int  // ok side effects per job: each job's count in the ledger
		atLeast bool // effects is a floor: a copy may itself outlast its visibility timeout on a slow machine
		skipped bool // every job's copy is skipped
		failed  bool // every first run fails after its stall
	}{
		// (a) The copy arrives while the first run holds the lock: without one it runs too;
		// with one it is skipped, and the job runs once.
		{"held/no-lock", "before-write", nil, verdicts{lin.P4: lin.Illegal, lin.P5: lin.OK}, 2, true, false, false},
		{"held/lock", "before-write", func(j *plan.JobsSpec) { j.Lock = true }, verdicts{lin.P1: lin.OK, lin.P4: lin.OK, lin.P5: lin.OK}, 1, false, true, false},
		// The skipped copy was acknowledged; the first run then fails: nobody runs the job.
		{"held/lock-first-fails", "before-write", func(j *plan.JobsSpec) { j.Lock, j.Stall.Fail = true, 1 },
			verdicts{lin.P1: lin.OK, lin.P4: lin.OK, lin.P5: lin.Illegal}, 0, false, true, true},
		// The idempotency record alone: the copy runs, and the first run's late effect is refused.
		{"held/idempotent", "before-write", func(j *plan.JobsSpec) { j.Idempotent = true }, verdicts{lin.P4: lin.OK, lin.P5: lin.OK}, 1, false, false, false},
		// (b) The copy arrives after the first run released the lock: the lock cannot help.
		{"released/lock", "before-ack", func(j *plan.JobsSpec) { j.Lock = true }, verdicts{lin.P1: lin.OK, lin.P4: lin.Illegal, lin.P5: lin.OK}, 2, true, false, false},
		// Held until the ack, the lock is there when the copy comes: skipped.
		{"released/lock-until-ack", "before-ack", func(j *plan.JobsSpec) { j.Lock, j.Release = true, plan.ReleaseAfterAck },
			verdicts{lin.P1: lin.OK, lin.P4: lin.OK, lin.P5: lin.OK}, 1, false, true, false},
		{"released/idempotent", "before-ack", func(j *plan.JobsSpec) { j.Idempotent = true }, verdicts{lin.P4: lin.OK, lin.P5: lin.OK}, 1, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := plan.Default()
			p.Name, p.Impl, p.Clients = "jobs-regime", "setnx", 2*jobs
			p.TTL, p.Duration, p.Work = plan.D(10*time.Second), plan.D(300*time.Millisecond), plan.D(20*time.Millisecond)
			p.Workload = plan.WorkloadJobs
			p.Jobs = &plan.JobsSpec{Count: jobs, Visibility: plan.D(200 * time.Millisecond),
				Stall: &plan.StallSpec{Rate: 1, At: c.at, After: plan.D(time.Second)}}
			if c.edit != nil {
				c.edit(p.Jobs)
			}
			rep := runPlan(t, nil, p)
			assertVerdicts(t, rep, c.want)
			h, err := histories.Load(rep.Dir)
			if err != nil {
				t.Fatal(err)
			}
			tally, skipped, failed := map[string]int64{}, map[string]int{}, 0
			for _, op := range h.Ops {
				switch {
				case op.Kind == histories.Tally && op.Key != histories.TallyEnd:
					tally[op.Key] = op.Output.Value
				case op.Kind == histories.Skip:
					skipped[op.Key]++
				case op.Kind == histories.Effect && op.Output.Error == workload.ErrJobFailed.Error():
					failed++
				}
			}
			for i := range jobs {
				name := "j" + strconv.Itoa(i)
				if n := tally[name]; n != int64(c.effects) && (!c.atLeast || n < int64(c.effects)) {
					t.Errorf("job %s has %d side effects in the ledger, want %d", name, n, c.effects)
				}
				if c.skipped && skipped[name] == 0 {
					t.Errorf("job %s's copy was never skipped", name)
				}
				if !c.skipped && skipped[name] != 0 {
					t.Errorf("job %s skipped %d times, want none", name, skipped[name])
				}
			}
			if want := map[bool]int{true: jobs}[c.failed]; failed != want {
				t.Errorf("%d runs failed after their stall, want %d", failed, want)
			}
		})
	}
}
