package runner

import (
	"testing"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
)

// TestEveryFaultHeals runs one plan with a fault of every family of the single topology,
// the last still active when the run ends. Run verifies after the schedule stops that
// servers answer, links are clean and clocks are back (faults.VerifyHealed), and fails
// otherwise; the correct lock with fencing full keeps the data safe through it all.
func TestEveryFaultHeals(t *testing.T) {
	ms := func(n int) plan.Duration { return plan.D(time.Duration(n) * time.Millisecond) }
	p := plan.Default()
	p.Name, p.Impl, p.Fencing, p.Clients, p.ServerClock = "every-fault", "fenced", "full", 3, "faketime"
	p.Persistence = "aof-always"
	p.Duration = ms(2000)
	p.Faults = []plan.FaultSpec{
		{Kind: "client-pause", At: ms(0), Duration: ms(300), Target: "client:0"},
		{Kind: "client-clock", At: ms(100), Duration: ms(300), Target: "client:1", Offset: ms(-200), Rate: 0.5},
		{Kind: "server-clock", At: ms(200), Duration: ms(200), Target: "lock-0", Offset: ms(1000), Mode: "faketime"},
		{Kind: "server-pause", At: ms(500), Duration: ms(200), Target: "lock-0"},
		{Kind: "net-latency", At: ms(800), Duration: ms(200), Target: "client:*->store", Latency: ms(50), Jitter: ms(10)},
		{Kind: "reply-delay", At: ms(1000), Duration: ms(200), Target: "client:2", Latency: ms(100)},
		{Kind: "net-reset", At: ms(1200), Duration: ms(100), Target: "client:1->lock-0"},
		{Kind: "server-crash", At: ms(1400), Duration: ms(100), Target: "lock-0"},
		{Kind: "net-blackhole", At: ms(1800), Duration: ms(10000), Target: "client:2->lock-0"}, // still on at the end
	}
	rep := runPlan(t, nil, p)
	assertVerdicts(t, rep, verdicts{lin.P2: lin.OK})
	if rep.Faults < len(p.Faults) {
		t.Errorf("%d fault windows for %d faults", rep.Faults, len(p.Faults))
	}
}
