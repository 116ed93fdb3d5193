package cluster

import (
	"context"
	"fmt"
	"os"

	"github.com/locklab/locklab/cluster/zookeeper"
)

// QuorumLink and ElectionLink name the link member from dials member to's quorum or election
// port by, "lock-1->lock-0:quorum" (Member.Config: why per pair); PeerLink(m) groups m's.
func QuorumLink(from, to string) string   { return from + "->" + to + ":quorum" }
func ElectionLink(from, to string) string { return from + "->" + to + ":election" }

// startZooKeeper starts a ZooKeeper ensemble of n members lock-0 … lock-N-1, each dialing
// its peers through links of its own (QuorumLink, ElectionLink), and makes lock-0 the
// leader, the target of a scenario's faults. Clients dial the members' client ports.
func (c *Cluster) startZooKeeper(ctx context.Context, b Backend, n int, opts Options) error {
	zb, ok := b.(consensusBackend)
	if !ok {
		return fmt.Errorf("the %s backend cannot run ZooKeeper members (the process backend can)", b.Name())
	}
	if option, err := Refuses(ZooKeeper, opts); err != nil {
		return fmt.Errorf("%s: %w", option, err)
	}
	err := c.startOnFreshPorts(ctx, func() ([]Node, error) {
		members, err := zookeeper.NewMembers(n, FreePort, zookeeper.PeerPort, func(from, to zookeeper.Member) (p zookeeper.Peer, err error) {
			c.Net.Group(PeerLink(from.Name), QuorumLink(from.Name, "*"), ElectionLink(from.Name, "*"), QuorumLink("*", from.Name), ElectionLink("*", from.Name))
			if p.Quorum, err = c.relink(QuorumLink(from.Name, to.Name), to.QuorumAddr(), zookeeper.LeaderPatience); err == nil {
				p.Election, err = c.relink(ElectionLink(from.Name, to.Name), to.ElectionAddr(), 0)
			}
			return p, err
		})
		if err != nil {
			return nil, err
		}
		return zb.startZooKeeper(ctx, members)
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, zookeeper.LeadTimeout)
	defer cancel()
	return zookeeper.Lead(ctx, c.Lock)
}

// startZooKeeper writes each member's zoo.cfg, starts the members together and waits
// until each serves, by its own word (zookeeper.Member.Ready). A JVM is one process: the
// group's SIGSTOP, SIGKILL and Pdeathsig reach all its threads. ZooKeeper logs to stderr.
func (b *ProcessBackend) startZooKeeper(ctx context.Context, members []zookeeper.Member) ([]Node, error) {
	rt, err := zookeeper.Find()
	if err != nil {
		return nil, err
	}
	var nodes []*ProcessNode
	for _, m := range members {
		if m.Dir, err = os.MkdirTemp(b.root, m.Name+"-zookeeper-"); err != nil {
			return nil, fmt.Errorf("make directory for %s: %w", m.Name, err)
		}
		if err := m.WriteConfig(members); err != nil {
			return nil, err
		}
		n := &ProcessNode{kind: zookeeper.Kind, name: m.Name, addr: m.ClientAddr(), dir: m.Dir,
			logPath: m.LogFile(), outPath: m.LogFile(), binary: rt.Java, args: rt.Args(m), spawn: b.spawn}
		n.ready = func(ctx context.Context) error { return m.Ready(ctx, n.proc.logStart) }
		nodes = append(nodes, n)
	}
	return b.startTogether(ctx, nodes)
}
