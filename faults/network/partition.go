package network

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults/spec"
)

// partitionKinds are the partitions between servers: a backend whose servers have a
// network of their own (the docker backend) cuts some of them off it. The process
// backend's servers all talk over the host's loopback, where nothing can come between
// two of them; its network faults act on the links between clients and servers.
func partitionKinds() []Kind {
	return []Kind{{
		Name: "partition",
		Description: "each target server is cut off from every other server of the cluster (replication, Sentinel's pings and votes) for the duration: " +
			"the docker backend disconnects its container from the servers' network, as Jepsen partitions hosts. Clients still reach it through their links, " +
			"so a primary cut off from its replicas and Sentinels keeps serving the clients that still talk to it while the others elect a new one (split brain); " +
			"a partition that cuts the primary off from a majority of the Sentinels and from a replica is in place once they name a new primary (its duration counts from then; a trigger holds its client until then); " +
			"on a Redis Cluster, one that cuts off the primary of the first lock key's slot with a replica of its own outside is in place once that replica is promoted (the cut-off primary refuses writes once it has missed the majority for the node timeout, and until then grants what the replica never sees); " +
			"net-blackhole on client links puts each client on one side. Healing reconnects them; a Sentinel then turns an old primary into a replica, and what only it had is lost",
		Targets: "server names separated by commas: redis-N, lock-N, sentinel-N, store",
		Build:   buildPartition,
	}}
}

func buildPartition(s spec.Spec) (Fault, error) {
	switch {
	case s.Duration <= 0:
		return nil, fmt.Errorf("fault %s needs a duration: it lasts until healed", s.Kind)
	case s.Latency != 0 || s.Jitter != 0 || s.Direction != "" || s.Offset != 0 || s.Rate != 0 || s.Mode != "":
		return nil, fmt.Errorf("fault %s takes no latency, jitter, direction, offset, rate or mode", s.Kind)
	}
	names := strings.Split(s.Target, ",")
	for i, name := range names {
		names[i] = strings.TrimSpace(name)
		if names[i] == "" || names[i] == "any" || strings.HasPrefix(names[i], "client:") || strings.Contains(names[i], "->") {
			return nil, fmt.Errorf("fault %s: target %q: want server names separated by commas (redis-0,sentinel-0)", s.Kind, s.Target)
		}
	}
	return &partition{spec: s, names: names, window: -1}, nil
}

// partition is the partition kind: Isolate at Inject, Rejoin at Heal.
type partition struct {
	spec  spec.Spec
	names []string

	mu     sync.Mutex
	cut    []cluster.IsolatableNode // isolated by Inject and not rejoined yet
	paced  bool                     // the Sentinels are paced for a failover (PrepareFailover)
	window int
}

// nodes are the target servers, each one that can be isolated.
func (p *partition) nodes(sc Scene) ([]cluster.IsolatableNode, error) {
	if sc.Cluster == nil {
		return nil, fmt.Errorf("fault %s on %s: %w", p.spec.Kind, p.spec.Target, spec.ErrNeedsCluster)
	}
	all := append(sc.Cluster.Nodes(), sc.Cluster.Sentinels...)
	var out []cluster.IsolatableNode
	for _, name := range p.names {
		var found cluster.Node
		var known []string
		for _, n := range all {
			known = append(known, n.Name())
			if n.Name() == name {
				found = n
			}
		}
		if found == nil {
			return nil, fmt.Errorf("fault %s: target %q: no such server (servers: %s)", p.spec.Kind, name, strings.Join(known, ", "))
		}
		in, ok := found.(cluster.IsolatableNode)
		if !ok {
			return nil, fmt.Errorf("fault %s: %s cannot be cut off from the other servers: its servers share the host's loopback; "+
				"partitions between servers need the docker backend (--backend docker)", p.spec.Kind, name)
		}
		out = append(out, in)
	}
	return out, nil
}

// Available says why the targets cannot be isolated in sc.
func (p *partition) Available(sc Scene) error {
	_, err := p.nodes(sc)
	return err
}

