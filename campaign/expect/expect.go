// Package expect holds the expectations of the models: which properties are guaranteed
// for a plan of an implementation under its faults, as a small table of rules, each a
// claim with its reason. A violation of an expected property is a safe-configuration
// violation, a failure of the campaign; any other violation is a finding. It imports
// plan and the packages below it, nothing of the campaign that uses it.
package expect

import (
	"slices"
	"strings"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"
)

// Rule says which properties the models guarantee for the plans it matches. A plan
// matches when its implementation, topology and fencing mode are among the rule's (an
// empty list allows any), it is calm when the rule asks so (see Calm), and every one of
// its faults matches one of the rule's fault matches (a rule without any matches only
// fault-free plans). The rules only ever say "holds": a property no rule names is not
// expected, and its violation is a finding, not a failure. P1 is never claimed for an
// implementation whose clients run as processes of their own (see Claims).
type Rule struct {
	Name       string
	Why        string
	Impls      []string // implementation names; AnyCorrect stands for every non-mutant
	Topologies []string // topology kinds
	Fencings   []string
	Calm       bool
	Careful    bool // the plan's clients check their validity before touching the store (not careless)
	Faults     []FaultMatch
	Holds      []lin.Property
}

// AnyCorrect in Rule.Impls matches every implementation that is not a mutant.
const AnyCorrect = "*correct"

// FaultMatch matches a fault by kind and by the side of the system it touches.
type FaultMatch struct {
	Kind string
	// Side is what the fault touches: SideClient, SideStore (the protected store, or only
	// links to it), SideLock (lock servers, links to them, replication); "" for any.
	Side string
	// Persistence, when set, is what the lock servers' persistence must be.
	Persistence []string
	// Points, when set, are the client points (client faults) the fault must strike at.
	Points []string
	// Modes, when set, are the modes the fault may have ("" for its default).
	Modes []string
}

// Sides of the system a fault can touch.
const (
	SideClient = "client"
	SideStore  = "store"
	SideLock   = "lock"
)

// faultSide is what f touches: its client, the store (a server or only links ending at
// it), or the lock service (anything else).
func faultSide(f plan.FaultSpec) string {
	switch {
	case strings.HasPrefix(f.Kind, "client-"):
		return SideClient
	case f.Target == "store", strings.HasPrefix(f.Kind, "net-") && strings.HasSuffix(f.Target, "->store"):
		return SideStore
	}
	return SideLock
}

