// Package clustermode forms a Redis Cluster out of running servers started in cluster
// mode, and reads what the cluster says of itself: its state, who serves which slot,
// which node replicates which. It knows addresses, not backends: package cluster starts
// the servers and hands them over as Members.
package clustermode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/exactlyonce"
	"github.com/locklab/locklab/cluster/replication"
)

// Slots is how many hash slots a Redis Cluster has.
const Slots = 16384

// Member is one server of a cluster to be.
type Member struct {
	Name  string
	Admin string // host:port the harness dials to administer it
	Peer  string // host:port the other servers (and what they tell clients) know it by
}

// Args are the server arguments of a cluster node whose peers judge it failed after
// nodeTimeout (cluster-node-timeout). A replica never moves to another primary by itself
// (replica migration), so that the layout stays what the plan said, and a replica whose
// link to its primary has been down for long may still be promoted (validity factor 0):
// a fault that cuts replication before it kills the primary wants exactly that replica
// promoted, as Sentinel does.
func Args(nodeTimeout time.Duration) []string {
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
		"--cluster-allow-replica-migration", "no",
		"--cluster-replica-validity-factor", "0",
		"--repl-diskless-sync-delay", "0",
	}
}

// Form makes one cluster of members: the first primaries members are the primaries, with
// the slots split evenly among them in order, and the others are their replicas, in
// turn (member primaries+i replicates primary i mod primaries). It returns once every
// node says the cluster is ok and every replica is in sync (Await). The servers must
// have been started with Args and know nothing of each other yet.
func Form(ctx context.Context, members []Member, primaries int) error {
	if primaries < 1 || primaries > len(members) {
		return fmt.Errorf("form cluster: %d primaries of %d servers", primaries, len(members))
	}
	// Distinct config epochs from the start, as redis-cli --cluster create sets them: the
	// nodes would settle equal ones themselves, later.
	for i, m := range members {
		if err := do(ctx, m, "CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
			return err
		}
	}
	per := Slots / primaries
	for i, m := range members[:primaries] {
		first, last := i*per, (i+1)*per-1
		if i == primaries-1 {
			last = Slots - 1
		}
		if err := do(ctx, m, "CLUSTER", "ADDSLOTSRANGE", first, last); err != nil {
			return err
		}
	}
	bus, err := busPort(ctx, members[0])
	if err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(members[0].Peer)
	if err != nil {
		return fmt.Errorf("form cluster: peer address of %s: %w", members[0].Name, err)
	}
	for _, m := range members[1:] {
		if err := do(ctx, m, "CLUSTER", "MEET", host, port, bus); err != nil {
			return err
		}
	}
	if err := awaitKnown(ctx, members); err != nil {
		return err
	}
	for i, m := range members[primaries:] {
		p := members[i%primaries]
		id, err := ID(ctx, p.Admin)
		if err != nil {
			return fmt.Errorf("form cluster: %s: %w", p.Name, err)
		}
		if err := do(ctx, m, "CLUSTER", "REPLICATE", id); err != nil {
			return err
		}
	}
	return Await(ctx, members)
}

// do sends one command to m and names m in its error.
func do(ctx context.Context, m Member, args ...any) error {
	cl := adminClient(m.Admin)
	defer cl.Close()
	if err := cl.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("%s: %v: %w", m.Name, args, err)
	}
	return nil
}

// adminClient is a one-connection client that sends each command once
// (exactlyonce.Options): dials bounded by a second, replies by two.
func adminClient(addr string) *redis.Client {
	opts := exactlyonce.Options(addr, 2*time.Second)
	opts.DialTimeout, opts.PoolSize = time.Second, 1
	return redis.NewClient(opts)
}

// busPort is the port m's cluster bus listens on.
func busPort(ctx context.Context, m Member) (int, error) {
	cl := adminClient(m.Admin)
	defer cl.Close()
	v, err := cl.ConfigGet(ctx, "cluster-port").Result()
	if err != nil {
		return 0, fmt.Errorf("%s: cluster bus port: %w", m.Name, err)
	}
	if p, _ := strconv.Atoi(v["cluster-port"]); p > 0 {
		return p, nil
	}
	_, port, err := net.SplitHostPort(m.Peer)
	if err != nil {
		return 0, fmt.Errorf("%s: peer address: %w", m.Name, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return 0, fmt.Errorf("%s: peer port %q: %w", m.Name, port, err)
	}
	return p + 10000, nil // Redis's default: the client port + 10000
}

// ID is the node ID of the server at addr.
func ID(ctx context.Context, addr string) (string, error) {
	cl := adminClient(addr)
	defer cl.Close()
	id, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return "", fmt.Errorf("cluster node ID: %w", err)
	}
	return id, nil
}

// pollInterval is how often Await looks again.
const pollInterval = 20 * time.Millisecond

// formTimeout bounds Form's waits when ctx has no deadline.
const formTimeout = 30 * time.Second

