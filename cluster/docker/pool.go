package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/exactlyonce"
	"github.com/locklab/locklab/cluster/replication"
	"github.com/locklab/locklab/cluster/sentinel"
)

// The pool: a stopped node's container is kept running, quiet, for the next start of the
// same server in the same backend (a campaign's next run), and reset through Redis
// instead of removed and made again. Making a container, joining it to two networks,
// starting it and removing it costs the engine hundreds of milliseconds a server, all of
// it serialised (serial.go); a reset costs a few round trips. What a run may leave in a
// server is undone by the reset or the container is not reused: its data, scripts and
// functions, its replication, its clients, any configuration changed at run time (found
// by comparing CONFIG GET * with what the fresh server said), a client pause; a Redis
// Cluster node forgets its cluster and takes a new node id with epochs at 0 (CLUSTER
// RESET HARD); a Sentinel forgets what it monitored and learnt, and gets its timings
// back. A container that was killed and not restarted, is isolated, runs under
// libfaketime (its clock), or fails a reset, is removed as before.

// DefaultIdle is how many stopped containers a backend keeps for reuse unless
// Options.Idle says otherwise: four runs of a Redis Cluster topology (nine nodes and the
// store) going on at once. An idle server holds a few megabytes.
const DefaultIdle = 40

// Bounds of the pool's Redis conversations.
const (
	parkTimeout  = 5 * time.Second
	resetTimeout = 10 * time.Second
)

// poolKey is what a reused container must have been made with: the same name, mode,
// port and command line, and a server's configuration file (a Sentinel's is what the
// reset tells it, but for the address it announces). "" means never reused.
func (s spec) poolKey() string {
	if s.faketime {
		return ""
	}
	config := s.config
	if s.sentinel != nil {
		config = "announce-ip " + s.sentinel.AnnounceIP
	}
	return strings.Join(append([]string{s.name, s.mode, strconv.Itoa(s.port), config}, s.args...), "\x00")
}

// baseline records what the fresh server says of itself, to reset it to later: its
// configuration (CONFIG GET *), or a Sentinel's timings (SENTINEL DEBUG). Nothing is
// recorded for a node that is never reused.
func (n *Node) baseline(ctx context.Context) error {
	if n.key == "" {
		return nil
	}
	var err error
	if n.mode == "sentinel" {
		sc := sentinel.Client(n.addr, resetTimeout)
		defer sc.Close()
		n.base, err = sentinel.Timings(ctx, sc)
	} else {
		cl := exactlyonce.OneConnection(n.addr, resetTimeout)
		defer cl.Close()
		n.base, err = cl.ConfigGet(ctx, "*").Result()
	}
	if err != nil {
		return fmt.Errorf("%s: read its configuration to reset it to later: %w", n.name, err)
	}
	return nil
}

// park keeps a stopping node's container for reuse, quiet: a server replicates from
// nobody and its clients are gone, a Sentinel monitors nothing (so that it reconfigures
// no server meanwhile). It reports whether the container was kept; when not, the caller
// removes it. Caller holds n.mu.
func (b *Backend) park(ctx context.Context, n *Node) bool {
	if n.key == "" || n.base == nil || n.id == "" || !n.running || n.isolated {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), parkTimeout)
	defer cancel()
	if n.paused {
		if _, err := b.cli.ContainerUnpause(ctx, n.id, client.ContainerUnpauseOptions{}); err != nil {
			return false
		}
		n.paused = false
	}
	if err := hush(ctx, n); err != nil {
		return false
	}
	b.mu.Lock()
	if b.closed || b.idleMax <= 0 {
		b.mu.Unlock()
		return false
	}
	kept := &Node{b: b, name: n.name, mode: n.mode, id: n.id, addr: n.addr, peer: n.peer, dir: n.dir,
		logPath: n.logPath, key: n.key, base: n.base, cluster: n.cluster, running: true}
	b.idle = append(b.idle, kept)
	var evicted []*Node
	if over := len(b.idle) - b.idleMax; over > 0 {
		evicted = slices.Clone(b.idle[:over])
		b.idle = slices.Delete(b.idle, 0, over)
	}
	b.mu.Unlock()
	// The stopped node keeps its name and id for the record; nothing more reaches the
	// container through it (its methods see it stopped, not running).
	n.running = false
	for _, e := range evicted {
		_ = e.discard(context.Background())
	}
	return true
}

