package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster/exactlyonce"
	"github.com/locklab/locklab/cluster/replication"
)

// readyTimeout bounds the wait for a server to answer when the caller's ctx has no deadline.
const readyTimeout = 15 * time.Second

// pollInterval is how often readiness is probed.
const pollInterval = 10 * time.Millisecond

// refusedPoll is how soon a starting server is probed again after it refused the
// connection: a refused connection costs a system call or two.
const refusedPoll = 2 * time.Millisecond

// probeTimeout bounds each probe's dial and round trip: one connection, no HELLO, no
// CLIENT SETINFO, no retries (exactlyonce.OneConnection), so a probe is one round trip.
const probeTimeout = time.Second

// errNotReady is the probe's answer while the server is up but not usable yet.
var errNotReady = errors.New("not ready")

// Probe checks that the server at addr is process pid (not some other server that took
// the port; pid 0: any process) and has finished loading its data. It first checks that the port accepts
// connections at all, and uses a fresh client each time: a go-redis pool that saw
// PoolSize failed dials answers with the old error until its background redial (every
// second) succeeds, which would add a second to every start.
func Probe(ctx context.Context, addr string, pid int) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	conn.Close()
	c := exactlyonce.OneConnection(addr, probeTimeout)
	defer c.Close()
	info, err := c.Info(ctx, "server", "persistence").Result()
	if err != nil {
		return err
	}
	fields := replication.Fields(info)
	if got, _ := strconv.Atoi(fields["process_id"]); pid != 0 && got != pid {
		return fmt.Errorf("answered by process %s, not %d", fields["process_id"], pid)
	}
	// A Sentinel has no data to load and its INFO has no persistence section.
	if fields["loading"] != "0" && fields["redis_mode"] != "sentinel" {
		return errNotReady
	}
	return nil
}

// FreePort asks the kernel for a free loopback port. Another process may take it before
// the server binds, so callers retry on a clash.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the last n lines of each file (one named twice in a row: once), for errors.
func tail(n int, paths ...string) string {
	var b strings.Builder
	for _, p := range slices.Compact(paths) {
		data, err := os.ReadFile(p)
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "\n--- %s (last %d lines) ---\n%s", p, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}
