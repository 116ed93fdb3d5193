// Package sentinel is what locklab says to one Redis Sentinel and reads from it: its
// configuration file, whether it monitors a primary with every replica and peer, its
// timing knobs (SENTINEL DEBUG), its TILT mode and a one-line view for error messages.
// Package cluster runs the Sentinels of a replicated topology with it.
package sentinel

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/exactlyonce"
)

// configComment heads every configuration file.
const configComment = "# written by locklab; Sentinel rewrites this file with what it learns\n"

// Config describes one Sentinel to start.
type Config struct {
	Name       string
	Master     string // master name to monitor
	MasterAddr string // the primary's peer address (PeerAddr)
	// AnnounceIP is the address the Sentinel gives the others for itself; "" lets it
	// find its own.
	AnnounceIP      string
	Quorum          int
	DownAfter       time.Duration
	FailoverTimeout time.Duration
	ParallelSyncs   int // replicas re-pointed at once after a promotion
}

// ConfigFile is the Sentinel configuration: the master to monitor and its timings.
func (cfg Config) ConfigFile() (string, error) {
	if _, _, err := net.SplitHostPort(cfg.MasterAddr); err != nil {
		return "", fmt.Errorf("sentinel %s: master address %q: %w", cfg.Name, cfg.MasterAddr, err)
	}
	var b strings.Builder
	b.WriteString(configComment)
	if cfg.AnnounceIP != "" {
		fmt.Fprintf(&b, "sentinel announce-ip %s\n", cfg.AnnounceIP)
	}
	b.WriteString("sentinel resolve-hostnames no\n")
	for _, line := range cfg.monitor() {
		fmt.Fprintln(&b, append([]any{"sentinel"}, line...)...)
	}
	return b.String(), nil
}

// monitor is what the file says of the master, line by line without the leading
// "sentinel": the monitor line, then one line per timing.
func (cfg Config) monitor() [][]any {
	host, port, _ := net.SplitHostPort(cfg.MasterAddr)
	return [][]any{
		{"monitor", cfg.Master, host, port, cfg.Quorum},
		{"down-after-milliseconds", cfg.Master, cfg.DownAfter.Milliseconds()},
		{"failover-timeout", cfg.Master, cfg.FailoverTimeout.Milliseconds()},
		{"parallel-syncs", cfg.Master, max(1, cfg.ParallelSyncs)},
	}
}

// Remonitor makes a running Sentinel monitor what cfg's file says, as if it had just
// started from it: every master it monitors is removed (with what it learnt of its
// replicas and peers), then cfg's master is added with cfg's timings. The docker backend
// resets a reused Sentinel with it.
func Remonitor(ctx context.Context, sc *redis.SentinelClient, cfg Config) error {
	if err := Forget(ctx, sc); err != nil {
		return err
	}
	lines := cfg.monitor()
	if err := sc.Process(ctx, redis.NewStatusCmd(ctx, append([]any{"sentinel"}, lines[0]...)...)); err != nil {
		return fmt.Errorf("sentinel monitor %s: %w", cfg.Master, err)
	}
	set := []any{"sentinel", "set", cfg.Master}
	for _, l := range lines[1:] {
		set = append(set, l[0], l[2])
	}
	if err := sc.Process(ctx, redis.NewStatusCmd(ctx, set...)); err != nil {
		return fmt.Errorf("sentinel set %s: %w", cfg.Master, err)
	}
	return nil
}

// Forget removes every master a Sentinel monitors, so that it watches and reconfigures
// nothing.
func Forget(ctx context.Context, sc *redis.SentinelClient) error {
	cmd := redis.NewMapStringStringSliceCmd(ctx, "sentinel", "masters")
	if err := sc.Process(ctx, cmd); err != nil {
		return fmt.Errorf("sentinel masters: %w", err)
	}
	for _, m := range cmd.Val() {
		if err := sc.Remove(ctx, m["name"]).Err(); err != nil {
			return fmt.Errorf("sentinel remove %s: %w", m["name"], err)
		}
	}
	return nil
}

// Timings are a Sentinel's timing parameters as SENTINEL DEBUG lists them.
func Timings(ctx context.Context, sc *redis.SentinelClient) (map[string]string, error) {
	cmd := redis.NewMapStringStringCmd(ctx, "sentinel", "debug")
	if err := sc.Process(ctx, cmd); err != nil {
		return nil, fmt.Errorf("sentinel debug (needs Redis 7.0 or later): %w", err)
	}
	return cmd.Val(), nil
}

