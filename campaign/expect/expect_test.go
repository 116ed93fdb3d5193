package expect

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

func props(m map[lin.Property]bool) []lin.Property {
	var out []lin.Property
	for _, p := range lin.AllProperties() {
		if m[p] {
			out = append(out, p)
		}
	}
	return out
}

// TestExpectedTable: the rules say what the models guarantee, no more.
func TestExpectedTable(t *testing.T) {
	reg := locks.All()
	all := []lin.Property{lin.P1, lin.P2, lin.P3, lin.L1, lin.P6}
	base := func(impl, topo, fencing string, faults ...plan.FaultSpec) plan.Plan {
		p := plan.Default()
		p.Impl, p.Topology, p.Fencing, p.Faults = impl, topo, fencing, faults
		p.TTL, p.Work = plan.D(500*time.Millisecond), plan.D(20*time.Millisecond)
		return p
	}
	pause := func(point string) plan.FaultSpec {
		return plan.FaultSpec{Kind: "client-pause", Target: "client:0", Point: point, Duration: plan.D(time.Second)}
	}
	crashLock := plan.FaultSpec{Kind: "server-crash", Target: "lock-0"}
	storeLatency := plan.FaultSpec{Kind: "net-latency", Target: "client:0->store", Latency: plan.D(time.Second), Duration: plan.D(time.Second)}
	lockLatency := plan.FaultSpec{Kind: "net-latency", Target: "client:*->redis-0", Latency: plan.D(time.Second), Duration: plan.D(time.Second)}
	with := func(p plan.Plan, edit func(*plan.Plan)) plan.Plan { edit(&p); return p }
	for _, c := range []struct {
		name string
		p    plan.Plan
		want []lin.Property
	}{
		{"mutant without faults", base("check-then-set", "single", "off"), nil},
		{"setnx without faults", base("setnx", "single", "off"), all},
		{"redlock without faults", base("redlock", "nodes:3", "off"), all},
		// Progress does not depend on the work: a lease outlived by its work has expired.
		{"work a third of the ttl", with(base("setnx", "single", "off"), func(p *plan.Plan) { p.Work = plan.D(170 * time.Millisecond) }), []lin.Property{lin.L1, lin.P6}},
		{"work over the ttl, fencing full", with(base("fenced", "single", "full"), func(p *plan.Plan) { p.Work = plan.D(time.Second) }), []lin.Property{lin.P2, lin.P3, lin.L1, lin.P6}},
		{"client crash", base("fenced", "single", "off", plan.FaultSpec{Kind: "client-crash", Target: "any", Point: "acquire:granted"}), all},
		{"client crash on redlock", base("redlock", "nodes:3", "off", plan.FaultSpec{Kind: "client-crash", Target: "any"}), nil},
		{"pause in release", base("setnx", "single", "off", pause("in-release")), all},
		{"pause before write, off", base("fenced", "single", "off", pause("before-write")), []lin.Property{lin.P3, lin.L1, lin.P6}},
		{"pause before write, writes", base("fenced", "single", "writes", pause("before-write")), []lin.Property{lin.P3, lin.L1, lin.P6}},
		{"pause before write, full", base("fenced", "single", "full", pause("before-write")), []lin.Property{lin.P2, lin.P3, lin.L1, lin.P6}},
		// A server that forgot the lease refuses the holder's late extend or release all the same.
		{"lock crash, no persistence", base("fenced", "single", "full", crashLock), []lin.Property{lin.P6}},
		{"lock crash, aof-everysec", with(base("fenced", "single", "full", crashLock), func(p *plan.Plan) { p.Persistence = "aof-everysec" }), []lin.Property{lin.P6}},
		{"lock crash, aof-always", with(base("fenced", "single", "full", crashLock), func(p *plan.Plan) { p.Persistence = "aof-always" }), []lin.Property{lin.P2, lin.P3, lin.P6}},
		{"store crash", base("fenced", "single", "full", plan.FaultSpec{Kind: "server-crash", Target: "store"}), []lin.Property{lin.P3, lin.L1, lin.P6}},
		{"clock jump, full", base("fenced", "single", "full", plan.FaultSpec{Kind: "server-clock", Target: "lock-0", Offset: plan.D(time.Second), Duration: plan.D(time.Second)}), []lin.Property{lin.P2, lin.P3, lin.P6}},
		{"failover", base("fenced", "replicated", "full", plan.FaultSpec{Kind: "failover", Target: "any", Point: "acquire:granted", Duration: plan.D(time.Second)}), nil},
		{"replicated, store latency", base("fenced", "replicated", "full", storeLatency), []lin.Property{lin.P2, lin.P3, lin.L1, lin.P6}},
		{"replicated, lock latency", base("fenced", "replicated", "full", lockLatency), nil},
		{"single, store latency", base("setnx", "single", "off", storeLatency), []lin.Property{lin.L1, lin.P6}},
		// A client process of its own may receive its grant after the lease: no P1 claim.
		{"redis-py client crash", base("redis-py", "single", "off", plan.FaultSpec{Kind: "client-crash", Target: "any"}), []lin.Property{lin.P2, lin.P3, lin.L1, lin.P6}},
		{"node-redlock without faults", base("node-redlock", "nodes:3", "off"), []lin.Property{lin.P2, lin.P3, lin.L1, lin.P6}},
		{"node-redlock without faults, careless", with(base("node-redlock", "nodes:3", "off"), func(p *plan.Plan) { p.Careless = true }), []lin.Property{lin.P3, lin.L1}},
		{"node-redlock, late grant, careful", base("node-redlock", "nodes:3", "off", plan.FaultSpec{Kind: "reply-delay", Target: "client:0", Latency: plan.D(300 * time.Millisecond), Duration: plan.D(time.Second)}), []lin.Property{lin.P2}},
		{"redislock retrying, client crash", with(base("redislock", "single", "off", plan.FaultSpec{Kind: "client-crash", Target: "any"}), func(p *plan.Plan) {
			p.ImplOptions = map[string]json.RawMessage{"retry": json.RawMessage(`"linear"`)}
		}), nil},
		{"redislock, neutral option only", with(base("redislock", "single", "off"), func(p *plan.Plan) {
			p.ImplOptions = map[string]json.RawMessage{"retry_backoff": json.RawMessage(`"1ms"`)}
		}), all},
		{"watchdog, thread pause past the lease", with(base("watchdog", "single", "off", pause("before-write")), func(p *plan.Plan) { p.Work = plan.D(time.Second) }), []lin.Property{lin.P1, lin.P2}},
		{"watchdog, thread pause, careless", with(base("watchdog", "single", "off", pause("before-write")), func(p *plan.Plan) { p.Careless = true }), nil},
		{"watchdog, pause at its grant step", base("watchdog", "single", "off", pause("acquire:granted")), nil},
		{"watchdog, pause at the default point", base("watchdog", "single", "off", pause("")), []lin.Property{lin.P1, lin.P2}},
		{"etcd, pause in release", base("etcd", "etcd:3", "off", pause("in-release")), []lin.Property{lin.P1, lin.P2, lin.P3}},
		{"watchdog without faults, work over the ttl", with(base("watchdog", "single", "off"), func(p *plan.Plan) { p.Work = plan.D(time.Second) }), []lin.Property{lin.P1, lin.P2}},
		{"watchdog without faults, work over the ttl, careless", with(base("watchdog", "single", "off"), func(p *plan.Plan) { p.Work, p.Careless = plan.D(time.Second), true }), nil},
		{"watchdog-process, thread pause", base("watchdog-process", "single", "off", pause("before-write")), nil},
		{"watchdog, stop-the-world pause", base("watchdog", "single", "off", plan.FaultSpec{Kind: "client-pause", Target: "client:0", Mode: "process", Duration: plan.D(time.Second)}), nil},
		{"redsync, late grant, careful", base("redsync", "nodes:3", "off", plan.FaultSpec{Kind: "reply-delay", Target: "client:0", Latency: plan.D(300 * time.Millisecond), Duration: plan.D(time.Second)}), []lin.Property{lin.P1, lin.P2}},
		{"redsync, late grant, careless", with(base("redsync", "nodes:3", "off", plan.FaultSpec{Kind: "reply-delay", Target: "client:0", Latency: plan.D(300 * time.Millisecond), Duration: plan.D(time.Second)}), func(p *plan.Plan) { p.Careless = true }), nil},
	} {
		impl, err := reg.Get(c.p.Impl)
		if err != nil {
			t.Fatal(err)
		}
		if got := props(Expected(c.p, impl)); !slices.Equal(got, c.want) {
			t.Errorf("%s: expected %v, want %v (rules %v)", c.name, got, c.want, ExpectedBy(c.p, impl))
		}
	}
}