// Rules are the expectations of the models (docs/design.md's properties, the TLA+ specs,
// the catalog's documented verdicts), each a claim that must hold on every run it
// matches. They are deliberately few: where a fault could break a property through
// timing the models do not bound, no rule claims it.
func Rules() []Rule {
	all := []lin.Property{lin.P1, lin.P2, lin.P3, lin.L1, lin.P6}
	// Faults that cannot make an INCR counter on one server hand out a fence twice: every
	// kind, except a crash of a lock server that does not fsync every write before
	// answering (restart-amnesia; aof-everysec is left out although a process crash keeps
	// what reached the kernel, since a machine crash would not).
	fenceSafe := []FaultMatch{
		{Kind: "client-pause"}, {Kind: "client-crash"}, {Kind: "client-clock"},
		{Kind: "server-pause"}, {Kind: "server-clock"},
		{Kind: "server-crash", Side: SideStore},
		{Kind: "server-crash", Side: SideLock, Persistence: []string{string(cluster.PersistAOFAlways)}},
		{Kind: "net-latency"}, {Kind: "net-blackhole"}, {Kind: "net-reset"}, {Kind: "reply-delay"},
	}
	// The same for P2 with fencing full, but the store must not forget: a store crash loses
	// its value and the largest fence it has seen.
	storeSafe := slices.DeleteFunc(slices.Clone(fenceSafe), func(m FaultMatch) bool {
		return m.Kind == "server-crash" && m.Side == SideStore
	})
	// On a replicated topology anything that touches the lock servers may end in a
	// promotion of a replica that missed the last INCR (failover-loss): only faults away
	// from them.
	clientOrStore := []FaultMatch{
		{Kind: "client-pause"}, {Kind: "client-crash"}, {Kind: "client-clock"},
		{Kind: "server-pause", Side: SideStore}, {Kind: "server-crash", Side: SideStore},
		{Kind: "net-latency", Side: SideStore}, {Kind: "net-blackhole", Side: SideStore}, {Kind: "net-reset", Side: SideStore},
	}
	replicatedStoreSafe := slices.DeleteFunc(slices.Clone(clientOrStore), func(m FaultMatch) bool {
		return m.Kind == "server-crash"
	})
	single, both := []string{cluster.Single}, []string{cluster.Single, cluster.Replicated}
	// Single-instance locks whose release and extend check the token, without renewal:
	// a lease ends by its TTL on the server or by its holder's checked release.
	textbook := []string{"setnx", "fenced", "redislock", "redis-py", "node-ioredis", "seed-withlock"}
	// Locks that renew their lease from a thread of their own while the holder lives.
	renewing := []string{"watchdog", "rueidislock", "etcd", "zookeeper"}
	// The consensus locks, in process and out: etcd's fence is the lock key's create
	// revision, ZooKeeper's the lock znode's creation zxid, each a position in a log a
	// quorum committed and fsynced before answering.
	consensus := []string{"etcd", "etcd-process", "zookeeper", "zookeeper-process"}
	consensusTopos := []string{cluster.Etcd, cluster.ZooKeeper}
	// Every fault an etcd cluster or ZooKeeper ensemble can take (no clock fault, no
	// failover: plan.Validate refuses them there), a member's crash included, whatever the
	// plan says of Redis persistence: a member fsyncs its log before it acknowledges.
	consensusSafe := append(slices.Clone(fenceSafe), FaultMatch{Kind: "server-crash", Side: SideLock})
	consensusStoreSafe := slices.DeleteFunc(slices.Clone(consensusSafe), func(m FaultMatch) bool {
		return m.Kind == "server-crash" && m.Side == SideStore
	})
	// Redlock clients that count the validity from before their first request.
	redlocks := []string{"redlock", "redsync", "node-redlock"}
	return []Rule{
		{
			Name: "fault-free", Impls: []string{AnyCorrect}, Calm: true, Careful: true, Holds: all,
			Why: "a correct lock without faults, whose careful clients keep their critical sections well inside the lease, keeps every property " +
				"(P1 only in locklab's process: a late grant starts a belief before the validity check can refuse it, see Claims)",
		},
		{
			Name: "fault-free-careless", Impls: []string{AnyCorrect}, Calm: true, Holds: []lin.Property{lin.P3, lin.L1},
			Why: "fences and progress do not depend on the client; mutual exclusion does: a careless client acts on a grant however late it arrived, and on a loaded machine a client process can receive it after its lease ran out (measured: node-redlock, 358 ms for a 350 ms lease at 4 plans in parallel on 2 cores)",
		},
		{
			Name: "client-crash", Impls: textbook, Topologies: both, Calm: true, Careful: true,
			Faults: []FaultMatch{{Kind: "client-crash"}}, Holds: all,
			Why: "a crashed client ends its own belief and sends nothing more; its lease expires by its TTL",
		},
		{
			Name: "late-release", Impls: textbook, Topologies: both, Calm: true, Careful: true,
			Faults: []FaultMatch{{Kind: "client-crash"}, {Kind: "client-pause", Points: []string{workload.InRelease}}}, Holds: all,
			Why: "a release held up after it was issued ends its caller's belief before it stalls, and the token check makes it harmless when it arrives late",
		},
		{
			// Careful: a careless client acts on a grant however late it arrived, and a grant
			// that arrives after its key expired has nothing left to renew (the fault-free-careless
			// rule's reason). Not calm: renewal, not the margin, carries the lease through work
			// as through a pause, and a renewal lags only when locklab's own goroutines do (every
			// renewing lock here runs in its process): its slack (watchdog 2/3 of the TTL,
			// rueidislock 1/2, etcd 2/3 of a lease of at least 1 s, ZooKeeper 2/3 of a session
			// of at least 200 ms: its pings come every third of it) exceeds the stall that
			// perturbs a run (a quarter of the TTL at most). Points: only the workload's, where
			// the renewal has started; a pause at a lock's own step may fall before it
			// (watchdog's acquire:granted is a grant delayed past its lease).
			Name: "renewal-outlives-a-thread-pause", Impls: renewing, Topologies: []string{cluster.Single, cluster.Etcd, cluster.ZooKeeper}, Careful: true,
			Faults: []FaultMatch{{Kind: "client-pause", Modes: []string{"", faults.PauseClient}, Points: append([]string{"", workload.BeforeExtend}, workload.Points()...)}},
			Holds:  []lin.Property{lin.P1, lin.P2},
			Why: "while the holder's process lives its renewal keeps the lease, however long the holder's own steps stall or work, and its careful client's check asks the renewal for the lease as it is now " +
				"(a stop-the-world pause, mode process, freezes the renewal too and is not claimed)",
		},
		{
			Name: "validity-check-catches-a-late-grant", Impls: redlocks, Topologies: []string{cluster.Nodes}, Calm: true, Careful: true,
			Faults: []FaultMatch{{Kind: "reply-delay"}}, Holds: []lin.Property{lin.P1, lin.P2},
			Why: "the validity counts from before the first SET was sent, so a grant delayed in flight leaves less of it (or none: refused), and a client that checks it stops before any server's key expires (antirez's counterpoint)",
		},
		{
			Name: "fences-single-server", Impls: []string{"fenced"}, Topologies: single,
			Faults: fenceSafe, Holds: []lin.Property{lin.P3},
			Why: "fences come from INCR on one server that never forgets a write it acknowledged, so they grow",
		},
		{
			Name: "full-fencing-single-server", Impls: []string{"fenced"}, Topologies: single, Fencings: []string{"full"},
			Faults: storeSafe, Holds: []lin.Property{lin.P2},
			Why: "growing fences checked on every read and write keep the data safe whoever believes what (Kleppmann's fencing)",
		},
		{
			Name: "fences-replicated-no-lock-faults", Impls: []string{"fenced"}, Topologies: []string{cluster.Replicated},
			Faults: clientOrStore, Holds: []lin.Property{lin.P3},
			Why: "without faults on the lock servers no replica is promoted, and the primary's INCR counter grows",
		},
		{
			Name: "full-fencing-replicated-no-lock-faults", Impls: []string{"fenced"}, Topologies: []string{cluster.Replicated},
			Fencings: []string{"full"}, Faults: replicatedStoreSafe, Holds: []lin.Property{lin.P2},
			Why: "growing fences checked on every access, from a primary that is never replaced",
		},
		{
			Name: "fences-consensus", Impls: consensus, Topologies: consensusTopos,
			Faults: consensusSafe, Holds: []lin.Property{lin.P3},
			Why: "every grant creates a new key or znode, whose create revision or zxid is a position in the replicated log: a quorum committed and fsynced it, so no crash, pause or partition of members hands it out twice or lowers it",
		},
		{
			Name: "full-fencing-consensus", Impls: consensus, Topologies: consensusTopos, Fencings: []string{"full"},
			Faults: consensusStoreSafe, Holds: []lin.Property{lin.P2},
			Why: "growing fences checked on every read and write keep the data safe whoever believes what, pauses past the lease included (etcd's revision and ZooKeeper's zxid are fencing tokens they give for free)",
		},
		{
			Name: "honest-answers-zookeeper", Impls: []string{"zookeeper", "zookeeper-process"}, Topologies: []string{cluster.ZooKeeper},
			Faults: consensusSafe, Holds: []lin.Property{lin.P6},
			Why: "a release deletes the holder's own znode, whose name no other acquire can get (the sequence number is the parent's, never reused), and the znode goes with its session: " +
				"a release after the session expired finds no znode, or an expired session, and is refused (etcd's Unlock deletes its key by name and answers ok, so etcd is not claimed)",
		},
		{
			Name: "honest-answers-one-server", Impls: textbook, Topologies: single,
			Faults: consensusSafe, Holds: []lin.Property{lin.P6},
			Why: "their extend and release check the token in one script on the one server that granted the lease: once another client was granted the lock the token is gone, " +
				"so a late extend or release is refused, whatever paused, slowed, crashed or forgot (a server that forgot the lease has nothing of the holder's left either)",
		},
		{
			Name: "honest-answers-replicated-no-lock-faults", Impls: textbook, Topologies: []string{cluster.Replicated},
			Faults: clientOrStore, Holds: []lin.Property{lin.P6},
			Why: "one primary answers every command while no fault touches the lock servers, and its token check refuses a late extend or release " +
				"(a partition or failover can leave a cut-off primary answering a release of a lease the promoted replica has given to another: split-brain)",
		},
		{
			Name: "progress-client-and-store-faults", Impls: []string{"setnx", "fenced", "redislock", "redis-py", "node-ioredis"}, Topologies: both,
			Faults: clientOrStore, Holds: []lin.Property{lin.L1},
			Why: "every lease these locks grant expires by the lock server's clock, which these faults leave alone",
		},
	}
}