// hush stops what a parked server or Sentinel would otherwise go on doing: a Sentinel
// monitors nothing, a server replicates from nobody (a Redis Cluster node forgets its
// cluster, which it can only once it holds no key), its clients are gone.
func hush(ctx context.Context, n *Node) error {
	if n.mode == "sentinel" {
		sc := sentinel.Client(n.addr, resetTimeout)
		defer sc.Close()
		return sentinel.Forget(ctx, sc)
	}
	cl := exactlyonce.OneConnection(n.addr, parkTimeout)
	defer cl.Close()
	if err := cl.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		return fmt.Errorf("client unpause: %w", err)
	}
	if n.cluster {
		// A primary's keys first (a replica refuses, and CLUSTER RESET flushes it).
		_ = cl.Do(ctx, "FLUSHALL", "SYNC").Err()
		if err := cl.Do(ctx, "CLUSTER", "RESET", "HARD").Err(); err != nil {
			return fmt.Errorf("cluster reset hard: %w", err)
		}
	} else if err := cl.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("replicaof no one: %w", err)
	}
	for _, typ := range []string{"normal", "pubsub"} {
		if err := cl.Do(ctx, "CLIENT", "KILL", "TYPE", typ, "SKIPME", "yes").Err(); err != nil {
			return fmt.Errorf("client kill type %s: %w", typ, err)
		}
	}
	return nil
}

