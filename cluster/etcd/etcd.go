// Package etcd is what locklab needs of an etcd server to run one as a lock service:
// finding the binary, a member's command line, its health, and moving the leadership.
// cluster runs the members as processes (cluster/etcd.go); this package knows etcd.
package etcd

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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/locklab/locklab/cluster/serverlog"
)

// EnvBinary names the etcd binary (or the folder holding locklab-etcd). Without it,
// locklab looks for bin/locklab-etcd (built by `make build` from the
// go.etcd.io/etcd/server/v3 module pinned in go.mod) in the working directory and its
// parents and beside the locklab binary, then for etcd on PATH.
const EnvBinary = "LOCKLAB_ETCD"

// Raft's heartbeat and election timeout are a tenth of etcd's defaults (100 ms, 1 s), so
// that a partitioned or paused leader is replaced within a second, and still ten
// heartbeats apart so that a loaded 2-core machine does not see spurious elections. They
// also set etcd's smallest lease: ceil(1.5 × election ticks × heartbeat) = 1 s; etcd
// counts lease TTLs in whole seconds.
const (
	Heartbeat = 50 * time.Millisecond
	Election  = 500 * time.Millisecond
)

// RevokeTick is how late an etcd leader may free a lease after it expired: its lessor
// looks for expired leases every 500 ms (server/lease/lessor.go, runLoop, v3.7.3), and
// only then revokes them and deletes their keys. Measured: a lock whose 1 s lease was
// last refreshed at its holder's crash was refused up to 1.45 s after the crash.
const RevokeTick = 500 * time.Millisecond

// ErrNotHealthy is Healthy's answer from a member that serves but has no leader yet.
var ErrNotHealthy = errors.New("not healthy")

// FindBinary resolves the etcd binary, saying where it looked when there is none.
func FindBinary() (string, error) {
	if env := os.Getenv(EnvBinary); env != "" {
		path := env
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			path = filepath.Join(path, "locklab-etcd")
		}
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("$%s=%s: no etcd there: %v", EnvBinary, env, err)
		}
		return filepath.Abs(path)
	}
	var looked []string
	rel := filepath.Join("bin", "locklab-etcd")
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if isFile(filepath.Join(dir, rel)) {
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
			if isFile(path) {
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
		rel, strings.Join(looked, ", "), EnvBinary)
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

// Member is one member of a new cluster, as its command line names it.
type Member struct {
	Name                 string
	Dir                  string // its directory: data in Dir/data, log in Dir/etcd.log
	ClientPort, PeerPort int
	AdvertisePeer        string // host:port its peers dial it by (its peer link)
}

// NewMembers are the n members of a new cluster, named lock-0 … lock-N-1, with fresh
// ports from port; peer says the address its peers dial its peer port (addr) by.
func NewMembers(n int, port func() (int, error), peer func(name, addr string) (string, error)) ([]Member, error) {
	members := make([]Member, n)
	for i := range members {
		m := &members[i]
		m.Name = fmt.Sprintf("lock-%d", i)
		var err error
		if m.ClientPort, err = port(); err == nil {
			m.PeerPort, err = port()
		}
		if err == nil {
			m.AdvertisePeer, err = peer(m.Name, "127.0.0.1:"+strconv.Itoa(m.PeerPort))
		}
		if err != nil {
			return nil, fmt.Errorf("ports of %s: %w", m.Name, err)
		}
	}
	return members, nil
}

// InitialCluster is the --initial-cluster of members: "name=http://host:port,…".
func InitialCluster(members []Member) string {
	var initial []string
	for _, m := range members {
		initial = append(initial, m.Name+"=http://"+m.AdvertisePeer)
	}
	return strings.Join(initial, ",")
}

// ClientAddr is where the member serves clients.
func (m Member) ClientAddr() string { return "127.0.0.1:" + strconv.Itoa(m.ClientPort) }

// LogFile is the member's log, in its directory.
func (m Member) LogFile() string { return filepath.Join(m.Dir, "etcd.log") }

// Args is the member's command line in a cluster of members named by initial
// ("name=http://host:port,…") with token. On a restart the data directory decides and
// the initial-cluster flags are ignored.
func (m Member) Args(initial, token string) []string {
	client := "http://127.0.0.1:" + strconv.Itoa(m.ClientPort)
	return []string{
		"--name", m.Name,
		"--data-dir", filepath.Join(m.Dir, "data"),
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(m.PeerPort),
		"--initial-advertise-peer-urls", "http://" + m.AdvertisePeer,
		"--initial-cluster", initial,
		"--initial-cluster-token", token,
		"--initial-cluster-state", "new",
		"--heartbeat-interval", strconv.Itoa(int(Heartbeat.Milliseconds())),
		"--election-timeout", strconv.Itoa(int(Election.Milliseconds())),
		"--log-outputs", m.LogFile(),
		"--log-level", "info",
	}
}

// ReadyMessage is what a member writes to its log once it serves clients.
const ReadyMessage = "ready to serve client requests"

// Ready checks that m serves, by its own word: it is Healthy, and what its log grew by
// since logStart (its size before this run) says it serves. /health says nothing of who
// answered: another run's member may hold the port this one failed to bind (seen once
// under load: a healthy member that was not ours, and ours dead).
func (m Member) Ready(ctx context.Context, logStart int64) error {
	if err := Healthy(ctx, m.ClientAddr()); err != nil {
		return err
	}
	serves, err := serverlog.Grew(m.LogFile(), logStart, ReadyMessage)
	if err != nil {
		return fmt.Errorf("log of %s: %w", m.Name, err)
	}
	if !serves {
		return fmt.Errorf("a member answers on %s, but %s's log does not say it serves yet", m.ClientAddr(), m.Name)
	}
	return nil
}

// Healthy asks a member's /health endpoint, which answers true once the member has a
// leader and can serve a linearizable read.
func Healthy(ctx context.Context, addr string) error {
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
		return fmt.Errorf("%w: /health says %s %s", ErrNotHealthy, h.Health, h.Reason)
	}
	return nil
}

// Lead makes the member at addrs[i] the leader of the cluster of addrs, unless it is.
func Lead(ctx context.Context, addrs []string, i int) error {
	if len(addrs) < 2 {
		return nil
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: addrs, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer cli.Close()
	want, err := cli.Status(ctx, addrs[i])
	if err != nil {
		return fmt.Errorf("status of %s: %w", addrs[i], err)
	}
	if want.Leader == want.Header.MemberId {
		return nil
	}
	for _, addr := range addrs {
		st, err := cli.Status(ctx, addr)
		if err != nil || st.Leader != st.Header.MemberId {
			continue
		}
		// MoveLeader must reach the leader itself.
		one, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return fmt.Errorf("etcd client: %w", err)
		}
		_, err = one.MoveLeader(ctx, want.Header.MemberId)
		one.Close()
		if err != nil {
			return fmt.Errorf("move the leadership to %s: %w", addrs[i], err)
		}
		return nil
	}
	return fmt.Errorf("move the leadership to %s: no member says it leads", addrs[i])
}