// Expected is which properties the models say must hold for plan p of implementation
// impl: the union of what every matching rule holds. A mutant is expected to hold nothing.
func Expected(p plan.Plan, impl lockimpl.Impl) map[lin.Property]bool {
	out := map[lin.Property]bool{}
	for prop := range ExpectedBy(p, impl) {
		out[prop] = true
	}
	return out
}

// ExpectedBy is Expected with the name of the first rule that claims each property.
func ExpectedBy(p plan.Plan, impl lockimpl.Impl) map[lin.Property]string {
	out := map[lin.Property]string{}
	for _, c := range Claims(p, impl) {
		if _, ok := out[c.Property]; !ok {
			out[c.Property] = c.Rule
		}
	}
	return out
}

// Claim is one rule's claim that a property holds for a plan.
type Claim struct {
	Rule     string
	Property lin.Property
}

// Claims is every claim of every rule that matches plan p of impl, in the order of
// Rules and of each rule's Holds; none for a mutant.
//
// P1 is claimed only for implementations whose clients run in locklab's process. A
// belief starts when the acquire returns, before the careful client's validity check,
// so P1 holds only if every grant reaches its client while its lease lasts: the models
// (tla/LeaseLock.tla's atomic acquire, a timely careful client) assume it, a loaded
// machine does not give it. locklab bounds that delay where it can see it: an in-process
// client's grant travels through locklab's own goroutines and proxies from a Redis
// server, and a stall of either longer than a quarter of the TTL (100 ms at most)
// perturbs the run (runner's monitor), which calm margins (at least 150 ms and three
// quarters of the TTL between the work's end and the lease's) exceed. A client process
// of its own (Node.js, Python, the *-process locks) can be descheduled unseen: its grant
// may arrive after its lease, and two beliefs overlap with no lock wrong (measured for
// a careless client: node-redlock answered a 350 ms acquire after 358 ms). Its careful
// check still refuses the late lease before the store, so P2 stays claimed.
func Claims(p plan.Plan, impl lockimpl.Impl) []Claim {
	if impl.Mutant {
		return nil
	}
	var out []Claim
	for _, r := range Rules() {
		if !r.matches(p, impl) {
			continue
		}
		for _, prop := range r.Holds {
			if prop == lin.P1 && impl.Process {
				continue
			}
			out = append(out, Claim{Rule: r.Name, Property: prop})
		}
	}
	return out
}

