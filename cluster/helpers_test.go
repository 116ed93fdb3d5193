package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
)

// ping reports whether addr answers PING within d.
func ping(t *testing.T, addr string, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return clustertest.Client(t, addr).Ping(ctx).Err()
}

// pid is the process id of a node of the process backend.
func pid(t *testing.T, n cluster.Node) int {
	t.Helper()
	pn, ok := n.(*cluster.ProcessNode)
	if !ok {
		t.Fatalf("node %s is a %T, not a *cluster.ProcessNode", n.Name(), n)
	}
	return pn.Pid()
}

// redisAlive reports whether pid is a live (not zombie) redis-server. Checking the name
// guards against the pid having been reused by an unrelated process.
func redisAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false // no such process
	}
	open, close := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || close < 0 || close+2 >= len(stat) {
		return false
	}
	comm, state := string(stat[open+1:close]), stat[close+2]
	return comm == "redis-server" && state != 'Z' && state != 'X'
}

// waitGone waits (bounded) until pid is no live redis-server; an orphan is killed by the
// kernel at once but reaped by init, so there may be a short delay.
func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for redisAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server pid %d still alive after %s", pid, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
