package timeline

import (
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
)

const ms = int64(time.Millisecond)

// Synthetic operations, times in ms.

func acquire(proc, client int, call, ret, fence int64, nodes ...int) histories.Op {
	return histories.Op{Process: proc, Client: client, Key: "k0", Kind: histories.Acquire, Input: histories.Input{TTL: 500 * time.Millisecond},
		Output: histories.Output{Fence: fence, Nodes: nodes}, Outcome: histories.OK, Call: call * ms, Return: ret * ms}
}

func refused(proc, client int, call, ret int64) histories.Op {
	op := acquire(proc, client, call, ret, 0)
	op.Outcome, op.Output = histories.Fail, histories.Output{Error: "lock not acquired"}
	return op
}

func release(proc, client int, call, ret int64, out histories.Outcome) histories.Op {
	return histories.Op{Process: proc, Client: client, Key: "k0", Kind: histories.Release, Outcome: out, Call: call * ms, Return: ret * ms}
}

func write(proc, client int, call, ret, value, fence int64, out histories.Outcome) histories.Op {
	return histories.Op{Process: proc, Client: client, Key: "k0", Kind: histories.Write, Input: histories.Input{Value: value, Fence: fence},
		Outcome: out, Call: call * ms, Return: ret * ms}
}

func single(ops []histories.Op, faults ...histories.FaultWindow) histories.History {
	return histories.History{Meta: histories.Meta{Fencing: "off", TTL: 500 * time.Millisecond, Impl: "fenced", Servers: []string{"lock-0"}, Topology: "single"},
		Ops: ops, Faults: faults}
}

// pausePastTTL is Kleppmann's first picture: client 0's lease runs out while it is
// paused, client 1 takes the lock and writes, client 0 wakes and writes.
func pausePastTTL() Run {
	h := single([]histories.Op{
		acquire(0, 0, 10, 12, 1),
		acquire(2, 1, 600, 602, 2),
		write(3, 1, 650, 651, 1, 2, histories.OK),
		release(2, 1, 660, 661, histories.OK),
		write(1, 0, 1600, 1601, 1, 1, histories.Fail),
		release(0, 0, 1602, 1603, histories.Fail),
	}, histories.FaultWindow{Kind: "client-pause", Target: "client:0", Start: 20 * ms, End: 1590 * ms, Detail: "1.5s at before-write"})
	h.Meta.Fencing = "full"
	return Run{History: h, Title: "pause <past> & ttl", Result: linearizability.Result{Verdict: linearizability.Illegal, Fencing: "full",
		Properties: []linearizability.PropertyResult{
			{Property: linearizability.P1, Verdict: linearizability.Illegal, Explanation: "process 2 (client 1) acquired lock \"k0\" at 0.602 s while process 0 (client 0) believed", At: 602 * ms, Until: 1602 * ms},
			{Property: linearizability.P2, Verdict: linearizability.OK},
			{Property: linearizability.P3, Verdict: linearizability.Unknown, Explanation: "timed out"},
			{Property: linearizability.L1, Verdict: linearizability.OK},
		}}}
}

func leasesOn(m *model, server string) []lease {
	i := slices.IndexFunc(m.servers, func(s serverLane) bool { return s.name == server })
	if i < 0 {
		return nil
	}
	return m.servers[i].leases
}

func TestLanesOnePerClientServerAndStore(t *testing.T) {
	h := pausePastTTL().History
	h.Ops = append(h.Ops, refused(4, 3, 5, 6)) // a client with nothing but a refusal still has its lane
	h.Meta.Servers, h.Meta.Topology = []string{"lock-0", "lock-1", "lock-2"}, "nodes:3"
	m := build(Run{History: h})
	var clients []int
	for _, c := range m.clients {
		clients = append(clients, c.client)
	}
	if !slices.Equal(clients, []int{0, 1, 2, 3}) {
		t.Errorf("client lanes %v, want 0..3", clients)
	}
	if len(m.servers) != 3 || m.servers[2].name != "lock-2" {
		t.Errorf("server lanes %+v, want lock-0..2", m.servers)
	}
	if got := len(m.client(0).faults); got != 1 {
		t.Errorf("client 0 has %d faults, want its pause", got)
	}
}

func TestServersFallBackToFaultTargets(t *testing.T) {
	h := single(nil, histories.FaultWindow{Kind: "net-blackhole", Target: "client:0->lock-3", Start: 0, End: ms},
		histories.FaultWindow{Kind: "server-pause", Target: "lock-1", Start: 0, End: ms})
	h.Meta.Servers = nil
	m := build(Run{History: h})
	var names []string
	for _, s := range m.servers {
		names = append(names, s.name)
	}
	if !slices.Equal(names, []string{"lock-0", "lock-1", "lock-3"}) {
		t.Errorf("servers %v", names)
	}
	if len(m.client(0).faults) != 1 || m.client(0).faults[0].label != "link to lock-3 cut 1ms" {
		t.Errorf("the link fault is not on client 0's lane: %+v", m.client(0).faults)
	}
}

