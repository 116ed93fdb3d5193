package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/locklab/locklab/lockimpl"
)

// TestForImpl: a plan keeps its topology when the implementation runs on it, moves to N
// nodes for a Redlock-style lock, to an etcd cluster or ZooKeeper ensemble for a
// consensus lock (dropping the Redis-only settings; one consensus service's plan keeps
// its member count on the other), and is refused when no move keeps its story.
func TestForImpl(t *testing.T) {
	single := Default()
	single.Faults = []FaultSpec{{Kind: "server-crash", Target: "lock-0"}}
	single.Persistence = "aof-always"
	replicated := Default()
	replicated.Topology = "replicated:3"
	nodes := Default()
	nodes.Topology = "nodes:3"
	etcd5 := Default()
	etcd5.Topology = "etcd:5"
	zk1 := Default()
	zk1.Topology = "zookeeper:1"
	cases := []struct {
		name  string
		p     Plan
		impl  lockimpl.Impl
		nodes int
		want  string   // the topology after the move, "" for the plan's own
		note  []string // in the move's note
		err   string
	}{
		{"single on single", single, lockimpl.Impl{Name: "s", Topology: "single"}, 0, "", nil, ""},
		{"single follows the primary", replicated, lockimpl.Impl{Name: "s", Topology: "single"}, 0, "", nil, ""},
		{"redlock on nodes", single, lockimpl.Impl{Name: "r", Topology: "nodes"}, 0, "nodes:5",
			[]string{"ran on nodes:5 instead of the scenario's single server", "its faults on lock-0 hit one node of 5"}, ""},
		{"redlock on 7 nodes", single, lockimpl.Impl{Name: "r", Topology: "nodes"}, 7, "nodes:7", []string{"one node of 7"}, ""},
		{"etcd from single", single, lockimpl.Impl{Name: "e", Topology: "etcd"}, 0, "etcd:3",
			[]string{"ran on etcd:3", "hit that member", "persistence aof-always does not apply"}, ""},
		{"etcd from nodes", nodes, lockimpl.Impl{Name: "e", Topology: "etcd"}, 0, "etcd:3", []string{"instead of the scenario's nodes:3"}, ""},
		{"etcd from replicated", replicated, lockimpl.Impl{Name: "e", Topology: "etcd"}, 0, "", nil, "needs topology etcd; the scenario runs on replicated:3"},
		{"zookeeper from single", single, lockimpl.Impl{Name: "z", Topology: "zookeeper"}, 0, "zookeeper:3",
			[]string{"ran on zookeeper:3", "hit that member", "persistence aof-always does not apply (a zookeeper member"}, ""},
		{"zookeeper from etcd", etcd5, lockimpl.Impl{Name: "z", Topology: "zookeeper"}, 0, "zookeeper:5", []string{"instead of the scenario's etcd:5"}, ""},
		{"etcd from zookeeper", zk1, lockimpl.Impl{Name: "e", Topology: "etcd"}, 0, "etcd:1", nil, ""},
		{"zookeeper from replicated", replicated, lockimpl.Impl{Name: "z", Topology: "zookeeper"}, 0, "", nil, "needs topology zookeeper; the scenario runs on replicated:3"},
		{"redlock from replicated", replicated, lockimpl.Impl{Name: "r", Topology: "nodes"}, 0, "", nil, "needs topology nodes"},
		{"replicas from single", single, lockimpl.Impl{Name: "x", Topology: "replicated"}, 0, "", nil, "needs topology replicated; the scenario runs on single"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, move, err := c.p.ForImpl(c.impl, c.nodes)
			if c.err != "" {
				var me *TopologyMismatchError
				if !errors.As(err, &me) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want a mismatch saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if move != nil || got.Topology != c.p.Topology || got.Persistence != c.p.Persistence {
					t.Fatalf("moved %+v to %q, want the plan unchanged", move, got.Topology)
				}
				return
			}
			if move == nil || got.Topology != c.want || move.To.String() != c.want || move.From.String() != c.p.Topology {
				t.Fatalf("topology %q, move %+v; want %s from %s", got.Topology, move, c.want, c.p.Topology)
			}
			for _, w := range c.note {
				if !strings.Contains(move.Note(), w) {
					t.Errorf("note %q lacks %q", move.Note(), w)
				}
			}
			if (c.impl.Topology == "etcd" || c.impl.Topology == "zookeeper") && (got.Persistence != "" || got.ServerClock != "") {
				t.Errorf("%s plan keeps persistence %q, server clock %q", c.impl.Topology, got.Persistence, got.ServerClock)
			}
		})
	}
}
