package locks_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
)

func TestAll(t *testing.T) {
	want := []struct {
		name, bug, topology string
		fencing, mutant     bool
	}{
		{"setnx", "", "single", false, false},
		{"fenced", "", "single", true, false},
		{"check-then-set", "check-then-set", "single", false, true},
		{"no-expiry", "no-expiry", "single", false, true},
		{"unsafe-release", "unsafe-release", "single", false, true},
		{"unsafe-extend", "unsafe-extend", "single", false, true},
		{"redlock", "", "nodes", false, false},
		{"watchdog", "", "single", false, false},
		{"redsync", "", "nodes", false, false},
		{"redislock", "", "single", false, false},
		{"rueidislock", "", "single", false, false},
		{"node-ioredis", "", "single", false, false},
		{"seed-withlock", "", "single", false, false},
		{"redis-py", "", "single", false, false},
		{"node-redlock", "", "nodes", false, false},
		{"node-redlock-auto", "", "nodes", false, false},
		{"redis-semaphore-mutex", "", "single", false, false},
		{"redis-semaphore-redlock", "", "nodes", false, false},
		{"watchdog-process", "", "single", false, false},
		{"rueidislock-process", "", "single", false, false},
		{"etcd", "", "etcd", true, false},
		{"etcd-process", "", "etcd", true, false},
		{"zookeeper", "", "zookeeper", true, false},
		{"zookeeper-process", "", "zookeeper", true, false},
	}
	got := locks.All().List()
	if len(got) != len(want) {
		t.Fatalf("All lists %d implementations, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.Bug != w.bug || g.Fencing != w.fencing || g.Mutant != w.mutant ||
			g.Topology != w.topology || g.Description == "" || g.New == nil {
			t.Errorf("implementation %d = %+v, want %+v", i, g, w)
		}
	}
	r := locks.All()
	extra := lockimpl.Impl{Name: "extra", New: func(lockimpl.Config) (lockimpl.Locker, error) { return nil, nil }}
	if err := r.Register(extra); err != nil {
		t.Fatal(err)
	}
	if len(locks.All().List()) != len(r.List())-1 {
		t.Error("All shares state between calls")
	}
}

func TestConfigNeedsOneAddress(t *testing.T) {
	for _, impl := range locks.All().List() {
		cases := [][]string{nil, {"127.0.0.1:1", "127.0.0.1:2"}}
		if impl.Topology == "nodes" || impl.Topology == "etcd" || impl.Topology == "zookeeper" {
			cases = cases[:1] // N nodes (independent, or etcd or ZooKeeper members): any N ≥ 1
		}
		for _, addrs := range cases {
			if l, err := impl.New(lockimpl.Config{Addrs: addrs}); err == nil {
				l.Close()
				t.Errorf("%s with %d addresses: no error", impl.Name, len(addrs))
			}
		}
	}
}

func TestNetworkErrorIsUnknown(t *testing.T) {
	for _, impl := range locks.All().List() {
		t.Run(impl.Name, func(t *testing.T) {
			// A port that was free a moment ago: nothing listens there. One per
			// implementation: the packages' tests start servers while this one runs, and
			// one of them may take a port freed 20 s ago.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			l, err := impl.New(lockimpl.Config{Addrs: []string{addr}, Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			_, err = l.Acquire(ctx, "k", time.Second)
			if err == nil || lockimpl.Classify(err) != histories.Unknown {
				t.Fatalf("Acquire on a closed port: %v (%s); want unknown", err, lockimpl.Classify(err))
			}
			// A lease this client never granted: stateless locks send the command and cannot
			// know (unknown); adapters that keep the library's per-lease object know it is not
			// theirs without asking (fail). Never ok. Their server-killed tests cover unknown.
			lease := lockimpl.Lease{Key: "k", Token: "t"}
			if err := l.Release(ctx, lease); err == nil {
				t.Fatal("Release on a closed port: ok")
			}
			if _, err := l.Extend(ctx, lease, time.Second); err == nil {
				t.Fatal("Extend on a closed port: ok")
			}
		})
	}
}

func TestSingleInstanceLocksRunOnOnePrimaryAtATime(t *testing.T) {
	for _, impl := range locks.All().List() {
		if impl.Topology != cluster.Single {
			continue // multi-node locks (redlock, redsync) run on nodes only
		}
		if !impl.RunsOn(cluster.Single) || !impl.RunsOn(cluster.Replicated) || impl.RunsOn(cluster.Nodes) {
			t.Errorf("%s (topology %s): runs on single %v, replicated %v, nodes %v; want single and replicated only",
				impl.Name, impl.Topology, impl.RunsOn(cluster.Single), impl.RunsOn(cluster.Replicated), impl.RunsOn(cluster.Nodes))
		}
	}
}
