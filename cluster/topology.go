package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// Topology kinds. Single is one lock server; Nodes is N independent servers (Redlock);
// Replicated is a primary with replicas and sentinels.
const (
	Single     = "single"
	Nodes      = "nodes"
	Replicated = "replicated"
	// Etcd is an etcd cluster of N members as the lock service (etcd.go): consensus, the
	// baseline the Redis locks are measured against.
	Etcd = "etcd"
	// RedisCluster is a Redis Cluster of P primaries with R replicas each (rediscluster.go):
	// the hash slots split among the primaries, failover by the nodes themselves.
	RedisCluster = "cluster"
	// ZooKeeper is a ZooKeeper ensemble of N members (zookeeper.go): consensus, as etcd.
	ZooKeeper = "zookeeper"
)

// Default sizes when a topology string gives none.
const (
	defaultNodes      = 5 // Redlock's usual N
	defaultReplicated = 3 // primary + 2 replicas
	defaultEtcd       = 3 // the smallest cluster that survives a member's loss; a ZooKeeper ensemble's too
	// A Redis Cluster's default: three primaries (a majority survives one's loss, which a
	// failover needs), one replica each.
	defaultPrimaries = 3
	defaultReplicas  = 1
)

// Topology is the shape of the lock service. Nodes counts the Redis servers that hold lock
// data: 1 for single, N for nodes:N, primary plus replicas for replicated (sentinels and
// the protected store are not counted); for a Redis Cluster, every primary and replica.
type Topology struct {
	Kind  string
	Nodes int
	// Replicas is how many replicas each primary of a Redis Cluster has (its Nodes are
	// Primaries()·(1+Replicas)); 0 in the other kinds.
	Replicas int
}

// Primaries is how many primaries a Redis Cluster has; 1 for any other kind with nodes.
func (t Topology) Primaries() int {
	if t.Kind == RedisCluster {
		return t.Nodes / (1 + t.Replicas)
	}
	return 1
}

// String is the form ParseTopology reads.
func (t Topology) String() string {
	switch t.Kind {
	case Single:
		return Single
	case RedisCluster:
		return fmt.Sprintf("%s:%dx%d", t.Kind, t.Primaries(), t.Replicas)
	}
	return fmt.Sprintf("%s:%d", t.Kind, t.Nodes)
}

// ParseTopology reads "single", "nodes[:N]", "replicated[:N]", "etcd[:N]",
// "zookeeper[:N]" or "cluster[:P[xR]]". An even count of etcd or ZooKeeper members is
// allowed: it survives no more losses than one fewer, which a scenario may want to show.
func ParseTopology(s string) (Topology, error) {
	kind, count, hasCount := strings.Cut(strings.TrimSpace(s), ":")
	var t Topology
	switch kind {
	case RedisCluster:
		return parseRedisCluster(s, count, hasCount)
	case Single:
		if hasCount && count != "1" {
			return Topology{}, fmt.Errorf("topology %q: single has exactly one node", s)
		}
		return Topology{Kind: Single, Nodes: 1}, nil
	case Nodes:
		t = Topology{Kind: Nodes, Nodes: defaultNodes}
	case Replicated:
		t = Topology{Kind: Replicated, Nodes: defaultReplicated}
	case Etcd, ZooKeeper:
		t = Topology{Kind: kind, Nodes: defaultEtcd}
	default:
		return Topology{}, fmt.Errorf("unknown topology %q (want single, nodes[:N], replicated[:N], etcd[:N], zookeeper[:N] or cluster[:P[xR]])", s)
	}
	if hasCount {
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 {
			return Topology{}, fmt.Errorf("topology %q: node count must be a positive integer", s)
		}
		t.Nodes = n
	}
	return t, nil
}

// parseRedisCluster reads the count of "cluster[:P[xR]]": P primaries (default 3), R
// replicas each (default 1).
func parseRedisCluster(s, count string, hasCount bool) (Topology, error) {
	p, r := defaultPrimaries, defaultReplicas
	if hasCount {
		ps, rs, hasR := strings.Cut(count, "x")
		var err error
		if p, err = strconv.Atoi(ps); err != nil || p < 1 {
			return Topology{}, fmt.Errorf("topology %q: primaries must be a positive integer (cluster:P or cluster:PxR)", s)
		}
		if hasR {
			if r, err = strconv.Atoi(rs); err != nil || r < 0 {
				return Topology{}, fmt.Errorf("topology %q: replicas per primary must be an integer ≥ 0 (cluster:PxR)", s)
			}
		}
	}
	return Topology{Kind: RedisCluster, Nodes: p * (1 + r), Replicas: r}, nil
}
