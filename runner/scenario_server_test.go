package runner

import (
	"testing"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
)

// Scenarios whose fault strikes a Redis server: its process (pause, crash and restart) or
// its wall clock. Each is scripted with a trigger, so the fault strikes at the same step
// every run, on margins of hundreds of milliseconds (see each scenario's description).

type serverCase struct {
	name string
	edit func(*plan.Plan)
	want verdicts
}

func runServerCases(t *testing.T, scenarioName string, cases []serverCase) {
	t.Helper()
	for _, backend := range testBackends {
		for _, c := range cases {
			t.Run(backend+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				rep := runPlan(t, nil, scenario(t, scenarioName, onBackend(backend, c.edit)))
				assertVerdicts(t, rep, c.want)
				assertFaultsFired(t, rep)
			})
		}
	}
}

// withFencing is the plan under another fencing mode.
func withFencing(mode string) func(*plan.Plan) { return func(p *plan.Plan) { p.Fencing = mode } }

// withEmulatedClock is the plan with its clock faults emulated by TTL shaving, on lock servers
// that keep their real clocks.
func withEmulatedClock(mode string) func(*plan.Plan) {
	return func(p *plan.Plan) {
		p.Fencing, p.ServerClock = mode, ""
		for i := range p.Faults {
			p.Faults[i].Mode = "emulated"
		}
	}
}

func TestServerPause(t *testing.T) {
	// The lock server frozen instead of the store, for 1 s from 100 ms into the first
	// holder's 300 ms of work: the other client's next acquire queues first, then the
	// holder's release, and when the server continues the lease has expired. The clients
	// are careless (no validity check), so that the late grant is used, not given back.
	lockServer := func(impl string) func(*plan.Plan) {
		return func(p *plan.Plan) {
			p.Impl, p.Work, p.Careless = impl, plan.D(300*time.Millisecond), true
			f := &p.Faults[0]
			f.Target, f.Trigger, f.At, f.Duration = "lock-0", "any@acquire:granted", plan.D(100*time.Millisecond), plan.D(time.Second)
		}
	}
	runServerCases(t, "server-pause", []serverCase{
		// The holder believes while its write waits in the frozen store and the other client
		// takes the lock; the store applies the write before the other's read, so no update
		// is lost, fencing or not.
		{"store/off", withFencing("off"), verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
		{"store/full", withFencing("full"), verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
		// A frozen lock server stalls everyone alike: the late grant comes with a full lease
		// counted from the server's resumption, the holder's compare-and-delete release
		// finds it is not its lock, and the textbook lock stays safe.
		{"lock-server/fenced", lockServer("fenced"), verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
		// A release that stalled in the frozen server is applied right after the queued
		// acquire took the lock: a plain DEL frees the new holder's lock, and the old holder
		// takes it again while the new one still believes.
		{"lock-server/unsafe-release", lockServer("unsafe-release"), verdicts{lin.P1: lin.Illegal}},
	})
}

func TestClockJump(t *testing.T) {
	runServerCases(t, "clock-jump", []serverCase{
		// The lease expires early by the server's clock: two holders, one update lost.
		{"off", withFencing("off"), verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.OK, lin.L1: lin.OK}},
		// The second holder's larger fence reaches the store first: the stale write is refused.
		{"full", withFencing("full"), verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
		// The portable emulation on a server with its real clock: the same verdicts.
		{"emulated/off", withEmulatedClock("off"), verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.OK, lin.L1: lin.OK}},
		{"emulated/full", withEmulatedClock("full"), verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
	})
}

func TestRestartAmnesia(t *testing.T) {
	runServerCases(t, "restart-amnesia", []serverCase{
		// The restarted server forgot the lock and its fence counter: two holders with the
		// same fence, and one update lost.
		{"off", withFencing("off"), verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.Illegal, lin.L1: lin.OK}},
		// Fencing does not save the data: the repeated fence is not smaller than the
		// largest the store has seen, so both holders' writes are accepted.
		{"full", withFencing("full"), verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.Illegal, lin.L1: lin.OK}},
	})
}

func TestRestartAOFAlways(t *testing.T) {
	runServerCases(t, "restart-aof-always", []serverCase{
		{"off", withFencing("off"), verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
		{"full", withFencing("full"), verdicts{lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
	})
}
