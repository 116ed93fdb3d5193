package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/exactlyonce"
	"github.com/locklab/locklab/cluster/replication"
)

// syncTimeout bounds waiting for a replica to sync when the caller's ctx has no deadline.
const syncTimeout = 15 * time.Second

// replicationArgs are what every data node of a replicated topology runs with. Redis
// waits 5 s by default before a diskless full sync, for more replicas to join it; here
// a replica that needs a full sync (at start, after a restart) gets it at once.
var replicationArgs = []string{"--repl-diskless-sync-delay", "0"}

// startReplicated starts the data nodes redis-0 … redis-(N-1) of a replicated topology
// into c, redis-0 the primary and the others its asynchronous replicas, then the
// Sentinels, and returns once the replicas are in sync and the Sentinels ready. The
// caller stops whatever was started when it fails.
func (c *Cluster) startReplicated(ctx context.Context, b Backend, opts Options) error {
	sb, ok := b.(SentinelBackend)
	if !ok {
		return fmt.Errorf("topology %s: the %s backend cannot run Redis Sentinel", c.Topology, b.Name())
	}
	nodes, err := startAll(c.Topology.Nodes, func(i int) (Node, error) {
		cfg := opts.lockNode(fmt.Sprintf("redis-%d", i))
		cfg.ExtraArgs = append(append(cfg.ExtraArgs, replicationArgs...), opts.ReplicaArgs...)
		return b.StartNode(ctx, cfg)
	})
	c.Lock = append(c.Lock, nodes...)
	if err != nil {
		return err
	}
	primary := c.Lock[0]
	for _, r := range c.Lock[1:] {
		if err := c.Replicate(ctx, primary, r); err != nil {
			return err
		}
	}
	// The Sentinels start while the replicas sync: they learn of the replicas from the
	// primary either way, and are ready only once they know every one.
	var synced sync.WaitGroup
	var syncErr error
	synced.Go(func() { syncErr = c.awaitReplicas(ctx) })
	err = c.startSentinels(ctx, sb, primary)
	synced.Wait()
	return errors.Join(syncErr, err)
}

// awaitReplicas waits until every replica of c's primary is in sync (AwaitReplica).
func (c *Cluster) awaitReplicas(ctx context.Context) error {
	for _, r := range c.Lock[1:] {
		if err := c.AwaitReplica(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// adminDo sends one command to node n from a fresh one-connection client.
func adminDo(ctx context.Context, n Node, args ...any) *redis.Cmd {
	cl := exactlyonce.OneConnection(n.Addr(), probeTimeout)
	defer cl.Close()
	return cl.Do(ctx, args...)
}

// NodeByAddr is the data node listening on addr (its own or its peer address), or nil.
func (c *Cluster) NodeByAddr(addr string) Node {
	for _, n := range c.Lock {
		if n.Addr() == addr || PeerAddr(n) == addr {
			return n
		}
	}
	return nil
}

// Replicate makes replica an asynchronous replica of primary. It replicates through the
// link "<primary>-><replica>" of c.Net, so that network faults can delay or cut that
// one replication stream, or from primary's own address when c has no Net. It does not
// wait for the sync (AwaitReplica does).
func (c *Cluster) Replicate(ctx context.Context, primary, replica Node) error {
	upstream := primary.Addr()
	if _, ok := primary.(PeerNode); ok {
		// The servers share a network of their own: replication takes it, and a partition
		// of that network (IsolatableNode) is what cuts it.
		upstream = PeerAddr(primary)
	} else if c.Net != nil {
		link, err := c.Net.Link(ServerLink(primary.Name(), replica.Name()), primary.Addr())
		if err != nil {
			return fmt.Errorf("replicate %s from %s: %w", replica.Name(), primary.Name(), err)
		}
		upstream = link
	}
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		return fmt.Errorf("replicate %s from %s: %w", replica.Name(), primary.Name(), err)
	}
	if err := adminDo(ctx, replica, "REPLICAOF", host, port).Err(); err != nil {
		return fmt.Errorf("replicate %s from %s (via %s): %w", replica.Name(), primary.Name(), upstream, err)
	}
	return nil
}

// Promote makes n a primary: REPLICAOF NO ONE. It keeps its data.
func (c *Cluster) Promote(ctx context.Context, n Node) error {
	if err := adminDo(ctx, n, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("promote %s: %w", n.Name(), err)
	}
	return nil
}

// replicationInfo is n's INFO replication as fields.
func replicationInfo(ctx context.Context, n Node) (map[string]string, error) {
	f, err := replication.Info(ctx, n.Addr())
	if err != nil {
		return nil, fmt.Errorf("replication info of %s: %w", n.Name(), err)
	}
	return f, nil
}

// Role is what n says it is: "master" or "slave".
func (c *Cluster) Role(ctx context.Context, n Node) (string, error) {
	f, err := replicationInfo(ctx, n)
	if err != nil {
		return "", err
	}
	return f["role"], nil
}

// ReplicationOffset is how far into the replication stream n is: on a replica, what it
// has received from its primary; on a primary, what it has produced.
func (c *Cluster) ReplicationOffset(ctx context.Context, n Node) (int64, error) {
	off, err := replication.Offset(ctx, n.Addr())
	if err != nil {
		return 0, fmt.Errorf("replication offset of %s: %w", n.Name(), err)
	}
	return off, nil
}

// AwaitReplica waits until replica's link to its primary is up: the sync is done and the
// stream flows. Bounded by ctx, or by syncTimeout when ctx has no deadline.
func (c *Cluster) AwaitReplica(ctx context.Context, replica Node) error {
	return c.awaitReplica(ctx, replica, 0)
}

// awaitReplica is AwaitReplica, and then until replica has received the stream up to
// offset want (replication.AwaitCaughtUp).
func (c *Cluster) awaitReplica(ctx context.Context, replica Node, want int64) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, syncTimeout)
		defer cancel()
	}
	if err := replication.AwaitCaughtUp(ctx, replica.Addr(), want, pollInterval); err != nil {
		return fmt.Errorf("replica %s: %w", replica.Name(), err)
	}
	return nil
}

