package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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
	cl := newProbeClient(n.Addr())
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
	cl := newProbeClient(n.Addr())
	defer cl.Close()
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("replication info of %s: %w", n.Name(), err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
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
	f, err := replicationInfo(ctx, n)
	if err != nil {
		return 0, err
	}
	off, err := strconv.ParseInt(f["master_repl_offset"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("replication offset of %s: %w", n.Name(), err)
	}
	return off, nil
}

// AwaitReplica waits until replica's link to its primary is up: the sync is done and the
// stream flows. Bounded by ctx, or by syncTimeout when ctx has no deadline.
func (c *Cluster) AwaitReplica(ctx context.Context, replica Node) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, syncTimeout)
		defer cancel()
	}
	var last string
	for {
		f, err := replicationInfo(ctx, replica)
		switch {
		case err != nil:
			last = err.Error()
		case f["role"] != "slave":
			last = "role " + f["role"]
		case f["master_link_status"] == "up":
			return nil
		default:
			last = "master link " + f["master_link_status"]
		}
		if !sleepCtx(ctx, pollInterval) {
			return fmt.Errorf("replica %s not in sync: %w (last: %s)", replica.Name(), ctx.Err(), last)
		}
	}
}

// Cutter is one connection to a primary, kept while a fault looks for an instant to cut
// its replication when it holds no lease: a look costs a round trip, not a dial.
type Cutter struct {
	primary Node
	cl      *redis.Client
}

// NewCutter is a Cutter of primary; it dials at its first command. Close it after use.
func (c *Cluster) NewCutter(primary Node) *Cutter {
	return &Cutter{primary: primary, cl: newProbeClient(primary.Addr())}
}

// Primary is the server the cutter cuts.
func (k *Cutter) Primary() Node { return k.primary }

// Close closes the cutter's connection.
func (k *Cutter) Close() error { return k.cl.Close() }

// Leases is how many keys with an expiry the primary holds. The lock implementations
// here give every lease a TTL and nothing else one (fence counters have none, and the
// protected store is another server), so it counts the leases held.
func (k *Cutter) Leases(ctx context.Context) (int64, error) {
	info, err := k.cl.Info(ctx, "keyspace").Result()
	if err != nil {
		return 0, fmt.Errorf("leases on %s: %w", k.primary.Name(), err)
	}
	return expiringKeys(info), nil
}

// Cut makes the primary stop feeding its replicas from now on: they are disconnected,
// and refused when they reconnect, so every write from now on exists only on the primary
// (asynchronous replication as far behind as it gets). An ACL rule denies SYNC and PSYNC
// to the default user, which replicas and clients share: clients never send those. Why
// not a black hole on the replication links: the rule holds whatever path a replica
// takes, also the direct one Sentinel gives replicas after a failover, and works without
// a Net. A replica whose link has been down longer than ten times SentinelDownAfter (plus
// the time since the primary was seen down) is no candidate for Sentinel's promotion.
//
// In the same transaction it counts the leases held at the instant of the cut (see
// Leases), and returns that count; then it sends the command then, if any.
func (k *Cutter) Cut(ctx context.Context, then ...any) (leases int64, err error) {
	var keyspace *redis.StringCmd
	_, err = k.cl.TxPipelined(ctx, func(p redis.Pipeliner) error {
		keyspace = p.Info(ctx, "keyspace")
		p.Do(ctx, "ACL", "SETUSER", "default", "-sync", "-psync")
		p.Do(ctx, "CLIENT", "KILL", "TYPE", "replica")
		if len(then) > 0 {
			p.Do(ctx, then...)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cut replication from %s: %w", k.primary.Name(), err)
	}
	return expiringKeys(keyspace.Val()), nil
}

// cutPauseLimit bounds how long CutIfIdle pauses writes, should its second round trip be
// slow or never come: the pause lapses by itself, and that round trip's count shows
// whether a lease slipped in meanwhile.
const cutPauseLimit = 100 * time.Millisecond

// CutIfIdle cuts as Cut does, but only when the primary holds no lease, with nothing
// written between the count and the cut: clients' writes are paused (CLIENT PAUSE WRITE,
// which stops keys from expiring too) while it counts, and the cut and the unpause come
// in one transaction that counts again. So no cut is made to be undone because a lease
// came between a look and the cut, and what was written before the cut has been handed
// to the replicas' links by then. It returns the leases counted (at the cut when it
// cut), whether it cut, and how long writes were paused at most (from sending the pause
// to the last reply, never longer than cutPauseLimit). A cut with leases > 0 means the
// pause lapsed and a lease came meanwhile: the caller must undo the cut.
func (k *Cutter) CutIfIdle(ctx context.Context) (leases int64, cut bool, paused time.Duration, err error) {
	start := time.Now()
	defer func() { paused = min(time.Since(start), cutPauseLimit) }()
	var keyspace *redis.StringCmd
	_, err = k.cl.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "CLIENT", "PAUSE", cutPauseLimit.Milliseconds(), "WRITE")
		keyspace = p.Info(ctx, "keyspace")
		return nil
	})
	if err != nil {
		return 0, false, 0, fmt.Errorf("pause writes on %s to count its leases: %w", k.primary.Name(), err)
	}
	if leases = expiringKeys(keyspace.Val()); leases > 0 {
		if err := k.cl.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
			return leases, false, 0, fmt.Errorf("unpause writes on %s: %w", k.primary.Name(), err)
		}
		return leases, false, 0, nil
	}
	leases, err = k.Cut(ctx, "CLIENT", "UNPAUSE")
	return leases, err == nil, 0, err
}

// expiringKeys adds up the expires= counts of an INFO keyspace section
// ("db0:keys=2,expires=1,avg_ttl=0").
func expiringKeys(info string) int64 {
	var total int64
	for _, line := range strings.Split(info, "\n") {
		_, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "expires="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}

// AwaitCaughtUp waits until every replica of primary has its link up and has received
// what primary had written when AwaitCaughtUp was called.
func (c *Cluster) AwaitCaughtUp(ctx context.Context, primary Node) error {
	want, err := c.ReplicationOffset(ctx, primary)
	if err != nil {
		return err
	}
	for _, r := range c.Lock {
		if r == primary {
			continue
		}
		if err := c.AwaitReplica(ctx, r); err != nil {
			return err
		}
		for {
			off, err := c.ReplicationOffset(ctx, r)
			if err == nil && off >= want {
				break
			}
			if !sleepCtx(ctx, pollInterval) {
				return fmt.Errorf("replica %s not caught up with %s: %w", r.Name(), primary.Name(), ctx.Err())
			}
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
// (through its links "client:N->sentinel-i" when c has a Net) and ep.Via: the failover
// client learns a node's own address from Sentinel and must dial the client's link to
// that node instead, ep.Lock[i] for c.Lock[i]. Other topologies are left alone.
func (c *Cluster) sentinelEndpoints(client int, ep *Endpoints) error {
	if c.Topology.Kind != Replicated {
		return nil
	}
	ep.Master = MasterName
	ep.Via = make(map[string]string, len(c.Lock))
	for i, n := range c.Lock {
		if c.Net != nil || PeerAddr(n) != n.Addr() {
			ep.Via[PeerAddr(n)] = ep.Lock[i]
		}
	}
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