// A clock jump of +2 s on the server ends a 500 ms lease at once: its expiry E becomes
// max(jump, E-2s), and the belief that outlives it is in danger from there.
func TestClockJumpShortensTheLease(t *testing.T) {
	h := single([]histories.Op{
		acquire(0, 0, 10, 12, 0),
		release(0, 0, 400, 401, histories.Fail),
		acquire(2, 1, 100, 101, 0), // after the jump: a full lease by the jumped clock
	}, histories.FaultWindow{Kind: "server-clock", Target: "lock-0", Start: 15 * ms, End: 900 * ms, Offset: 2 * time.Second})
	m := build(Run{History: h})
	ls := leasesOn(m, "lock-0")
	if len(ls) != 2 {
		t.Fatalf("leases %+v", ls)
	}
	if ls[0].end() != 15*ms {
		t.Errorf("the lease live at the jump ends at %d, want the jump's start %d", ls[0].end(), 15*ms)
	}
	if ls[1].end() != 600*ms {
		t.Errorf("the lease granted after the jump ends at %d, want 600 ms", ls[1].end())
	}
	b := m.client(0).beliefs
	if len(b) != 1 || !slices.Equal(b[0].danger, []span{{15 * ms, 400 * ms}}) {
		t.Errorf("client 0's belief %+v, want danger 15–400 ms", b)
	}
	if len(m.servers[0].marks) != 1 || m.servers[0].marks[0].at != 15*ms {
		t.Errorf("no jump marker on lock-0: %+v", m.servers[0].marks)
	}
	// A jump of the other server's clock changes nothing here.
	h.Faults[0].Target = "lock-1"
	if ls := leasesOn(build(Run{History: h}), "lock-0"); ls[0].end() != 100*ms {
		t.Errorf("with no jump the lease ends at the next grant, %d", ls[0].end())
	}
}

func TestLeaseEnds(t *testing.T) {
	ext := histories.Op{Process: 0, Client: 0, Key: "k0", Kind: histories.Extend, Input: histories.Input{TTL: 500 * time.Millisecond}, Outcome: histories.OK, Call: 300 * ms, Return: 301 * ms}
	m := build(Run{History: single([]histories.Op{acquire(0, 0, 0, 1, 0), ext, release(0, 0, 700, 702, histories.OK)})})
	if l := leasesOn(m, "lock-0")[0]; l.end() != 702*ms || l.expiry != 800*ms {
		t.Errorf("extended then released lease: end %d expiry %d, want 702 ms, 800 ms", l.end(), l.expiry)
	}
	m = build(Run{History: single([]histories.Op{acquire(0, 0, 0, 1, 0), acquire(2, 1, 800, 801, 0)})})
	if l := leasesOn(m, "lock-0")[0]; l.end() != 500*ms {
		t.Errorf("unreleased lease ends at %d, want Call+TTL", l.end())
	}
}

func TestServerCrashForgetsWithoutPersistence(t *testing.T) {
	crash := histories.FaultWindow{Kind: "server-crash", Target: "lock-0", Start: 100 * ms, End: 150 * ms}
	h := single([]histories.Op{acquire(0, 0, 0, 1, 0)}, crash)
	if l := leasesOn(build(Run{History: h}), "lock-0")[0]; l.end() != 100*ms {
		t.Errorf("without persistence the lease ends at %d, want the crash", l.end())
	}
	h.Meta.Persistence = "aof-always"
	if l := leasesOn(build(Run{History: h}), "lock-0")[0]; l.end() != 500*ms {
		t.Errorf("with aof-always the lease ends at %d, want its TTL: the server kept it", l.end())
	}
}

func TestRenewedLeaseLastsUntilTaken(t *testing.T) {
	h := single([]histories.Op{acquire(0, 0, 0, 1, 0), write(1, 0, 100, 101, 1, 0, histories.OK), acquire(2, 1, 1700, 1702, 0)})
	if l := leasesOn(build(Run{History: h}), "lock-0")[0]; l.end() != 500*ms {
		t.Errorf("a lease not renewed ends at %d, want its TTL after the grant", l.end())
	}
	h.Meta.Renews = true // a watchdog kept it alive until the holder died or let go
	if l := leasesOn(build(Run{History: h}), "lock-0")[0]; l.end() != 1700*ms || !l.renewed {
		t.Errorf("a renewed lease ends at %d (renewed %v), want the next grant's call", l.end(), l.renewed)
	}
}

