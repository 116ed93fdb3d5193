// Package clustertest is the one test helper for real Redis servers: tests anywhere in
// locklab start servers through it and get them stopped by t.Cleanup.
package clustertest

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
)

// startTimeout bounds starting a topology in a test.
const startTimeout = 30 * time.Second

// Backend is a process backend whose servers live under t.TempDir and are stopped at
// cleanup. A missing redis-server fails the test with the install hint: a test that needs
// Redis must never pass by skipping.
func Backend(t testing.TB) *cluster.ProcessBackend {
	t.Helper()
	b, err := cluster.NewProcessBackend(cluster.ProcessOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("clustertest: close backend: %v", err)
		}
	})
	return b
}

// Start starts topology topo (lock servers without persistence, plus the store).
func Start(t testing.TB, topo cluster.Topology) *cluster.Cluster {
	t.Helper()
	return StartWith(t, topo, cluster.Options{})
}

// StartWith is Start with options, such as the lock servers' persistence.
func StartWith(t testing.TB, topo cluster.Topology, opts cluster.Options) *cluster.Cluster {
	t.Helper()
	b := Backend(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := cluster.Start(ctx, b, topo, opts)
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	logOnFailure(t, append(c.Nodes(), c.Sentinels...)...)
	return c
}

// Node starts one standalone server.
func Node(t testing.TB, cfg cluster.NodeConfig) cluster.Node {
	t.Helper()
	b := Backend(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	n, err := b.StartNode(ctx, cfg)
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	logOnFailure(t, n)
	return n
}

// Client is a go-redis client for addr, closed at cleanup.
func Client(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// logTail is how many lines of each server's log a failed test shows.
const logTail = 30

// logOnFailure shows the end of each server's log when the test fails, before cleanup
// removes the directory the logs are in.
func logOnFailure(t testing.TB, nodes ...cluster.Node) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, n := range nodes {
			data, err := os.ReadFile(n.LogPath())
			if err != nil {
				continue
			}
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			lines = lines[max(0, len(lines)-logTail):]
			t.Logf("log of redis %s (%s), last %d lines:\n%s", n.Name(), n.Addr(), len(lines), strings.Join(lines, "\n"))
		}
	})
}

// Wait bounds every wait in tests: generous, so that a slow machine still passes.
const Wait = 20 * time.Second

// Context is a context that ends after Wait, or when the test ends.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	t.Cleanup(cancel)
	return ctx
}

// External starts two real servers, the way a user would have them running, and a
// single-topology cluster over them on the external backend: locklab starts nothing of
// its own there. It returns the cluster and the two servers.
func External(t testing.TB) (c *cluster.Cluster, lock, store cluster.Node) {
	t.Helper()
	lock = Node(t, cluster.NodeConfig{Name: "theirs-lock"})
	store = Node(t, cluster.NodeConfig{Name: "theirs-store"})
	b, err := cluster.NewExternalBackend(cluster.ExternalOptions{Lock: []string{lock.Addr()}, Store: store.Addr()})
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	c, err = cluster.Start(Context(t), b, cluster.Topology{Kind: cluster.Single, Nodes: 1}, cluster.Options{})
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, lock, store
}

// DeadAddr is a loopback address nothing listens on: connections are refused.
func DeadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
