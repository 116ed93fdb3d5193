package campaign

import (
	"fmt"
	"github.com/locklab/locklab/cluster"
	"slices"
	"strings"

	"github.com/locklab/locklab/campaign/expect"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// Class is a known bug class (docs/design.md's table, and the catalog's scenarios) as a
// search problem: the space a random search draws from, and the properties whose
// violation counts as finding the class. The space only restricts the implementation,
// the fault kinds and the fencing mode, never when, where or at which point a fault
// strikes: the generator has to find that by itself.
type Class struct {
	ID          string
	Description string
	Space       Space
	Detect      []lin.Property
	// Counterpart, for a mutant, is the correct lock it breaks: a violation counts only
	// when the models say the counterpart keeps the property under the same plan, so that
	// it is the mutant's bug and not the faults' doing (a pause past the lease breaks
	// every lock).
	Counterpart string
	Scenarios   []string // catalog scenarios that script the class
}

// clientFaultKinds are the kinds a mutant's class draws from: its bug is in the lock, and
// client faults only widen the windows it needs.
func clientFaultKinds() []string { return []string{"client-pause", "client-crash", "client-clock"} }

// Classes are the bug classes by catalog name, then one class per mutant of reg that the
// table does not name (its Bug or its name as ID). Each fault class is searched with
// calm workloads and at least one fault, so that what it finds is the fault's doing.
func Classes(reg *lockimpl.Registry) []Class {
	if reg == nil {
		reg = locks.All()
	}
	p1p2 := []lin.Property{lin.P1, lin.P2}
	fault := func(impl, kind string) Space {
		return Space{Impls: []string{impl}, Faults: []string{kind}, Fencings: []string{"off"}, MinFaults: 1, Calm: true}
	}
	classes := []Class{
		{ID: "pause-past-ttl", Description: "holder paused longer than the lease, then writes", Space: fault("setnx", "client-pause"), Detect: p1p2, Scenarios: []string{"pause-past-ttl"}},
		{ID: "slow-write", Description: "holder's write delayed in the network past the lease", Space: fault("setnx", "net-latency"), Detect: []lin.Property{lin.P2}, Scenarios: []string{"slow-write"}},
		{ID: "slow-grant", Description: "grant arrives after the lease is nearly gone", Space: fault("setnx", "reply-delay"), Detect: p1p2, Scenarios: []string{"slow-grant"}},
		{ID: "clock-jump", Description: "server clock jumps forward, key expires early", Space: fault("setnx", "server-clock"), Detect: p1p2, Scenarios: []string{"clock-jump"}},
		{ID: "server-pause", Description: "store frozen while the holder's write is in flight", Space: fault("setnx", "server-pause"), Detect: []lin.Property{lin.P1}, Scenarios: []string{"server-pause"}},
		{ID: "restart-amnesia", Description: "server restarts without the key or the fence counter", Space: Space{Impls: []string{"fenced"}, Faults: []string{"server-crash"}, MinFaults: 1, Calm: true}, Detect: []lin.Property{lin.P3}, Scenarios: []string{"restart-amnesia"}},
		{ID: "split-brain", Description: "servers partitioned: the old primary and a promoted replica both grant the lock", Space: Space{Impls: []string{"fenced"}, Faults: []string{"partition"}, MinFaults: 1, Calm: true, Backend: plan.BackendDocker}, Detect: []lin.Property{lin.P1, lin.P3}, Scenarios: []string{"split-brain"}},
		{ID: "failover-loss", Description: "primary dies before replicating the key; a replica without it is promoted", Space: Space{Impls: []string{"fenced"}, Faults: []string{"failover"}, MinFaults: 1, Calm: true}, Detect: []lin.Property{lin.P1, lin.P3}, Scenarios: []string{"failover-loss", "failover-loss-manual"}},
		// The same on a Redis Cluster: the primary of the lock key's slot dies, and its
		// replica takes over by the cluster's vote, CLUSTER FAILOVER FORCE or TAKEOVER.
		{ID: "cluster-failover-loss", Description: "Redis Cluster: the primary of the key's slot dies before replicating it; its replica takes over without it", Space: Space{Impls: []string{"fenced"}, Faults: []string{"failover"}, Topologies: []string{cluster.RedisCluster}, MinFaults: 1, Calm: true}, Detect: []lin.Property{lin.P1, lin.P3}, Scenarios: []string{"cluster-failover-loss"}},
		// WAIT's limit: a replica acknowledged the grant, another, lagging, is promoted.
		{ID: "failover-wait-lagging", Description: "WAIT 1 acknowledged by one replica; the primary dies and the lagging replica is promoted without the grant", Space: Space{Impls: []string{"fenced"}, Faults: []string{"failover"}, MinFaults: 1, Calm: true, Wait: true}, Detect: []lin.Property{lin.P1, lin.P3}, Scenarios: []string{"failover-wait-lagging", "cluster-failover-wait-lagging"}},
		// Whatever delays the old holder's write (a pause, or work longer than the lease), a
		// lost update with fences checked on writes is this class: fences grow on one server,
		// so only a stale write between the new holder's unfenced read and its write is
		// accepted. The search is not calm: the stale write must land in that window, which
		// long critical sections open wide.
		{ID: "unfenced-read", Description: "fencing on writes only: a stale write lands between the new holder's read and write", Space: Space{Impls: []string{"fenced"}, Faults: []string{"client-pause"}, Fencings: []string{"writes"}}, Detect: []lin.Property{lin.P2}, Scenarios: []string{"unfenced-read"}},
		{ID: "ttl-too-short", Description: "critical section longer than the TTL, no fault at all", Space: Space{Impls: []string{"setnx"}, Faults: []string{NoFaults}}, Detect: p1p2, Scenarios: []string{"ttl-too-short"}},
	}
	// A mutant's bug is in the lock; faults only open the windows it needs.
	// docs/design.md's "needs" column says which: unsafe-release and unsafe-extend a pause
	// (one, so that the correct lock's expectations can tell whose doing a violation is),
	// no-expiry a
	// crash; check-then-set only contention.
	mutant := func(impl string, kinds []string, maxFaults int) Space {
		return Space{Impls: []string{impl}, Faults: kinds, MaxFaults: maxFaults, Calm: true}
	}
	mutants := map[string]Class{
		"unsafe-release": {Description: "release deletes someone else's lock", Detect: []lin.Property{lin.P1}, Counterpart: "setnx", Scenarios: []string{"unsafe-release"},
			Space: Space{Faults: []string{"client-pause"}, MinFaults: 1, MaxFaults: 1}},
		"unsafe-extend": {Description: "extend renews whoever holds the lock now and answers ok", Detect: []lin.Property{lin.P6}, Counterpart: "setnx", Scenarios: []string{"late-extend"},
			Space: Space{Faults: []string{"client-pause"}, MinFaults: 1, MaxFaults: 1}},
		"no-expiry": {Description: "SETNX then EXPIRE, crash in between: the lock is never freed", Detect: []lin.Property{lin.L1}, Counterpart: "setnx", Scenarios: []string{"no-expiry"},
			Space: Space{Faults: []string{"client-crash"}, MinFaults: 1}},
		"check-then-set": {Description: "GET then SET: two clients acquire at once", Detect: []lin.Property{lin.P1}, Counterpart: "setnx", Scenarios: []string{"check-then-set"},
			Space: Space{Faults: clientFaultKinds()}},
	}
	for _, impl := range reg.List() {
		if !impl.Mutant {
			continue
		}
		id := impl.Bug
		if id == "" {
			id = impl.Name
		}
		c, ok := mutants[id]
		if !ok {
			c = Class{Description: impl.Description, Detect: []lin.Property{lin.P1, lin.P2, lin.P3, lin.L1}, Space: Space{Faults: clientFaultKinds()}}
		}
		c.ID = id
		sp := mutant(impl.Name, c.Space.Faults, c.Space.MaxFaults)
		sp.MinFaults = c.Space.MinFaults
		c.Space = sp
		if !slices.ContainsFunc(classes, func(o Class) bool { return o.ID == id }) {
			classes = append(classes, c)
		}
	}
	return classes
}

// ClassByID finds a class of Classes(reg).
func ClassByID(reg *lockimpl.Registry, id string) (Class, error) {
	cs := Classes(reg)
	ids := make([]string, len(cs))
	for i, c := range cs {
		if c.ID == id {
			return c, nil
		}
		ids[i] = c.ID
	}
	return Class{}, fmt.Errorf("unknown bug class %q (known: %s)", id, strings.Join(ids, ", "))
}

// Matches reports whether plan p lies in the class's space: its implementation and
// fencing mode are the class's, its fault kinds are among the class's (at least one
// fault if the class needs one), and it is calm if the class is.
func (c Class) Matches(p plan.Plan) bool {
	s := c.Space
	if len(s.Impls) > 0 && !slices.Contains(s.Impls, p.Impl) {
		return false
	}
	if len(s.Fencings) > 0 && !slices.Contains(s.Fencings, p.Fencing) {
		return false
	}
	if s.Calm && !p.Calm() {
		return false
	}
	if len(p.Faults) < s.MinFaults {
		return false
	}
	none := len(s.Faults) == 1 && s.Faults[0] == NoFaults
	for _, f := range p.Faults {
		if none || (len(s.Faults) > 0 && !slices.Contains(s.Faults, f.Kind)) {
			return false
		}
	}
	return true
}

// Detects is which of the illegal properties of a run of p count as finding the class:
// those it detects, for a plan of its space, and for a mutant only those its correct
// counterpart is expected to keep under the same plan.
func (c Class) Detects(p plan.Plan, illegal []lin.Property) []lin.Property {
	if !c.Matches(p) {
		return nil
	}
	var exp map[lin.Property]bool
	if c.Counterpart != "" {
		q := p
		q.Impl = c.Counterpart
		exp = expect.Expected(q, lockimpl.Impl{Name: c.Counterpart}) // rules match by name; a counterpart is no mutant
	}
	var out []lin.Property
	for _, prop := range illegal {
		if slices.Contains(c.Detect, prop) && (exp == nil || exp[prop]) {
			out = append(out, prop)
		}
	}
	return out
}