// awaitKnown waits until every member knows every other one by handshake (no node in
// handshake or without an address).
func awaitKnown(ctx context.Context, members []Member) error {
	return poll(ctx, "every node knows every other", func() error {
		for _, m := range members {
			nodes, err := Nodes(ctx, m.Admin)
			if err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
			known := 0
			for _, n := range nodes {
				if !n.Has("handshake") && !n.Has("noaddr") {
					known++
				}
			}
			if known != len(members) {
				return fmt.Errorf("%s knows %d of %d nodes", m.Name, known, len(members))
			}
		}
		return nil
	})
}

// Await waits until the cluster of members is whole: every node says cluster_state:ok
// with every slot served and every member known, sees every node without slots as a
// replica and none as failing, and every replica's link to its primary is up.
func Await(ctx context.Context, members []Member) error {
	return poll(ctx, "cluster ok", func() error {
		for _, m := range members {
			if err := whole(ctx, m, len(members)); err != nil {
				return err
			}
		}
		return nil
	})
}

// whole says what is not yet right with the cluster as m sees it.
func whole(ctx context.Context, m Member, members int) error {
	cl := adminClient(m.Admin)
	defer cl.Close()
	info, err := cl.ClusterInfo(ctx).Result()
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	f := replication.Fields(info)
	switch {
	case f["cluster_state"] != "ok":
		return fmt.Errorf("%s: cluster_state %s", m.Name, f["cluster_state"])
	case f["cluster_slots_ok"] != strconv.Itoa(Slots):
		return fmt.Errorf("%s: %s of %d slots ok", m.Name, f["cluster_slots_ok"], Slots)
	case f["cluster_known_nodes"] != strconv.Itoa(members):
		return fmt.Errorf("%s: knows %s of %d nodes", m.Name, f["cluster_known_nodes"], members)
	}
	text, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	nodes, err := ParseNodes(text)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	for _, n := range nodes {
		switch {
		case n.Has("fail") || n.Has("fail?"):
			return fmt.Errorf("%s: sees %s as %v", m.Name, n.Addr, n.Flags)
		case len(n.Slots) == 0 && n.Primary == "":
			return fmt.Errorf("%s: sees %s as a primary without slots, not yet a replica", m.Name, n.Addr)
		}
	}
	repl, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	if r := replication.Fields(repl); r["role"] == "slave" && r["master_link_status"] != "up" {
		return fmt.Errorf("%s: replica, link to its primary %s", m.Name, r["master_link_status"])
	}
	return nil
}

