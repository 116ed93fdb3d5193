package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/etcd"
)

// PeerLink is the name of the link every other member dials member node by (its
// advertised peer URL): "peers->lock-0". An etcd member advertises one peer URL to all,
// so its peers share one inbound link; a message from A to B travels on a connection B
// opened to A (rafthttp's streams) or on A's POST to B, so blackholing peers->A stops
// everything A says to its peers, and most of what they say to it: A is cut off.
func PeerLink(node string) string { return "peers->" + node }

// etcdMembers picks the ports of n members and makes (or remakes) their peer links.
func (c *Cluster) etcdMembers(n int) ([]etcd.Member, error) {
	members := make([]etcd.Member, n)
	for i := range members {
		m := &members[i]
		m.Name = fmt.Sprintf("lock-%d", i)
		var err error
		if m.ClientPort, err = FreePort(); err == nil {
			m.PeerPort, err = FreePort()
		}
		if err != nil {
			return nil, err
		}
		m.AdvertisePeer = "127.0.0.1:" + strconv.Itoa(m.PeerPort)
		if c.Net != nil {
			c.Net.Remove(PeerLink(m.Name))
			if m.AdvertisePeer, err = c.Net.Link(PeerLink(m.Name), m.AdvertisePeer); err != nil {
				return nil, err
			}
		}
	}
	return members, nil
}

// EtcdRefuses says which of opts an etcd cluster cannot honour, named as the plan's
// field, and why (nil when it honours them all).
func EtcdRefuses(opts Options) (option string, err error) {
	if opts.ServerClock == ClockFaketime {
		return "server_clock", errors.New("etcd members are Go programs, which read the clock without libc, so libfaketime cannot move it")
	}
	if opts.Persistence != "" && opts.Persistence != PersistNone {
		return "persistence", fmt.Errorf("%s is Redis's: an etcd member always writes its log to disk and fsyncs it before it acknowledges", opts.Persistence)
	}
	return "", nil
}

// etcdStarter is a backend that runs etcd members: the process backend.
type etcdStarter interface {
	startEtcd(ctx context.Context, members []etcd.Member, token string) ([]Node, error)
}

// startEtcd starts an etcd cluster of n members named lock-0 … lock-N-1 as the lock
// service, each peer URL behind its peer link, and makes lock-0 the leader, so that a
// scenario's fault on lock-0 strikes the leader.
func (c *Cluster) startEtcd(ctx context.Context, b Backend, n int, opts Options) error {
	eb, ok := b.(etcdStarter)
	if !ok {
		return fmt.Errorf("the %s backend cannot run etcd members (the process backend can)", b.Name())
	}
	if option, err := EtcdRefuses(opts); err != nil {
		return fmt.Errorf("%s: %w", option, err)
	}
	token := fmt.Sprintf("locklab-%d", time.Now().UnixNano())
	var errs []error
	for range portAttempts {
		members, err := c.etcdMembers(n)
		if err != nil {
			return err
		}
		nodes, err := eb.startEtcd(ctx, members, token)
		if err == nil {
			c.Lock = nodes
			break
		}
		// Another process took a port between freePort and the member's bind: start the
		// whole cluster again on fresh ports (a member's peers know it by its port).
		errs = append(errs, err)
		for _, nd := range nodes {
			errs = append(errs, nd.Stop(ctx))
		}
		if !errors.Is(err, errPortInUse) {
			return errors.Join(errs...)
		}
	}
	if c.Lock == nil {
		return errors.Join(errs...)
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	return etcd.Lead(ctx, c.LockAddrs(), 0)
}

// startEtcd starts the members of a new cluster together (a member serves only once a
// quorum runs) and waits until each one is healthy.
func (b *ProcessBackend) startEtcd(ctx context.Context, members []etcd.Member, token string) ([]Node, error) {
	bin, err := etcd.FindBinary()
	if err != nil {
		return nil, err
	}
	var initial []string
	for _, m := range members {
		initial = append(initial, m.Name+"=http://"+m.AdvertisePeer)
	}
	var nodes []Node
	var started []*ProcessNode
	var logStarts []int64
	for _, m := range members {
		if m.Dir, err = os.MkdirTemp(b.root, m.Name+"-etcd-"); err != nil {
			return nodes, fmt.Errorf("make directory for %s: %w", m.Name, err)
		}
		n := &ProcessNode{
			kind:    "etcd",
			name:    m.Name,
			addr:    "127.0.0.1:" + strconv.Itoa(m.ClientPort),
			dir:     m.Dir,
			logPath: m.LogFile(),
			outPath: filepath.Join(m.Dir, "stdout.log"),
			binary:  bin,
			args:    m.Args(strings.Join(initial, ","), token),
			spawn:   b.spawn,
		}
		n.ready = func(ctx context.Context) error {
			if err := etcd.Healthy(ctx, n.addr); err != nil {
				return err
			}
			// /health says nothing of who answered: another run's member may hold the port
			// this one failed to bind (seen once under load: a healthy member that was not
			// ours, and ours dead). Only this process's own log can say it serves.
			if !grewWith(n.logPath, n.proc.logStart, etcd.ReadyMessage) {
				return fmt.Errorf("%w: a member answers on %s, but %s's log does not say it serves yet", errNotReady, n.addr, n.name)
			}
			return nil
		}
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
		started, logStarts = append(started, n), append(logStarts, start)
	}
	var errs []error
	for i, n := range started {
		n.mu.Lock()
		errs = append(errs, n.awaitLocked(ctx, logStarts[i]))
		n.mu.Unlock()
	}
	return nodes, errors.Join(errs...)
}

// KindOf is what server n is: "etcd" for an etcd member, else "redis" (external
// servers included).
func KindOf(n Node) string {
	if k, ok := n.(interface{ Kind() string }); ok {
		return k.Kind()
	}
	return "redis"
}

// IsEtcd reports whether n is an etcd member.
func IsEtcd(n Node) bool { return KindOf(n) == "etcd" }

// Ping checks that n serves: a Redis PING, or an etcd member's health.
func Ping(ctx context.Context, n Node, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if IsEtcd(n) {
		return etcd.Healthy(ctx, n.Addr())
	}
	rdb := redis.NewClient(NodeOptions(n, timeout))
	defer rdb.Close()
	return rdb.Ping(ctx).Err()
}
