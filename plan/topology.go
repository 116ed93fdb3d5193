package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/lockimpl"
)

// ConsensusMembers is the size of the etcd cluster or ZooKeeper ensemble on which a consensus
// lock plays a plan written for Redis: the smallest that survives the loss of a member.
const ConsensusMembers = 3

// DefaultNodes is how many servers a lock for independent nodes ("nodes") plays a
// single-server plan on when nobody says: Redlock's usual N.
const DefaultNodes = 5

// TopologyMove is a plan's topology changed for an implementation that cannot run on it,
// and what that changes in the plan's story.
type TopologyMove struct {
	From, To cluster.Topology
	// Effects are clauses about the plan's faults and settings under the new topology
	// ("its faults on lock-0 hit one node of 5").
	Effects []string
}

// Note is the move in one sentence: "ran on etcd:3 instead of the scenario's single
// server; its faults on lock-0 hit that member (lock-0 leads at the start)".
func (m TopologyMove) Note() string {
	from := m.From.String()
	if m.From.Kind == cluster.Single {
		from = "single server"
	}
	return strings.Join(append([]string{fmt.Sprintf("ran on %s instead of the scenario's %s", m.To, from)}, m.Effects...), "; ")
}

// Header is the move as the first line of a run says it, whose naming where the plan
// came from: "topology etcd:3 (pause-past-ttl's single, mapped for etcd)", and what the
// move changes.
func (m TopologyMove) Header(whose, impl string) string {
	why := append([]string{fmt.Sprintf("%s %s, mapped for %s", whose, m.From, impl)}, m.Effects...)
	return fmt.Sprintf("topology %s (%s)", m.To, strings.Join(why, "; "))
}

// TopologyMismatchError is a plan whose topology its implementation cannot run on, and
// which cannot be moved to one it runs on.
type TopologyMismatchError struct {
	Impl     lockimpl.Impl
	Topology cluster.Topology
}

func (e *TopologyMismatchError) Error() string {
	return fmt.Sprintf("needs topology %s; the scenario runs on %s", e.Impl.Topology, e.Topology)
}

// ForImpl is p on a topology impl runs on, the one way the matrix and `locklab run`
// choose it. A plan impl runs on as it is comes back unchanged, with a nil move. A lock
// for independent nodes plays a single-server plan on nodes servers (nodes < 1:
// DefaultNodes); a consensus lock (etcd, ZooKeeper) plays a plan for one server or for
// independent ones on a ConsensusMembers-member cluster of its kind, and a plan for the
// other consensus service on as many members, without the Redis-only persistence and
// server clock. Any other mismatch (a replicated plan for etcd or Redlock, a single-server plan for a lock
// that needs replicas) is a *TopologyMismatchError: no mapping keeps its story.
// ForImpl does not set p.Impl; an unreadable topology is Validate's to report.
func (p Plan) ForImpl(impl lockimpl.Impl, nodes int) (Plan, *TopologyMove, error) {
	topo, err := cluster.ParseTopology(p.Topology)
	if err != nil {
		return p, nil, err
	}
	if nodes < 1 {
		nodes = DefaultNodes
	}
	move := &TopologyMove{From: topo}
	targets := lockTargets(p.Faults)
	switch {
	case impl.RunsOn(topo.Kind):
		return p, nil, nil
	case impl.Topology == cluster.Nodes && topo.Kind == cluster.Single:
		move.To = cluster.Topology{Kind: cluster.Nodes, Nodes: nodes}
		if len(targets) > 0 {
			move.Effects = append(move.Effects, fmt.Sprintf("its faults on %s hit one node of %d", strings.Join(targets, ", "), nodes))
		}
	case cluster.Consensus(impl.Topology) && topo.Kind != cluster.Replicated && topo.Kind != cluster.RedisCluster:
		// A lock service of one server or of N independent ones becomes the etcd cluster
		// or ZooKeeper ensemble people deploy; lock-0 leads when a run starts, so a fault
		// on lock-0 strikes the leader, and the rest carries on. One consensus service
		// becomes the other of as many members.
		move.To = cluster.Topology{Kind: impl.Topology, Nodes: ConsensusMembers}
		if cluster.Consensus(topo.Kind) {
			move.To.Nodes = topo.Nodes
		}
		if len(targets) > 0 {
			move.Effects = append(move.Effects, fmt.Sprintf("its faults on %s hit that member (lock-0 leads at the start)", strings.Join(targets, ", ")))
		}
		if p.Persistence != "" && p.Persistence != string(cluster.PersistNone) {
			move.Effects = append(move.Effects, fmt.Sprintf("persistence %s does not apply (a %s member fsyncs its log before it acknowledges)", p.Persistence, impl.Topology))
		}
		p.Persistence, p.ServerClock = "", ""
	default:
		return p, nil, &TopologyMismatchError{Impl: impl, Topology: topo}
	}
	p.Topology = move.To.String()
	return p, move, nil
}

// OnImpl is p on the topology ForImpl gives the implementation named impl (DefaultNodes
// for a lock on independent nodes), with the move; p and a nil move when impl runs on p's
// topology, is unknown or no move fits, for Resolve to say why.
func (p Plan) OnImpl(reg *lockimpl.Registry, impl string) (Plan, *TopologyMove) {
	i, err := reg.Get(impl)
	if err != nil {
		return p, nil
	}
	if mapped, move, err := p.ForImpl(i, 0); err == nil {
		return mapped, move
	}
	return p, nil
}

// lockTargets are the fault targets that name a lock server (lock-0, or a link to or from
// one), which on N independent nodes strike only that one.
func lockTargets(fs []FaultSpec) []string {
	var out []string
	for _, f := range fs {
		if strings.Contains(f.Target, "lock-") && !slices.Contains(out, f.Target) {
			out = append(out, f.Target)
		}
	}
	return out
}
