// Package replication reads and cuts the replication of one Redis server, by address:
// its INFO replication, a Cutter that stops a primary feeding its replicas (or one of
// them) at an instant when it holds no lease, and a replica barred from promotion.
// Package cluster wires them to its servers.
package replication

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/exactlyonce"
)

// Info is the INFO replication of the server at addr, as fields.
func Info(ctx context.Context, addr string) (map[string]string, error) {
	cl := exactlyonce.OneConnection(addr, time.Second)
	defer cl.Close()
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	return Fields(info), nil
}

// Fields are the key:value lines of an INFO-style text (INFO, CLUSTER INFO).
func Fields(text string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// Offset is how far into the replication stream the server at addr is: on a replica,
// what it has received from its primary; on a primary, what it has produced.
func Offset(ctx context.Context, addr string) (int64, error) {
	f, err := Info(ctx, addr)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(f["master_repl_offset"], 10, 64)
}

// Replicates says whether the server at addr is a replica of the primary at primary
// (host:port as the replica names it); false when it does not answer.
func Replicates(ctx context.Context, addr, primary string) bool {
	f, err := Info(ctx, addr)
	return err == nil && f["role"] == "slave" && net.JoinHostPort(f["master_host"], f["master_port"]) == primary
}

// AwaitCaughtUp waits, looking every poll, until the server at addr is a replica whose
// link to its primary is up (the sync done, the stream flowing) and which has received
// the stream up to offset want (0: any). Bounded by ctx.
func AwaitCaughtUp(ctx context.Context, addr string, want int64, poll time.Duration) error {
	var last string
	for {
		f, err := Info(ctx, addr)
		off, _ := strconv.ParseInt(f["master_repl_offset"], 10, 64)
		switch {
		case err != nil:
			last = err.Error()
		case f["role"] != "slave":
			last = "role " + f["role"]
		case f["master_link_status"] != "up":
			last = "master link " + f["master_link_status"]
		case off < want:
			last = fmt.Sprintf("at offset %d of %d", off, want)
		default:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not in sync: %w (last: %s)", ctx.Err(), last)
		case <-time.After(poll):
		}
	}
}

// Cutter is one connection to a primary, kept while a fault looks for an instant to cut
// its replication when it holds no lease: a look costs a round trip, not a dial.
type Cutter struct {
	name string // the primary's, for errors
	cl   *redis.Client
	only *replica // the one replica to cut (CutOnly); nil: every replica
}

// replica is one replica a Cutter cuts, over a connection of its own.
type replica struct {
	name string
	cl   *redis.Client
}

// NewCutter is a Cutter of the primary name at addr; it dials at its first command.
// Close it after use.
func NewCutter(name, addr string) *Cutter {
	return &Cutter{name: name, cl: exactlyonce.OneConnection(addr, time.Second)}
}

// CutOnly makes k cut the replica name at addr alone: the other replicas keep
// replicating (and acknowledging WAIT), and one of them may be barred from promotion
// (Bar) so that the lagging one is promoted.
func (k *Cutter) CutOnly(name, addr string) {
	k.only = &replica{name: name, cl: exactlyonce.OneConnection(addr, time.Second)}
}

// Close closes the cutter's connections.
func (k *Cutter) Close() error {
	if k.only != nil {
		k.only.cl.Close()
	}
	return k.cl.Close()
}

// Leases is how many keys with an expiry the primary holds. The lock implementations
// here give every lease a TTL and nothing else one (fence counters have none, and the
// protected store is another server), so it counts the leases held.
func (k *Cutter) Leases(ctx context.Context) (int64, error) {
	info, err := k.cl.Info(ctx, "keyspace").Result()
	if err != nil {
		return 0, fmt.Errorf("leases on %s: %w", k.name, err)
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
//
// A Cutter that cuts one replica (CutOnly) cuts it on the replica's side (cutReplica)
// first, and then counts the leases on the primary and sends then.
func (k *Cutter) Cut(ctx context.Context, then ...any) (leases int64, err error) {
	if k.only != nil {
		if err := cutReplica(ctx, k.only.cl); err != nil {
			return 0, fmt.Errorf("cut %s off %s: %w", k.only.name, k.name, err)
		}
	}
	var keyspace *redis.StringCmd
	_, err = k.cl.TxPipelined(ctx, func(p redis.Pipeliner) error {
		keyspace = p.Info(ctx, "keyspace")
		if k.only == nil {
			p.Do(ctx, "ACL", "SETUSER", "default", "-sync", "-psync")
			p.Do(ctx, "CLIENT", "KILL", "TYPE", "replica")
		}
		if len(then) > 0 {
			p.Do(ctx, then...)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cut replication from %s: %w", k.name, err)
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
		return 0, false, 0, fmt.Errorf("pause writes on %s to count its leases: %w", k.name, err)
	}
	if leases = expiringKeys(keyspace.Val()); leases > 0 {
		if err := k.cl.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
			return leases, false, 0, fmt.Errorf("unpause writes on %s: %w", k.name, err)
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

// cutUser is the user a cut replica authenticates as to its primary: no such user
// exists, so every reconnection fails.
const cutUser = "locklab-cut-replica"

// cutReplica cuts a replica off its primary from now on, on the replica's side: it must
// authenticate as a user that does not exist, and its link is closed, so its
// reconnections fail and it keeps what it had (a lagging replica). Its primary and the
// other replicas are untouched. ReconnectReplica undoes it.
func cutReplica(ctx context.Context, cl *redis.Client) error {
	_, err := cl.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ConfigSet(ctx, "masteruser", cutUser)
		p.ConfigSet(ctx, "masterauth", cutUser)
		p.Do(ctx, "CLIENT", "KILL", "TYPE", "master")
		return nil
	})
	return err
}

// ReconnectReplica undoes a Cutter's cut of the replica at addr alone (CutOnly): it
// authenticates as the default user again and reconnects within a second.
func ReconnectReplica(ctx context.Context, addr string) error {
	cl := exactlyonce.OneConnection(addr, time.Second)
	defer cl.Close()
	_, err := cl.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ConfigSet(ctx, "masteruser", "")
		p.ConfigSet(ctx, "masterauth", "")
		return nil
	})
	if err != nil {
		return fmt.Errorf("reconnect the replica at %s: %w", addr, err)
	}
	return nil
}

// Bar bars the replica at addr from promotion, or lifts the bar: a replica with
// replica-priority 0 is never promoted by Sentinel, and one of a Redis Cluster with
// cluster-replica-no-failover never starts an election of its own. The bar takes effect
// on the replica at once; Sentinels read it from its INFO.
func Bar(ctx context.Context, addr string, redisCluster, barred bool) error {
	param, value := "replica-priority", map[bool]string{true: "0", false: "100"}[barred]
	if redisCluster {
		param, value = "cluster-replica-no-failover", map[bool]string{true: "yes", false: "no"}[barred]
	}
	cl := exactlyonce.OneConnection(addr, time.Second)
	defer cl.Close()
	if err := cl.ConfigSet(ctx, param, value).Err(); err != nil {
		return fmt.Errorf("config set %s %s on %s: %w", param, value, addr, err)
	}
	return nil
}
