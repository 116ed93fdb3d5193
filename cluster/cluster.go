package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/cluster/netproxy"
)

// Options configures Start.
type Options struct {
	// Persistence of the lock servers; the store always runs without persistence.
	Persistence Persistence
	// ServerClock "faketime" starts the lock servers under libfaketime, so that clock
	// faults can move their wall clock; "" or "real" leaves their clocks alone.
	ServerClock string
	ReplicaArgs []string // more arguments of every data node of a replicated topology (min-replicas-*)
}

// Cluster is a running topology: the lock servers (Redis, etcd or ZooKeeper members) clients talk to, and a separate store
// for the protected resource, so that faults on lock servers never touch it.
type Cluster struct {
	Topology Topology
	Lock     []Node
	Store    Node
	// Net carries the clients' (and servers') traffic through links that network faults
	// can disturb; nil means parties talk to the servers' own addresses.
	Net *netproxy.Net
	// Sentinels watch the primary of a replicated topology and promote a replica when it
	// fails (sentinel.go); none in the other topologies.
	Sentinels []Node
}

// Start starts topology t on b. On error it stops whatever it had started.
func Start(ctx context.Context, b Backend, t Topology, opts Options) (*Cluster, error) {
	if err := opts.checkClock(); err != nil {
		return nil, err
	}
	var lockCount int
	switch t.Kind {
	case Single:
		lockCount = 1
	case Nodes:
		lockCount = t.Nodes
	case Replicated, Etcd, RedisCluster, ZooKeeper:
		lockCount = t.Nodes
	default:
		return nil, fmt.Errorf("unknown topology kind %q", t.Kind)
	}
	if lockCount < 1 {
		return nil, fmt.Errorf("topology %s: needs at least one node", t)
	}
	c := &Cluster{Topology: t, Net: netproxy.NewNet()}
	// The store starts beside the lock servers, however long they take: a container takes
	// a quarter of a second to start, a process a few milliseconds, a replicated topology
	// or an etcd cluster longer.
	var store sync.WaitGroup
	var storeErr error
	store.Go(func() { c.Store, storeErr = b.StartNode(ctx, NodeConfig{Name: "store"}) })
	err := c.startLock(ctx, b, opts, lockCount)
	store.Wait()
	if err := errors.Join(err, storeErr); err != nil {
		return nil, errors.Join(fmt.Errorf("start %s on %s backend: %w", t, b.Name(), err), c.Close())
	}
	return c, nil
}

// startLock starts the lock servers of c's topology, count of them for single and nodes.
func (c *Cluster) startLock(ctx context.Context, b Backend, opts Options, count int) error {
	switch c.Topology.Kind {
	case Replicated:
		return c.startReplicated(ctx, b, opts)
	case Etcd:
		return c.startEtcd(ctx, b, c.Topology.Nodes, opts)
	case RedisCluster:
		return c.startRedisCluster(ctx, b, opts)
	case ZooKeeper:
		return c.startZooKeeper(ctx, b, c.Topology.Nodes, opts)
	}
	nodes, err := startAll(count, func(i int) (Node, error) {
		return b.StartNode(ctx, opts.lockNode(fmt.Sprintf("lock-%d", i)))
	})
	c.Lock = nodes
	return err
}

// startAll starts n servers at once, start(i) the i-th, and returns those that started,
// in order, with every error.
func startAll(n int, start func(i int) (Node, error)) ([]Node, error) {
	nodes := make([]Node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { nodes[i], errs[i] = start(i) })
	}
	wg.Wait()
	return slices.DeleteFunc(nodes, func(n Node) bool { return n == nil }), errors.Join(errs...)
}

// LockAddrs are the lock servers' addresses, in order.
func (c *Cluster) LockAddrs() []string {
	addrs := make([]string, len(c.Lock))
	for i, n := range c.Lock {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes are all servers: the lock servers, then the store.
func (c *Cluster) Nodes() []Node {
	nodes := append([]Node(nil), c.Lock...)
	if c.Store != nil {
		nodes = append(nodes, c.Store)
	}
	return nodes
}

// CopyLogs copies each server's log into dir as <name>.log, for a run's report, with
// scrub's secrets redacted (nil: as it is).
func (c *Cluster) CopyLogs(dir string, scrub *access.Scrubber) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("copy redis logs: %w", err)
	}
	var errs []error
	for _, n := range append(c.Nodes(), c.Sentinels...) {
		if n.LogPath() == "" {
			continue
		}
		if err := copyFile(n.LogPath(), filepath.Join(dir, n.Name()+".log"), scrub); err != nil {
			errs = append(errs, fmt.Errorf("copy log of %s: %w", n.Name(), err))
		}
	}
	return errors.Join(errs...)
}

func copyFile(from, to string, scrub *access.Scrubber) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, scrub.Bytes(data), 0o644)
}

// Close stops every server of the cluster (the backend stays open). Idempotent.
func (c *Cluster) Close() error {
	return c.end(func(n Node) error { return n.Stop(context.Background()) })
}

// Discarder is a Node that can end for good at once, with no shutdown of its own, when
// nothing needs what it holds any more.
type Discarder interface {
	Discard() error
}

// Discard ends every server of the cluster for good when nothing needs what they hold any
// more (a run whose logs were copied and whose data goes with its directory): a Discarder
// at once, any other server as Close stops it. Redis begins the shutdown a SIGTERM asks
// for only at its next cron tick, up to 100 ms later, and writes nothing anyone reads.
// Idempotent, and Close after it stops nothing twice.
func (c *Cluster) Discard() error {
	return c.end(func(n Node) error {
		if d, ok := n.(Discarder); ok {
			return d.Discard()
		}
		return n.Stop(context.Background())
	})
}

// end closes the links and ends every server with end.
func (c *Cluster) end(end func(Node) error) error {
	var errs []error
	if c.Net != nil {
		// Links first, so that no proxy is left forwarding to a stopped server.
		if err := c.Net.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close network: %w", err))
		}
	}
	// Sentinels first, so that they never fail over a primary that is being stopped; the
	// servers of each group at once.
	for _, group := range [][]Node{c.Sentinels, c.Nodes()} {
		errs = append(errs, endAll(group, end))
	}
	return errors.Join(errs...)
}

// StopAll stops nodes at once and joins their errors, each naming its node.
func StopAll[N Node](ctx context.Context, nodes []N) error {
	return endAll(nodes, func(n N) error { return n.Stop(ctx) })
}

// endAll ends nodes at once with end and joins their errors, each naming its node.
func endAll[N Node](nodes []N, end func(N) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			if err := end(n); err != nil {
				errs[i] = fmt.Errorf("stop %s: %w", n.Name(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
