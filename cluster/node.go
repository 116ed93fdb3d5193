// Package cluster runs Redis topologies for locklab on a backend (local processes now;
// Docker and external addresses later) and gives fault injectors a handle on each server.
//
// Every server started is stopped by Cluster.Close or Backend.Close. The process backend
// also makes the kernel kill its servers when the starting process dies, however it dies;
// a program that wants them shut down in order on Ctrl-C closes the backend from a
// signal.NotifyContext. Tests get servers from package clustertest.
package cluster

import (
	"context"
	"fmt"
)

// Node is one Redis server of a topology, whatever backend runs it.
type Node interface {
	Name() string
	Addr() string    // 127.0.0.1:port
	LogPath() string // the server's log file; "" when the backend has none
	// Pause freezes the server (SIGSTOP): connections stay open, nothing is answered.
	Pause(ctx context.Context) error
	// Resume undoes Pause (SIGCONT).
	Resume(ctx context.Context) error
	// Kill crashes the server (SIGKILL). Its data dir is kept, so Restart recovers
	// whatever its persistence had written.
	Kill(ctx context.Context) error
	// Restart starts a killed server again on the same port, dir and config and waits
	// until it answers.
	Restart(ctx context.Context) error
	// Stop ends the node for good: SIGTERM, then SIGKILL after a grace period (the
	// process backend); a backend may instead keep the server for a later node of the
	// same configuration, reset to what a fresh one is (the docker backend's pool), and
	// ends it at its own Close. It is idempotent and also works on a paused or killed
	// server.
	Stop(ctx context.Context) error
}

// PeerNode is a Node that its fellow servers reach by an address of their own, on a
// network of the backend's (the docker backend's private network), rather than by the
// address clients dial: replication, Sentinel and what Sentinel tells clients use it.
type PeerNode interface {
	Node
	PeerAddr() string // host:port on the backend's network
}

// PeerAddr is the address other servers reach n by: its PeerAddr when it has one, else
// the address clients dial.
func PeerAddr(n Node) string {
	if p, ok := n.(PeerNode); ok {
		return p.PeerAddr()
	}
	return n.Addr()
}

// What a backend does to a node, for the words of a fault window (How).
const (
	ActPause = "pause"
	ActKill  = "kill"
)

// How names the mechanism n's backend uses for act: the node's own How when it has one,
// else the process backend's signals.
func How(n Node, act string) string {
	if d, ok := n.(interface{ How(act string) string }); ok {
		return d.How(act)
	}
	if act == ActPause {
		return "SIGSTOP"
	}
	return "SIGKILL"
}

// IsolatableNode is a Node that can be cut off from every other server of its backend
// while clients still reach it: a true partition between servers (the docker backend
// disconnects its container from the private network). The process backend's servers
// share the host's loopback and cannot be isolated.
type IsolatableNode interface {
	Node
	// Isolate cuts the server off from the others; Rejoin undoes it, with the same
	// address on the backend's network; Isolated says whether it is cut off now.
	Isolate(ctx context.Context) error
	Rejoin(ctx context.Context) error
	Isolated() bool
}

// Persistence is what a server writes to disk, which decides what survives Kill+Restart.
type Persistence string

// None keeps nothing (save "" and appendonly no); the AOF modes fsync every second or on
// every write.
const (
	PersistNone        Persistence = "none"
	PersistAOFEverysec Persistence = "aof-everysec"
	PersistAOFAlways   Persistence = "aof-always"
)

// Args are the redis-server arguments for p; "" means PersistNone.
func (p Persistence) Args() ([]string, error) {
	switch p {
	case "", PersistNone:
		return []string{"--save", "", "--appendonly", "no"}, nil
	case PersistAOFEverysec:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"}, nil
	case PersistAOFAlways:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}, nil
	}
	return nil, fmt.Errorf("unknown persistence %q (want none, aof-everysec or aof-always)", string(p))
}

// NodeConfig describes one server to start. ExtraArgs are appended to the command line
// (redis-server --option value ...), so they override the defaults.
type NodeConfig struct {
	Name        string
	Persistence Persistence
	ExtraArgs   []string
	Faketime    bool // run under libfaketime, so that its wall clock can be moved (faketime.go, package faketime)
	// ClusterBus: the server runs in Redis Cluster mode (ExtraArgs say so), and the backend
	// gives its cluster bus a port of its own and says which address its peers reach it by.
	ClusterBus bool
}

// Backend starts Redis servers.
type Backend interface {
	Name() string
	StartNode(ctx context.Context, cfg NodeConfig) (Node, error)
	// Close stops every node the backend started, also ones already stopped.
	Close() error
}