// TestExpectedNeverContradictsTheCatalog: no rule expects a property that a catalog
// scenario is documented (docs/matrix.md, scenario tests) to violate, in any fencing mode.
func TestExpectedNeverContradictsTheCatalog(t *testing.T) {
	reg := locks.All()
	// scenario → fencing mode → properties it violates ("*" for every mode).
	violates := map[string]map[string][]lin.Property{
		"pause-past-ttl":       {"*": {lin.P1}, "off": {lin.P2}},
		"check-then-set":       {"*": {lin.P1}},
		"unsafe-release":       {"*": {lin.P1, lin.P6}},
		"late-extend":          {"*": {lin.P1}},
		"split-brain":          {"*": {lin.P6}},
		"no-expiry":            {"*": {lin.L1}},
		"ttl-too-short":        {"*": {lin.P1}, "off": {lin.P2}},
		"server-pause":         {"*": {lin.P1}},
		"slow-write":           {"*": {lin.P1}, "off": {lin.P2}},
		"slow-grant":           {"*": {lin.P1}, "off": {lin.P2}},
		"clock-jump":           {"*": {lin.P1}, "off": {lin.P2}},
		"restart-amnesia":      {"*": {lin.P1, lin.P2, lin.P3}},
		"failover-loss":        {"*": {lin.P1, lin.P3}},
		"failover-loss-manual": {"*": {lin.P1, lin.P3}},
		"unfenced-read":        {"off": {lin.P2}, "writes": {lin.P2}},
		"stop-the-world":       {"*": {lin.P1}, "off": {lin.P2}},
	}
	plans, err := plan.Scenarios(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		impl, _ := reg.Get(p.Impl)
		for _, mode := range []string{"off", "writes", "full"} {
			if mode != "off" && !impl.Fencing {
				continue
			}
			q := p.WithFencing(mode)
			exp := Expected(q, impl)
			for _, prop := range append(slices.Clone(violates[p.Name]["*"]), violates[p.Name][mode]...) {
				if exp[prop] {
					t.Errorf("scenario %s with fencing %s violates %s, but rule %s expects it to hold", p.Name, mode, prop, ExpectedBy(q, impl)[prop])
				}
			}
		}
	}
	// The safe counterparts are expected safe where the models say so.
	for name, want := range map[string][]lin.Property{"baseline": {lin.P1, lin.P2, lin.P3, lin.L1}, "restart-aof-always": {lin.P3}} {
		p, err := plan.Scenario(name, reg)
		if err != nil {
			t.Fatal(err)
		}
		impl, _ := reg.Get(p.Impl)
		for _, prop := range want {
			if !Expected(p, impl)[prop] {
				t.Errorf("scenario %s: %s not expected to hold", name, prop)
			}
		}
	}
}
