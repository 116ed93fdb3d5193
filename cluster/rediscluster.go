package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/cluster/clustermode"
)

// ClusterNodeTimeout is a Redis Cluster's cluster-node-timeout: how long a node goes
// unanswered before its peers suspect it. Scaled down like the Sentinel timings, but
// twice SentinelDownAfter: a cluster has no TILT mode to forgive a loaded machine's stall.
const ClusterNodeTimeout = 2 * SentinelDownAfter

// startRedisCluster starts the nodes redis-0 … redis-(N-1) of a Redis Cluster into c, the
// first P the primaries with the slots split evenly among them, the others their
// replicas in turn, and returns once every node says the cluster is ok and every replica
// is in sync. The caller stops whatever was started when it fails.
func (c *Cluster) startRedisCluster(ctx context.Context, b Backend, opts Options) error {
	t := c.Topology
	if t.Replicas < 0 || t.Nodes%(1+t.Replicas) != 0 || t.Primaries() < 1 {
		return fmt.Errorf("topology %s: %d nodes do not make primaries with %d replicas each", t, t.Nodes, t.Replicas)
	}
	nodes, err := startAll(t.Nodes, func(i int) (Node, error) {
		cfg := opts.lockNode(fmt.Sprintf("redis-%d", i))
		cfg.ExtraArgs = append(append(cfg.ExtraArgs, clustermode.Args(ClusterNodeTimeout)...), opts.ReplicaArgs...)
		cfg.ClusterBus = true
		return b.StartNode(ctx, cfg)
	})
	c.Lock = append(c.Lock, nodes...)
	if err != nil {
		return err
	}
	if err := clustermode.Form(ctx, c.Members(), t.Primaries()); err != nil {
		return fmt.Errorf("topology %s: %w", t, err)
	}
	return nil
}

// Members are the lock servers as package clustermode knows them.
func (c *Cluster) Members() []clustermode.Member {
	m := make([]clustermode.Member, len(c.Lock))
	for i, n := range c.Lock {
		m[i] = member(n)
	}
	return m
}

// member is n as package clustermode knows it.
func member(n Node) clustermode.Member {
	return clustermode.Member{Name: n.Name(), Admin: n.Addr(), Peer: PeerAddr(n)}
}

// AwaitClusterOK waits until every node of a Redis Cluster says the cluster is ok, with
// every slot served and every replica in sync: after a fault, before the next phase.
func (c *Cluster) AwaitClusterOK(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return clustermode.Await(ctx, c.Members())
}

// SlotPrimary is the primary serving key's slot, and its replicas, as the first node
// that answers says.
func (c *Cluster) SlotPrimary(ctx context.Context, key string) (Node, []Node, error) {
	p, rs, err := clustermode.PrimaryOf(ctx, c.Members(), key)
	if err != nil {
		return nil, nil, err
	}
	replicas := make([]Node, len(rs))
	for i, r := range rs {
		replicas[i] = c.Lock[r]
	}
	return c.Lock[p], replicas, nil
}

// AwaitClusterPromotion waits, within within, until one of replicas is a primary (the
// cluster's own failover, or CLUSTER FAILOVER sent to it), and returns it.
func (c *Cluster) AwaitClusterPromotion(ctx context.Context, replicas []Node, within time.Duration) (Node, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	candidates := make([]clustermode.Member, len(replicas))
	for i, n := range replicas {
		candidates[i] = member(n)
	}
	i, err := clustermode.AwaitPrimary(ctx, candidates)
	if err != nil {
		return nil, err
	}
	return replicas[i], nil
}

// ClusterFailover sends CLUSTER FAILOVER mode to replica (clustermode.FailoverForce,
// FailoverTakeover; "" graceful): it starts its own promotion.
func (c *Cluster) ClusterFailover(ctx context.Context, replica Node, mode string) error {
	if err := clustermode.Failover(ctx, member(replica), mode); err != nil {
		return fmt.Errorf("cluster failover %s: %w", mode, err)
	}
	return nil
}