func TestRedlockLeasesOnTheNodesThatGranted(t *testing.T) {
	h := single([]histories.Op{acquire(0, 0, 0, 5, 0, 0, 2, 4), release(0, 0, 100, 101, histories.OK)})
	h.Meta.Servers = []string{"lock-0", "lock-1", "lock-2", "lock-3", "lock-4"}
	h.Meta.Topology, h.Meta.Impl = "nodes:5", "redlock"
	m := build(Run{History: h})
	for i, s := range m.servers {
		want := i%2 == 0
		if got := len(s.leases) == 1; got != want {
			t.Errorf("%s has leases %+v, want a lease: %v", s.name, s.leases, want)
		}
		for _, l := range s.leases {
			if l.unsure {
				t.Errorf("%s: a recorded node's lease is drawn unsure", s.name)
			}
		}
	}
	if len(m.notes) != 0 {
		t.Errorf("notes %v", m.notes)
	}
	h.Ops[0].Output.Nodes = nil // a library that does not say
	m = build(Run{History: h})
	for _, s := range m.servers {
		if len(s.leases) != 1 || !s.leases[0].unsure {
			t.Errorf("%s: want one unsure lease, got %+v", s.name, s.leases)
		}
	}
	if len(m.notes) != 1 {
		t.Errorf("want a legend note on the unrecorded nodes, got %v", m.notes)
	}
	if svg := string(render(m)); !contains(svg, `class="lease unsure"`) || !contains(svg, "does not record which nodes") {
		t.Error("the SVG has no dashed lease or no note")
	}
}

// Redlock's lock is held while a majority of nodes hold it: losing one of three grants
// on five nodes puts the belief in danger.
func TestRedlockDangerNeedsAMajority(t *testing.T) {
	h := single([]histories.Op{acquire(0, 0, 0, 5, 0, 0, 1, 2), release(0, 0, 300, 301, histories.Fail)},
		histories.FaultWindow{Kind: "server-clock", Target: "lock-1", Start: 100 * ms, End: 200 * ms, Offset: time.Second})
	h.Meta.Servers = []string{"lock-0", "lock-1", "lock-2", "lock-3", "lock-4"}
	h.Meta.Topology = "nodes:5"
	b := build(Run{History: h}).client(0).beliefs[0]
	if !slices.Equal(b.danger, []span{{100 * ms, 300 * ms}}) {
		t.Errorf("danger %v, want 100–300 ms", b.danger)
	}
}

func TestFailoverMovesLeasesToThePromoted(t *testing.T) {
	h := single([]histories.Op{acquire(0, 0, 10, 12, 1), acquire(2, 1, 300, 2100, 1), release(0, 0, 2500, 2501, histories.Fail)},
		histories.FaultWindow{Kind: "failover", Target: "redis-0", Start: 20 * ms, End: 3000 * ms, Promoted: "redis-1"})
	h.Meta.Servers, h.Meta.Topology = []string{"redis-0", "redis-1", "redis-2"}, "replicated:3"
	m := build(Run{History: h})
	old, promoted := leasesOn(m, "redis-0"), leasesOn(m, "redis-1")
	if len(old) != 1 || old[0].client != 0 || old[0].end() != 20*ms {
		t.Errorf("redis-0: %+v, want client 0's lease killed at 20 ms", old)
	}
	if len(promoted) != 1 || promoted[0].client != 1 {
		t.Errorf("redis-1: %+v, want client 1's lease", promoted)
	}
	if len(leasesOn(m, "redis-2")) != 0 {
		t.Error("a lease on a replica")
	}
	if d := m.client(0).beliefs[0].danger; !slices.Equal(d, []span{{20 * ms, 2500 * ms}}) {
		t.Errorf("client 0's danger %v, want from the kill to its release", d)
	}
}

func TestEtcdLeasesOnEveryMember(t *testing.T) {
	h := single([]histories.Op{acquire(0, 0, 0, 5, 7), release(0, 0, 2000, 2001, histories.OK)})
	h.Meta.Servers, h.Meta.Topology, h.Meta.Impl = []string{"lock-0", "lock-1", "lock-2"}, "etcd:3", "etcd"
	m := build(Run{History: h})
	for _, s := range m.servers {
		if len(s.leases) != 1 || !s.leases[0].unsure || s.leases[0].end() != 2001*ms {
			t.Errorf("%s: %+v, want one dashed lease to the release (renewed)", s.name, s.leases)
		}
	}
	if len(m.client(0).beliefs[0].danger) != 0 {
		t.Error("a renewed lease released in time is not in danger")
	}
}

func TestDangerExactlyWhenBeliefOutlivesLease(t *testing.T) {
	m := build(pausePastTTL())
	b0 := m.client(0).beliefs
	if len(b0) != 1 || !slices.Equal(b0[0].danger, []span{{510 * ms, 1602 * ms}}) {
		t.Errorf("client 0: %+v, want danger from its lease's expiry to its release", b0)
	}
	if b1 := m.client(1).beliefs; len(b1) != 1 || len(b1[0].danger) != 0 {
		t.Errorf("client 1 released in time, yet %+v", b1)
	}
}

func TestViolationsOrdered(t *testing.T) {
	vs := violations(linearizability.Result{Properties: []linearizability.PropertyResult{
		{Property: linearizability.P1, Verdict: linearizability.Illegal, At: 50, Until: 90},
		{Property: linearizability.P2, Verdict: linearizability.Illegal, At: 10, Until: 5},
		{Property: linearizability.P4, Verdict: linearizability.Illegal},
		{Property: linearizability.L1, Verdict: linearizability.OK},
	}})
	if len(vs) != 3 || vs[0].prop.Property != linearizability.P2 || vs[0].to != 10 || vs[1].n != 2 || vs[2].placed {
		t.Errorf("violations %+v", vs)
	}
}