// take hands out a parked container made for key, or nil.
func (b *Backend) take(key string) *Node {
	if key == "" {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, n := range b.idle {
		if n.key == key {
			b.idle = slices.Delete(b.idle, i, i+1)
			return n
		}
	}
	return nil
}

// reuse resets a parked container for s and returns it as a new node; on failure the
// container is removed and the caller makes a fresh one.
func (b *Backend) reuse(ctx context.Context, kept *Node, s spec) (*Node, error) {
	n := &Node{b: b, name: kept.name, mode: kept.mode, id: kept.id, addr: kept.addr, peer: kept.peer,
		dir: kept.dir, logPath: kept.logPath, key: kept.key, base: kept.base, cluster: kept.cluster, running: true}
	if err := b.register(n); err != nil {
		_ = kept.discard(context.Background())
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, resetTimeout)
	defer cancel()
	err := n.reset(rctx, s.sentinel)
	if err == nil {
		err = n.awaitReady(ctx)
	}
	if err != nil {
		n.mu.Lock()
		n.stopped = true
		rerr := n.remove(context.Background())
		n.mu.Unlock()
		b.release(n)
		return nil, errors.Join(fmt.Errorf("reset the container of %s for reuse: %w", s.name, err), rerr)
	}
	return n, nil
}

// reset brings a reused container's server back to what a fresh one is.
func (n *Node) reset(ctx context.Context, sc *sentinel.Config) error {
	if n.logPath != "" {
		// The server appends to its log (O_APPEND): the next line lands at the new end.
		if err := os.Truncate(n.logPath, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("empty its log: %w", err)
		}
	}
	if n.mode == "sentinel" {
		return resetSentinel(ctx, n, sc)
	}
	return resetServer(ctx, n)
}

// resetServer empties a server and undoes what a run changed in it, then checks that it
// is a primary with no replica, no key and the configuration it started with.
func resetServer(ctx context.Context, n *Node) error {
	cl := exactlyonce.OneConnection(n.addr, resetTimeout)
	defer cl.Close()
	// Replication first: a replica refuses FUNCTION FLUSH, and its replicaof is part of
	// the configuration compared below.
	if err := hush(ctx, n); err != nil {
		return err
	}
	cur, err := cl.ConfigGet(ctx, "*").Result()
	if err != nil {
		return fmt.Errorf("config get: %w", err)
	}
	if changed := diff(n.base, cur); len(changed) > 0 {
		args := []any{"config", "set"}
		for _, k := range changed {
			args = append(args, k, n.base[k])
		}
		if err := cl.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("config set %v back: %w", changed, err)
		}
	}
	_, err = cl.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "CLIENT", "KILL", "TYPE", "replica")
		p.Do(ctx, "FLUSHALL", "SYNC")
		p.Do(ctx, "SCRIPT", "FLUSH", "SYNC")
		p.Do(ctx, "FUNCTION", "FLUSH", "SYNC")
		p.Do(ctx, "CONFIG", "RESETSTAT")
		p.Do(ctx, "SLOWLOG", "RESET")
		return nil
	})
	if err != nil {
		return err
	}
	// Checked, not assumed.
	if cur, err = cl.ConfigGet(ctx, "*").Result(); err != nil {
		return fmt.Errorf("config get: %w", err)
	}
	if changed := diff(n.base, cur); len(changed) > 0 {
		return fmt.Errorf("configuration still differs from the fresh server's in %v", changed)
	}
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("info replication: %w", err)
	}
	f := replication.Fields(info)
	if f["role"] != "master" || f["connected_slaves"] != "0" {
		return fmt.Errorf("role %s with %s replicas, want a primary with none", f["role"], f["connected_slaves"])
	}
	if keys, err := cl.DBSize(ctx).Result(); err != nil || keys != 0 {
		return fmt.Errorf("%d keys after FLUSHALL (%v)", keys, err)
	}
	if n.cluster {
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("cluster info: %w", err)
		}
		f := replication.Fields(info)
		if f["cluster_known_nodes"] != "1" || f["cluster_slots_assigned"] != "0" || f["cluster_current_epoch"] != "0" {
			return fmt.Errorf("still in a cluster: %s nodes known, %s slots, epoch %s", f["cluster_known_nodes"], f["cluster_slots_assigned"], f["cluster_current_epoch"])
		}
	}
	return nil
}

// resetSentinel makes a Sentinel monitor what cfg says as if it had just started, with
// its fresh timings, and checks that it is not in TILT mode.
func resetSentinel(ctx context.Context, n *Node, cfg *sentinel.Config) error {
	if cfg == nil {
		return errors.New("no Sentinel configuration to reset to")
	}
	sc := sentinel.Client(n.addr, resetTimeout)
	defer sc.Close()
	if err := sentinel.Remonitor(ctx, sc, *cfg); err != nil {
		return err
	}
	if err := sentinel.SetTimings(ctx, sc, n.base); err != nil {
		return err
	}
	for _, typ := range []string{"normal", "pubsub"} {
		if err := sc.Process(ctx, redis.NewIntCmd(ctx, "client", "kill", "type", typ, "skipme", "yes")); err != nil {
			return fmt.Errorf("client kill type %s: %w", typ, err)
		}
	}
	if tilt, err := sentinel.Tilts(ctx, sc); err != nil || tilt {
		return fmt.Errorf("in TILT mode (%v)", err)
	}
	return nil
}

// diff names the parameters whose value in cur differs from base, sorted.
func diff(base, cur map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(base)) {
		if v, ok := cur[k]; ok && v != base[k] {
			out = append(out, k)
		}
	}
	return out
}

// discard removes a parked container and frees its address.
func (n *Node) discard(ctx context.Context) error {
	n.mu.Lock()
	n.stopped = true
	err := n.remove(ctx)
	n.mu.Unlock()
	n.b.release(n)
	return err
}