func (r Rule) matches(p plan.Plan, impl lockimpl.Impl) bool {
	if !slices.Contains(r.Impls, impl.Name) && !(slices.Contains(r.Impls, AnyCorrect) && !impl.Mutant) {
		return false
	}
	// The rules speak of the library as it ships: a setting other than its default that
	// is not neutral may be what breaks it, a finding.
	if opts, err := impl.ResolveOptions(p.ImplOptions); err != nil || !impl.IsDefault(opts, false) {
		return false
	}
	topo, err := cluster.ParseTopology(p.Topology)
	if err != nil {
		return false
	}
	if len(r.Topologies) > 0 && !slices.Contains(r.Topologies, topo.Kind) {
		return false
	}
	if len(r.Fencings) > 0 && !slices.Contains(r.Fencings, p.Fencing) {
		return false
	}
	if r.Calm && !p.Calm() || r.Careful && p.Careless {
		return false
	}
	persistence := p.Persistence
	if persistence == "" {
		persistence = string(cluster.PersistNone)
	}
	for _, f := range p.Faults {
		if !slices.ContainsFunc(r.Faults, func(m FaultMatch) bool {
			return m.Kind == f.Kind && (m.Side == "" || m.Side == faultSide(f)) &&
				(len(m.Persistence) == 0 || slices.Contains(m.Persistence, persistence)) &&
				(len(m.Points) == 0 || slices.Contains(m.Points, f.Point)) &&
				(len(m.Modes) == 0 || slices.Contains(m.Modes, f.Mode))
		}) {
			return false
		}
	}
	return true
}
