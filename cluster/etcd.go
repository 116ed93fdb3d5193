package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EnvEtcd names the etcd binary (or the folder holding locklab-etcd). Without it, locklab
// looks for bin/locklab-etcd (built by `make build` from the go.etcd.io/etcd/server/v3
// module pinned in go.mod) in the working directory and its parents and beside the
// locklab binary, then for etcd on PATH.
const EnvEtcd = "LOCKLAB_ETCD"

// Etcd timing. Raft's heartbeat and election timeout are a tenth of etcd's defaults
// (100 ms, 1 s), so that a partitioned or paused leader is replaced within a second,
// and still five times the heartbeat so that a loaded 2-core machine does not see
// spurious elections. They also set etcd's smallest lease: ceil(1.5 × election ticks ×
// heartbeat) = 1 s; etcd counts lease TTLs in whole seconds.
const (
	etcdHeartbeat = 50 * time.Millisecond
	etcdElection  = 500 * time.Millisecond
)

// PeerLink is the name of the link every other member dials member node by (its
// advertised peer URL): "peers->lock-0". An etcd member advertises one peer URL to all,
// so its peers share one inbound link; a message from A to B travels on a connection B
// opened to A (rafthttp's streams) or on A's POST to B, so blackholing peers->A stops
// everything A says to its peers, and most of what they say to it: A is cut off.
func PeerLink(node string) string { return "peers->" + node }

// FindEtcd resolves the etcd binary, saying where it looked when there is none.
func FindEtcd() (string, error) {
	if env := os.Getenv(EnvEtcd); env != "" {
		path := env
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			path = filepath.Join(path, "locklab-etcd")
		}
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("$%s=%s: no etcd there: %v", EnvEtcd, env, err)
		}
		return filepath.Abs(path)
	}
	var looked []string
	rel := filepath.Join("bin", "locklab-etcd")
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if fi, err := os.Stat(filepath.Join(dir, rel)); err == nil && !fi.IsDir() {
				return filepath.Join(dir, rel), nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
		looked = append(looked, wd+" and its parents")
	}
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		for _, path := range []string{filepath.Join(dir, "locklab-etcd"), filepath.Join(dir, "..", rel)} {
			if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
				return filepath.Clean(path), nil
			}
		}
		looked = append(looked, dir)
	}
	if path, err := exec.LookPath("etcd"); err == nil {
		return path, nil
	}
	looked = append(looked, "PATH (etcd)")
	return "", fmt.Errorf("etcd not found (looked for %s in %s); run `make build`, which builds it from the pinned go.etcd.io/etcd/server/v3, or set %s to an etcd binary",
		rel, strings.Join(looked, ", "), EnvEtcd)
}

// etcdMember is what one member of a new etcd cluster is started with.
type etcdMember struct {
	name                 string
	clientPort, peerPort int
	advertisePeer        string // host:port the other members dial it by (its peer link)
}

// etcdStarter is a backend that runs etcd members: the process backend.
type etcdStarter interface {
	startEtcd(ctx context.Context, members []etcdMember, token string) ([]Node, error)
}

// startEtcd starts an etcd cluster of n members named lock-0 … lock-N-1 as the lock
// service, each peer URL behind its peer link, and makes lock-0 the leader, so that a
// scenario's fault on lock-0 strikes the leader.
func (c *Cluster) startEtcd(ctx context.Context, b Backend, n int, opts Options) error {
	eb, ok := b.(etcdStarter)
	if !ok {
		return fmt.Errorf("the %s backend cannot run etcd members (the process backend can)", b.Name())
	}
	if opts.ServerClock == ClockFaketime {
		return errors.New("server clock faketime: etcd members are Go programs, which read the clock without libc, so libfaketime cannot move it")
	}
	if opts.Persistence != "" && opts.Persistence != PersistNone {
		return fmt.Errorf("persistence %s is Redis's: an etcd member always writes its log to disk and fsyncs it before it acknowledges", opts.Persistence)
	}
	var errs []error
	for range portAttempts {
		members := make([]etcdMember, n)
		for i := range members {
			m := &members[i]
			m.name = fmt.Sprintf("lock-%d", i)
			var err error
			if m.clientPort, err = freePort(); err == nil {
				m.peerPort, err = freePort()
			}
			if err != nil {
				return err
			}
			m.advertisePeer = "127.0.0.1:" + strconv.Itoa(m.peerPort)
			if c.Net != nil {
				if m.advertisePeer, err = c.Net.Link(PeerLink(m.name), m.advertisePeer); err != nil {
					return err
				}
			}
		}
		nodes, err := eb.startEtcd(ctx, members, fmt.Sprintf("locklab-%d", time.Now().UnixNano()))
		c.Lock = append(c.Lock, nodes...) // stopped by Close, also when the start failed
		if err == nil {
			return c.etcdLeader(ctx, 0)
		}
		errs = append(errs, err)
		if !errors.Is(err, errPortInUse) || c.Net != nil {
			// With a Net the peer links point at the old ports; do not retry.
			break
		}
		for _, nd := range nodes {
			_ = nd.Stop(ctx)
		}
		c.Lock = nil
	}
	return errors.Join(errs...)
}

