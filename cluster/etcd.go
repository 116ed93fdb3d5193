package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/etcd"
	"github.com/locklab/locklab/cluster/zookeeper"
)

// PeerLink is the name of the link every other member dials member node by (its
// advertised peer URL): "peers->lock-0". An etcd member advertises one peer URL to all,
// so its peers share one inbound link; a message from A to B travels on a connection B
// opened to A (rafthttp's streams) or on A's POST to B, so blackholing peers->A stops
// everything A says to its peers, and most of what they say to it: A is cut off.
func PeerLink(node string) string { return "peers->" + node }

// relink is link name to addr made anew (a start again moves the server), patient for
// that long (netproxy.Net.PatientLink); without a Net, addr itself.
func (c *Cluster) relink(name, addr string, patience time.Duration) (string, error) {
	if c.Net == nil {
		return addr, nil
	}
	c.Net.Remove(name)
	return c.Net.PatientLink(name, addr, patience)
}

// Refuses says which of opts a topology of kind cannot honour, named as the plan's field,
// and why: an etcd cluster's or ZooKeeper ensemble's refusals (nil for a Redis kind).
func Refuses(kind string, opts Options) (option string, err error) {
	switch kind {
	case Etcd:
		return consensusRefuses(opts, "etcd members are Go programs, which read the clock without libc, so libfaketime cannot move it",
			"an etcd member always writes its log to disk and fsyncs it before it acknowledges")
	case ZooKeeper:
		return consensusRefuses(opts, zookeeper.NoFaketime, zookeeper.Durable)
	}
	return "", nil
}

// consensusRefuses is what a consensus service refuses of opts: server clocks under
// libfaketime, for reason clock, and Redis's persistence, since it persists as durable says.
func consensusRefuses(opts Options, clock, durable string) (option string, err error) {
	if opts.ServerClock == ClockFaketime {
		return "server_clock", errors.New(clock)
	}
	if opts.Persistence != "" && opts.Persistence != PersistNone {
		return "persistence", fmt.Errorf("%s is Redis's: %s", opts.Persistence, durable)
	}
	return "", nil
}

// consensusBackend is a backend that runs etcd and ZooKeeper members: the process backend.
type consensusBackend interface {
	startEtcd(ctx context.Context, members []etcd.Member, token string) ([]Node, error)
	startZooKeeper(ctx context.Context, members []zookeeper.Member) ([]Node, error)
}

// startEtcd starts an etcd cluster of n members named lock-0 … lock-N-1 as the lock
// service, each peer URL behind its peer link, and makes lock-0 the leader, so that a
// scenario's fault on lock-0 strikes the leader.
func (c *Cluster) startEtcd(ctx context.Context, b Backend, n int, opts Options) error {
	eb, ok := b.(consensusBackend)
	if !ok {
		return fmt.Errorf("the %s backend cannot run etcd members (the process backend can)", b.Name())
	}
	if option, err := Refuses(Etcd, opts); err != nil {
		return fmt.Errorf("%s: %w", option, err)
	}
	token := fmt.Sprintf("locklab-%d", time.Now().UnixNano())
	err := c.startOnFreshPorts(ctx, func() ([]Node, error) {
		members, err := etcd.NewMembers(n, FreePort, func(name, addr string) (string, error) { return c.relink(PeerLink(name), addr, 0) })
		if err != nil {
			return nil, err
		}
		return eb.startEtcd(ctx, members, token)
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	return etcd.Lead(ctx, c.LockAddrs(), 0)
}

// startOnFreshPorts starts the members of a consensus service with start, which picks
// their ports, and makes them c's lock servers. When another process took a port between
// FreePort and a member's bind, it stops them and starts them all again on fresh ports (a
// member's peers know it by its ports), a few times at most.
func (c *Cluster) startOnFreshPorts(ctx context.Context, start func() ([]Node, error)) error {
	var errs []error
	for range portAttempts {
		nodes, err := start()
		if err == nil {
			c.Lock = nodes
			return nil
		}
		errs = append(errs, err)
		for _, nd := range nodes {
			errs = append(errs, nd.Stop(ctx))
		}
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	return errors.Join(errs...)
}

// startEtcd starts the members of a new cluster together (a member serves only once a
// quorum runs) and waits until each one is healthy.
func (b *ProcessBackend) startEtcd(ctx context.Context, members []etcd.Member, token string) ([]Node, error) {
	bin, err := etcd.FindBinary()
	if err != nil {
		return nil, err
	}
	var nodes []*ProcessNode
	for _, m := range members {
		if m.Dir, err = os.MkdirTemp(b.root, m.Name+"-etcd-"); err != nil {
			return nil, fmt.Errorf("make directory for %s: %w", m.Name, err)
		}
		n := &ProcessNode{kind: "etcd", name: m.Name, addr: m.ClientAddr(), dir: m.Dir, logPath: m.LogFile(),
			outPath: filepath.Join(m.Dir, "stdout.log"), binary: bin, args: m.Args(etcd.InitialCluster(members), token), spawn: b.spawn}
		n.ready = func(ctx context.Context) error { return m.Ready(ctx, n.proc.logStart) }
		nodes = append(nodes, n)
	}
	return b.startTogether(ctx, nodes)
}

// startTogether launches the members of a consensus service at once (a member serves
// only once a quorum runs) and waits until each one serves. It returns those it
// registered, which Close stops.
func (b *ProcessBackend) startTogether(ctx context.Context, members []*ProcessNode) ([]Node, error) {
	var nodes []Node
	var logStarts []int64
	for _, n := range members {
		if err := b.register(n); err != nil {
			return nodes, err
		}
		nodes = append(nodes, n)
		n.mu.Lock()
		start, err := n.launchLocked()
		n.mu.Unlock()
		if err != nil {
			return nodes, err
		}
		logStarts = append(logStarts, start)
	}
	var errs []error
	for i, n := range members {
		n.mu.Lock()
		errs = append(errs, n.awaitLocked(ctx, logStarts[i]))
		n.mu.Unlock()
	}
	return nodes, errors.Join(errs...)
}

// KindOf is what server n is: "etcd" for an etcd member, "zookeeper" for a ZooKeeper
// member, else "redis" (external servers included).
func KindOf(n Node) string {
	if k, ok := n.(interface{ Kind() string }); ok {
		return k.Kind()
	}
	return "redis"
}

// Consensus reports whether kind, a topology's or a server's (KindOf), is a consensus service.
func Consensus(kind string) bool { return kind == Etcd || kind == ZooKeeper }

// Ping checks that n serves: a Redis PING, an etcd member's health, or a ZooKeeper
// member's srvr.
func Ping(ctx context.Context, n Node, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch KindOf(n) {
	case "etcd":
		return etcd.Healthy(ctx, n.Addr())
	case zookeeper.Kind:
		return zookeeper.Serving(ctx, n.Addr())
	}
	rdb := redis.NewClient(NodeOptions(n, timeout))
	defer rdb.Close()
	return rdb.Ping(ctx).Err()
}