// poll calls check until it returns nil, every pollInterval, bounded by ctx (or
// formTimeout); on timeout the error names what was awaited and check's last answer.
func poll(ctx context.Context, what string, check func() error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, formTimeout)
		defer cancel()
	}
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("await %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}

// Node is one line of CLUSTER NODES.
type Node struct {
	ID      string
	Addr    string // host:port (the bus port and hostname cut off)
	Flags   []string
	Primary string // the ID of its primary; "" for a primary
	Slots   []string
}

// Has says whether n carries flag.
func (n Node) Has(flag string) bool {
	for _, f := range n.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// Nodes is CLUSTER NODES of the server at addr.
func Nodes(ctx context.Context, addr string) ([]Node, error) {
	cl := adminClient(addr)
	defer cl.Close()
	text, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("cluster nodes: %w", err)
	}
	return ParseNodes(text)
}

// ParseNodes reads the text of CLUSTER NODES:
// "<id> <ip:port@cport[,hostname]> <flags> <primary|-> <ping> <pong> <epoch> <link> <slot>...".
func ParseNodes(text string) ([]Node, error) {
	var nodes []Node
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("cluster nodes line %d: %d fields, want at least 8: %q", i+1, len(f), line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := Node{ID: f[0], Addr: addr, Flags: strings.Split(f[2], ","), Slots: f[8:]}
		if f[3] != "-" {
			n.Primary = f[3]
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, errors.New("cluster nodes: empty")
	}
	return nodes, nil
}

// Serves says whether n serves slot (its slot ranges "a-b" or "a"; importing and
// migrating entries "[...]" are not served).
func (n Node) Serves(slot int) bool {
	for _, r := range n.Slots {
		if strings.HasPrefix(r, "[") {
			continue
		}
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		if a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// PrimaryOf is the index in members of the primary serving key's slot, and of its
// replicas, as the first member that answers says.
func PrimaryOf(ctx context.Context, members []Member, key string) (primary int, replicas []int, err error) {
	var errs []error
	for _, m := range members {
		primary, replicas, err = primaryOf(ctx, m, members, key)
		if err == nil {
			return primary, replicas, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
	}
	return -1, nil, fmt.Errorf("the primary of %q: %w", key, errors.Join(errs...))
}

func primaryOf(ctx context.Context, m Member, members []Member, key string) (int, []int, error) {
	cl := adminClient(m.Admin)
	defer cl.Close()
	slot, err := cl.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return -1, nil, err
	}
	text, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return -1, nil, err
	}
	nodes, err := ParseNodes(text)
	if err != nil {
		return -1, nil, err
	}
	index := func(addr string) int {
		for i, x := range members {
			if x.Peer == addr {
				return i
			}
		}
		return -1
	}
	for _, n := range nodes {
		if !n.Has("master") || n.Has("fail") || !n.Serves(int(slot)) {
			continue
		}
		p := index(n.Addr)
		if p < 0 {
			return -1, nil, fmt.Errorf("slot %d is served by %s, no member", slot, n.Addr)
		}
		var replicas []int
		for _, r := range nodes {
			if r.Primary == n.ID {
				if i := index(r.Addr); i >= 0 {
					replicas = append(replicas, i)
				}
			}
		}
		return p, replicas, nil
	}
	return -1, nil, fmt.Errorf("no live primary serves slot %d", slot)
}

// Role is what the server at addr says it is: "master" or "slave".
func Role(ctx context.Context, addr string) (string, error) {
	f, err := replication.Info(ctx, addr)
	return f["role"], err
}

// Failover modes of CLUSTER FAILOVER sent to a replica: graceful (""), FORCE (no
// handshake with its primary, which may be dead) or TAKEOVER (not even the other
// primaries' votes).
const (
	FailoverForce    = "FORCE"
	FailoverTakeover = "TAKEOVER"
)

// Failover sends CLUSTER FAILOVER [mode] to replica m: it starts its own promotion.
func Failover(ctx context.Context, m Member, mode string) error {
	args := []any{"CLUSTER", "FAILOVER"}
	if mode != "" {
		args = append(args, mode)
	}
	return do(ctx, m, args...)
}

// AwaitPrimary waits until one of candidates says it is a primary, and returns its index.
func AwaitPrimary(ctx context.Context, candidates []Member) (int, error) {
	found := -1
	err := poll(ctx, "a promotion", func() error {
		var seen []string
		for i, m := range candidates {
			role, err := Role(ctx, m.Admin)
			if err == nil && role == "master" {
				found = i
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s: role %q %v", m.Name, role, err))
		}
		return errors.New(strings.Join(seen, "; "))
	})
	return found, err
}

// KeySlot is the hash slot of key, as the server at addr computes it.
func KeySlot(ctx context.Context, addr, key string) (int, error) {
	cl := adminClient(addr)
	defer cl.Close()
	slot, err := cl.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("slot of %q: %w", key, err)
	}
	return int(slot), nil
}

// migrateBatch is how many keys one MIGRATE moves.
const migrateBatch = 100

// MigrateSlot starts moving slot from src to dst as redis-cli --cluster reshard does:
// dst IMPORTING it, src MIGRATING it, then every key of the slot on src moved by MIGRATE
// (its value and remaining TTL, atomically per batch). It returns how many keys moved.
// The slot stays in that state, src answering ASK for a key it no longer has, until
// FinishSlot.
func MigrateSlot(ctx context.Context, src, dst Member, slot int) (int, error) {
	srcID, err := ID(ctx, src.Admin)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", src.Name, err)
	}
	dstID, err := ID(ctx, dst.Admin)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", dst.Name, err)
	}
	if err := do(ctx, dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID); err != nil {
		return 0, err
	}
	if err := do(ctx, src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID); err != nil {
		return 0, err
	}
	host, port, err := net.SplitHostPort(dst.Peer)
	if err != nil {
		return 0, fmt.Errorf("%s: peer address: %w", dst.Name, err)
	}
	cl := adminClient(src.Admin)
	defer cl.Close()
	moved := 0
	for {
		keys, err := cl.ClusterGetKeysInSlot(ctx, slot, migrateBatch).Result()
		if err != nil {
			return moved, fmt.Errorf("%s: keys of slot %d: %w", src.Name, slot, err)
		}
		if len(keys) == 0 {
			return moved, nil
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := cl.Do(ctx, args...).Err(); err != nil {
			return moved, fmt.Errorf("%s: migrate %d keys of slot %d to %s: %w", src.Name, len(keys), slot, dst.Name, err)
		}
		moved += len(keys)
	}
}

// FinishSlot ends a migration of slot to dst: every member assigns it to dst (dst
// first, then the others, as redis-cli does), and src answers MOVED from then on.
func FinishSlot(ctx context.Context, members []Member, slot int, dst Member) error {
	dstID, err := ID(ctx, dst.Admin)
	if err != nil {
		return fmt.Errorf("%s: %w", dst.Name, err)
	}
	var errs []error
	others := slices.DeleteFunc(slices.Clone(members), func(m Member) bool { return m.Name == dst.Name })
	for _, m := range append([]Member{dst}, others...) {
		if role, err := Role(ctx, m.Admin); err != nil || role != "master" {
			continue // a replica follows its primary; a dead node learns it when it returns
		}
		if err := do(ctx, m, "CLUSTER", "SETSLOT", slot, "NODE", dstID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