// startEtcd starts the members of a new cluster together (a member serves only once a
// quorum runs) and waits until each one is healthy.
func (b *ProcessBackend) startEtcd(ctx context.Context, members []etcdMember, token string) ([]Node, error) {
	bin, err := FindEtcd()
	if err != nil {
		return nil, err
	}
	var initial []string
	for _, m := range members {
		initial = append(initial, m.name+"=http://"+m.advertisePeer)
	}
	var nodes []Node
	var started []*ProcessNode
	var logStarts []int64
	for _, m := range members {
		dir, err := os.MkdirTemp(b.root, m.name+"-etcd-")
		if err != nil {
			return nodes, fmt.Errorf("make directory for %s: %w", m.name, err)
		}
		n := newEtcdNode(b, bin, dir, m, strings.Join(initial, ","), token)
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

// newEtcdNode is one etcd member as a ProcessNode: its data directory survives Kill, so
// Restart recovers what its write-ahead log holds (everything it acknowledged).
func newEtcdNode(b *ProcessBackend, bin, dir string, m etcdMember, initial, token string) *ProcessNode {
	client := "http://127.0.0.1:" + strconv.Itoa(m.clientPort)
	n := &ProcessNode{
		kind:    "etcd",
		name:    m.name,
		addr:    "127.0.0.1:" + strconv.Itoa(m.clientPort),
		dir:     dir,
		logPath: filepath.Join(dir, "etcd.log"),
		outPath: filepath.Join(dir, "stdout.log"),
		binary:  bin,
		spawn:   b.spawn,
	}
	n.args = []string{
		"--name", m.name,
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(m.peerPort),
		"--initial-advertise-peer-urls", "http://" + m.advertisePeer,
		"--initial-cluster", initial,
		"--initial-cluster-token", token,
		"--initial-cluster-state", "new", // ignored on a restart: the data directory says
		"--heartbeat-interval", strconv.Itoa(int(etcdHeartbeat.Milliseconds())),
		"--election-timeout", strconv.Itoa(int(etcdElection.Milliseconds())),
		"--log-outputs", filepath.Join(dir, "etcd.log"),
		"--log-level", "info",
	}
	n.ready = func(ctx context.Context) error { return etcdHealthy(ctx, n.addr) }
	return n
}

// etcdHealthy asks a member's /health endpoint, which answers true once the member has
// a leader and can serve a linearizable read.
func etcdHealthy(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return fmt.Errorf("/health answered %q: %w", body, err)
	}
	if h.Health != "true" {
		return fmt.Errorf("%w: /health says %s %s", errNotReady, h.Health, h.Reason)
	}
	return nil
}

// IsEtcd reports whether n is an etcd member.
func IsEtcd(n Node) bool {
	k, ok := n.(interface{ Kind() string })
	return ok && k.Kind() == "etcd"
}

// Ping checks that n serves: a Redis PING, or an etcd member's health.
func Ping(ctx context.Context, n Node, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if IsEtcd(n) {
		return etcdHealthy(ctx, n.Addr())
	}
	rdb := redis.NewClient(NodeOptions(n, timeout))
	defer rdb.Close()
	return rdb.Ping(ctx).Err()
}

// etcdLeader moves the leadership of the etcd lock service to member i, unless it has it.
func (c *Cluster) etcdLeader(ctx context.Context, i int) error {
	if len(c.Lock) < 2 {
		return nil
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.LockAddrs(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	want, err := cli.Status(ctx, c.Lock[i].Addr())
	if err != nil {
		return fmt.Errorf("status of %s: %w", c.Lock[i].Name(), err)
	}
	if want.Leader == want.Header.MemberId {
		return nil
	}
	for _, n := range c.Lock {
		st, err := cli.Status(ctx, n.Addr())
		if err != nil || st.Leader != st.Header.MemberId {
			continue
		}
		// MoveLeader must reach the leader itself.
		one, err := clientv3.New(clientv3.Config{Endpoints: []string{n.Addr()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return fmt.Errorf("etcd client: %w", err)
		}
		_, err = one.MoveLeader(ctx, want.Header.MemberId)
		one.Close()
		if err != nil {
			return fmt.Errorf("move the etcd leadership to %s: %w", c.Lock[i].Name(), err)
		}
		return nil
	}
	return fmt.Errorf("move the etcd leadership to %s: no member says it leads", c.Lock[i].Name())
}