// Inject cuts every target off; on a failure the ones already cut off are rejoined.
func (p *partition) Inject(ctx context.Context, sc Scene) error {
	nodes, err := p.nodes(sc)
	if err != nil {
		return err
	}
	old, promote := p.splitsPrimary(ctx, sc)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range nodes {
		if err := n.Isolate(ctx); err != nil {
			p.cut = append(p.cut, n) // it may be half cut off: Heal rejoins it
			return errors.Join(err, p.healLocked(ctx))
		}
		p.cut = append(p.cut, n)
	}
	detail := fmt.Sprintf("%s cut off from the other servers (docker network disconnect) for %s", strings.Join(p.names, ", "), p.spec.Duration)
	p.window = spec.OpenWindow(sc.Rec, p.spec, detail)
	if old == nil {
		return nil
	}
	// A split brain exists once the majority has a primary of its own, however long a loaded
	// machine makes the election take.
	start := time.Now()
	n, err := promote(ctx)
	if err != nil {
		detail += fmt.Sprintf("; %s promoted no replica in %s", p.promoter(sc), spec.Short(time.Since(start)))
		err = fmt.Errorf("partition of %s: %w", old.Name(), err)
	} else {
		detail += fmt.Sprintf("; %s promoted %s after %s, from when the duration counts", p.promoter(sc), n.Name(), spec.Short(time.Since(start)))
	}
	spec.DetailWindow(sc.Rec, p.window, detail)
	return err
}

// promoter names who promotes a replica outside the partition.
func (p *partition) promoter(sc Scene) string {
	if sc.Cluster.Topology.Kind == cluster.RedisCluster {
		return "the cluster's majority"
	}
	return "the Sentinels outside"
}

// splitsPrimary is the primary the partition cuts off from those that will promote one
// of its replicas, and how to wait for that promotion; nil when it cuts off none. On a
// replicated topology: the primary cut off from a majority of the Sentinels and from a
// replica (paced as a failover is: the steady pace retried an election that found no
// fresh replica INFO 4 h later). On a Redis Cluster: the primary of the first lock key's
// slot cut off from a majority of the primaries and from a replica of its own.
func (p *partition) splitsPrimary(ctx context.Context, sc Scene) (cluster.Node, func(context.Context) (cluster.Node, error)) {
	c := sc.Cluster
	outside := func(nodes []cluster.Node) []cluster.Node {
		return slices.DeleteFunc(slices.Clone(nodes), func(x cluster.Node) bool { return slices.Contains(p.names, x.Name()) })
	}
	switch {
	case c.Topology.Kind == cluster.RedisCluster:
		primary, replicas, err := c.SlotPrimary(ctx, sc.LockKey)
		free := outside(replicas)
		if err != nil || !slices.Contains(p.names, primary.Name()) || len(free) == 0 {
			return nil, nil
		}
		return primary, func(ctx context.Context) (cluster.Node, error) {
			return c.AwaitClusterPromotion(ctx, free, spec.PromoteTimeout)
		}
	case c.Topology.Kind != cluster.Replicated || len(c.Sentinels) == 0:
		return nil, nil
	}
	primary, err := c.Primary(ctx)
	if err != nil || !slices.Contains(p.names, primary.Name()) {
		return nil, nil
	}
	if len(outside(c.Sentinels)) <= len(c.Sentinels)/2 || len(outside(c.Lock)) == 0 {
		return nil, nil
	}
	return primary, func(ctx context.Context) (cluster.Node, error) {
		if err := c.PrepareFailover(ctx, 0); err != nil {
			return nil, err
		}
		p.paced = true
		return c.AwaitPromotion(ctx, primary, spec.PromoteTimeout)
	}
}

// Heal rejoins every server cut off; one that fails stays for the next Heal.
func (p *partition) Heal(ctx context.Context, sc Scene) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.healLocked(ctx)
	if len(p.cut) == 0 {
		spec.CloseWindow(sc.Rec, &p.window)
		if p.paced {
			err = sc.Cluster.SteadySentinels(ctx)
			p.paced = err != nil
		}
	}
	return err
}

func (p *partition) healLocked(ctx context.Context) error {
	var errs []error
	var left []cluster.IsolatableNode
	for _, n := range p.cut {
		if err := n.Rejoin(ctx); err != nil {
			errs = append(errs, err)
			left = append(left, n)
		}
	}
	p.cut = left
	return errors.Join(errs...)
}