// Cutter cuts the replication of one primary of c (package replication).
type Cutter struct {
	*replication.Cutter
	primary Node
}

// NewCutter is a Cutter of primary; it dials at its first command. Close it after use.
func (c *Cluster) NewCutter(primary Node) *Cutter {
	return &Cutter{Cutter: replication.NewCutter(primary.Name(), primary.Addr()), primary: primary}
}

// Primary is the server the cutter cuts.
func (k *Cutter) Primary() Node { return k.primary }

// AwaitCaughtUp waits until every replica of primary has its link up and has received
// what primary had written when AwaitCaughtUp was called. On a Redis Cluster its
// replicas are the nodes that say they replicate it; elsewhere every other data node.
func (c *Cluster) AwaitCaughtUp(ctx context.Context, primary Node) error {
	want, err := c.ReplicationOffset(ctx, primary)
	if err != nil {
		return err
	}
	for _, r := range c.Lock {
		if r == primary || (c.Topology.Kind == RedisCluster && !replication.Replicates(ctx, r.Addr(), PeerAddr(primary))) {
			continue
		}
		if err := c.awaitReplica(ctx, r, want); err != nil {
			return fmt.Errorf("not caught up with %s: %w", primary.Name(), err)
		}
	}
	return nil
}

// RestoreReplication undoes a Cutter's cut on n; its replicas reconnect within a second
// and catch up. A restarted server has forgotten the rule already.
func (c *Cluster) RestoreReplication(ctx context.Context, n Node) error {
	if err := adminDo(ctx, n, "ACL", "SETUSER", "default", "+sync", "+psync").Err(); err != nil {
		return fmt.Errorf("restore replication from %s: %w", n.Name(), err)
	}
	return nil
}

// PromoteByHand is a failover done by an operator after the primary old died: the
// replica with the most of the replication stream (the lowest name on a tie) becomes the
// primary, the Sentinels are re-registered to it (Reregister: clients asking them find
// it, and they never run an election of their own), and the other live replicas are
// re-pointed at it. It returns the new primary; old stays as it is.
func (c *Cluster) PromoteByHand(ctx context.Context, old Node) (Node, error) {
	var best Node
	var bestOff int64 = -1
	var errs []error
	for _, n := range c.Lock {
		if n == old {
			continue
		}
		off, err := c.ReplicationOffset(ctx, n)
		if err != nil {
			errs = append(errs, err) // a replica that does not answer cannot be promoted
			continue
		}
		if off > bestOff {
			best, bestOff = n, off
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no replica of %s to promote: %w", old.Name(), errors.Join(errs...))
	}
	if err := c.Promote(ctx, best); err != nil {
		return nil, err
	}
	if err := c.Reregister(ctx, best); err != nil {
		return best, err
	}
	for _, n := range c.Lock {
		if n == old || n == best {
			continue
		}
		if err := c.Replicate(ctx, best, n); err != nil {
			errs = append(errs, err)
		}
	}
	return best, errors.Join(errs...)
}

// AwaitHealthy waits until the replicated topology is whole around primary: every other
// data node replicates from primary through its link with the link up, and every
// Sentinel monitors primary and knows every replica and the other Sentinels.
func (c *Cluster) AwaitHealthy(ctx context.Context, primary Node) error {
	for _, n := range c.Lock {
		if n == primary {
			continue
		}
		if err := c.Replicate(ctx, primary, n); err != nil { // a no-op when it already does
			return err
		}
	}
	for _, n := range c.Lock {
		if n == primary {
			continue
		}
		if err := c.AwaitReplica(ctx, n); err != nil {
			return err
		}
	}
	return c.AwaitSentinels(ctx, primary)
}

// sentinelEndpoints fills in how client reaches the Sentinels of a replicated topology
// (through its links "client:N->sentinel-i" when c has a Net) and ep.Via (viaEndpoints).
// Other topologies are left alone, but for a Redis Cluster's Via.
func (c *Cluster) sentinelEndpoints(client int, ep *Endpoints) error {
	switch c.Topology.Kind {
	case RedisCluster:
		ep.Cluster = true
		c.viaEndpoints(ep)
		return nil
	case Replicated:
	default:
		return nil
	}
	ep.Master = MasterName
	c.viaEndpoints(ep)
	if c.Net == nil {
		ep.Sentinels = c.SentinelAddrs()
		return nil
	}
	for _, s := range c.Sentinels {
		addr, err := c.Net.Link(ClientLink(client, s.Name()), s.Addr())
		if err != nil {
			return fmt.Errorf("endpoints of client %d: %w", client, err)
		}
		ep.Sentinels = append(ep.Sentinels, addr)
	}
	return nil
}

// viaEndpoints fills in ep.Via: a client that learns a node's peer address from the
// servers (Sentinel names the primary, a Redis Cluster its nodes) must dial the client's
// link to that node instead, ep.Lock[i] for c.Lock[i].
func (c *Cluster) viaEndpoints(ep *Endpoints) {
	ep.Via = make(map[string]string, len(c.Lock))
	for i, n := range c.Lock {
		if c.Net != nil || PeerAddr(n) != n.Addr() {
			ep.Via[PeerAddr(n)] = ep.Lock[i]
		}
	}
}