// SetTimings sets the timing parameters t (as Timings lists them) in one SENTINEL DEBUG.
func SetTimings(ctx context.Context, sc *redis.SentinelClient, t map[string]string) error {
	args := []any{"sentinel", "debug"}
	for _, k := range slices.Sorted(maps.Keys(t)) {
		args = append(args, k, t[k])
	}
	if len(t) == 0 {
		return nil
	}
	if err := sc.Process(ctx, redis.NewStatusCmd(ctx, args...)); err != nil {
		return fmt.Errorf("sentinel debug: %w", err)
	}
	return nil
}

// Client talks to one Sentinel: one connection, no retries (exactlyonce), timeout per
// command.
func Client(addr string, timeout time.Duration) *redis.SentinelClient {
	opts := exactlyonce.Options(addr, timeout)
	opts.PoolSize = 1
	return redis.NewSentinelClient(opts)
}

// Monitors checks that a Sentinel monitors primary (host:port) as the up master named
// master, with no failover in progress, and returns what it says of the master.
func Monitors(ctx context.Context, sc *redis.SentinelClient, master, primary string) (map[string]string, error) {
	m, err := sc.Master(ctx, master).Result()
	if err != nil {
		return nil, err
	}
	if addr := net.JoinHostPort(m["ip"], m["port"]); addr != primary {
		return nil, fmt.Errorf("monitors %s, not %s", addr, primary)
	}
	if m["flags"] != "master" {
		return nil, fmt.Errorf("master flags %q", m["flags"])
	}
	return m, nil
}

// Ready checks that a Sentinel monitors primary (Monitors) and knows replicas replicas
// and peers other Sentinels, enough of them to agree on a failover.
func Ready(ctx context.Context, sc *redis.SentinelClient, master, primary string, replicas, peers int) error {
	m, err := Monitors(ctx, sc, master, primary)
	if err != nil {
		return err
	}
	switch {
	case m["num-slaves"] != strconv.Itoa(replicas):
		return fmt.Errorf("knows %s replicas, want %d", m["num-slaves"], replicas)
	case m["num-other-sentinels"] != strconv.Itoa(peers):
		return fmt.Errorf("knows %s other sentinels, want %d", m["num-other-sentinels"], peers)
	}
	return sc.CkQuorum(ctx, master).Err()
}

// Debug sets one of a Sentinel's timing parameters (SENTINEL DEBUG, Redis 7.0+).
func Debug(ctx context.Context, sc *redis.SentinelClient, param string, d time.Duration) error {
	if err := sc.Process(ctx, redis.NewStatusCmd(ctx, "sentinel", "debug", param, d.Milliseconds())); err != nil {
		return fmt.Errorf("sentinel debug %s %s (needs Redis 7.0 or later): %w", param, d, err)
	}
	return nil
}

// View says in one line what a Sentinel sees of the master named master and its replicas:
// the flags, failover state and replicas' links that explain why no promotion came.
func View(ctx context.Context, sc *redis.SentinelClient, master string) string {
	m, err := sc.Master(ctx, master).Result()
	if err != nil {
		return "sentinel master: " + err.Error()
	}
	v := fmt.Sprintf("master %s flags %s failover-state %s", net.JoinHostPort(m["ip"], m["port"]), m["flags"], m["failover-state"])
	cmd := redis.NewMapStringStringSliceCmd(ctx, "sentinel", "replicas", master)
	if err := sc.Process(ctx, cmd); err != nil {
		return v + ", replicas: " + err.Error()
	}
	for _, r := range cmd.Val() {
		v += fmt.Sprintf(", replica %s flags %s link %s down %sms info-refresh %sms prio %s offset %s",
			net.JoinHostPort(r["ip"], r["port"]), r["flags"], r["master-link-status"], r["master-link-down-time"],
			r["info-refresh"], r["slave-priority"], r["slave-repl-offset"])
	}
	if tilt, err := Tilts(ctx, sc); err == nil && tilt {
		v += ", in TILT"
	}
	return v
}

// Tilts says whether a Sentinel is in TILT mode (INFO sentinel).
func Tilts(ctx context.Context, sc *redis.SentinelClient) (bool, error) {
	cmd := redis.NewStringCmd(ctx, "info", "sentinel")
	err := sc.Process(ctx, cmd)
	return err == nil && strings.Contains(cmd.Val(), "sentinel_tilt:1"), err
}

// Barred is how many of master's replicas a Sentinel knows to be barred from promotion
// (replica-priority 0, read from their INFO).
func Barred(ctx context.Context, sc *redis.SentinelClient, master string) (int, error) {
	cmd := redis.NewMapStringStringSliceCmd(ctx, "sentinel", "replicas", master)
	if err := sc.Process(ctx, cmd); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range cmd.Val() {
		if r["slave-priority"] == "0" {
			n++
		}
	}
	return n, nil
}
