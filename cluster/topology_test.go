package cluster_test

import (
	"context"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
)

func TestParseTopology(t *testing.T) {
	good := map[string]cluster.Topology{
		"single":       {Kind: cluster.Single, Nodes: 1},
		" single ":     {Kind: cluster.Single, Nodes: 1},
		"nodes":        {Kind: cluster.Nodes, Nodes: 5},
		"nodes:3":      {Kind: cluster.Nodes, Nodes: 3},
		"replicated":   {Kind: cluster.Replicated, Nodes: 3},
		"replicated:2": {Kind: cluster.Replicated, Nodes: 2},
		"cluster":      {Kind: cluster.RedisCluster, Nodes: 6, Replicas: 1},
		"cluster:5":    {Kind: cluster.RedisCluster, Nodes: 10, Replicas: 1},
		"cluster:3x2":  {Kind: cluster.RedisCluster, Nodes: 9, Replicas: 2},
		"cluster:1x0":  {Kind: cluster.RedisCluster, Nodes: 1},
		"etcd":         {Kind: cluster.Etcd, Nodes: 3},
		"zookeeper":    {Kind: cluster.ZooKeeper, Nodes: 3},
		"zookeeper:1":  {Kind: cluster.ZooKeeper, Nodes: 1},
		"zookeeper:4":  {Kind: cluster.ZooKeeper, Nodes: 4}, // even: allowed, as for etcd
	}
	for in, want := range good {
		got, err := cluster.ParseTopology(in)
		if err != nil || got != want {
			t.Errorf("ParseTopology(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, err := cluster.ParseTopology(got.String()); err != nil || back != got {
			t.Errorf("ParseTopology(%q.String()=%q) = %+v, %v", in, got.String(), back, err)
		}
	}
	for _, in := range []string{"", "ring", "nodes:0", "nodes:-1", "nodes:x", "single:2", "cluster:0", "cluster:3x", "cluster:3x-1", "cluster:x1", "cluster:3y1", "zookeeper:0", "zookeeper:x", "zk"} {
		if got, err := cluster.ParseTopology(in); err == nil {
			t.Errorf("ParseTopology(%q) = %+v, want an error", in, got)
		}
	}
}

// noSentinel is a backend that runs servers but not Redis Sentinel.
type noSentinel struct{ cluster.Backend }

func TestStartReplicatedNeedsSentinel(t *testing.T) {
	b := clustertest.Backend(t)
	_, err := cluster.Start(context.Background(), noSentinel{b}, cluster.Topology{Kind: cluster.Replicated, Nodes: 3}, cluster.Options{})
	if err == nil || !strings.Contains(err.Error(), "cannot run Redis Sentinel") {
		t.Fatalf("Start(replicated) on a backend without Sentinel: %v, want a refusal", err)
	}
}

func TestStartRefusesUnknownPersistence(t *testing.T) {
	b := clustertest.Backend(t)
	_, err := cluster.Start(context.Background(), b, cluster.Topology{Kind: cluster.Single, Nodes: 1}, cluster.Options{Persistence: "rdb-sometimes"})
	if err == nil || !strings.Contains(err.Error(), "rdb-sometimes") {
		t.Fatalf("Start with unknown persistence: %v", err)
	}
}
