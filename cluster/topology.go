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
)

// Default sizes when a topology string gives none.
const (
	defaultNodes      = 5 // Redlock's usual N
	defaultReplicated = 3 // primary + 2 replicas
	defaultEtcd       = 3 // the smallest cluster that survives a member's loss
)

// Topology is the shape of the lock service. Nodes counts the Redis servers that hold lock
// data: 1 for single, N for nodes:N, primary plus replicas for replicated (sentinels and
// the protected store are not counted).
type Topology struct {
	Kind  string
	Nodes int
}

// String is the form ParseTopology reads.
func (t Topology) String() string {
	if t.Kind == Single {
		return Single
	}
	return fmt.Sprintf("%s:%d", t.Kind, t.Nodes)
}

// ParseTopology reads "single", "nodes[:N]", "replicated[:N]" or "etcd[:N]".
func ParseTopology(s string) (Topology, error) {
	kind, count, hasCount := strings.Cut(strings.TrimSpace(s), ":")
	var t Topology
	switch kind {
	case Single:
		if hasCount && count != "1" {
			return Topology{}, fmt.Errorf("topology %q: single has exactly one node", s)
		}
		return Topology{Kind: Single, Nodes: 1}, nil
	case Nodes:
		t = Topology{Kind: Nodes, Nodes: defaultNodes}
	case Replicated:
		t = Topology{Kind: Replicated, Nodes: defaultReplicated}
	case Etcd:
		t = Topology{Kind: Etcd, Nodes: defaultEtcd}
	default:
		return Topology{}, fmt.Errorf("unknown topology %q (want single, nodes[:N], replicated[:N] or etcd[:N])", s)
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
