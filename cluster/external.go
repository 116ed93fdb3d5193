package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// ErrExternal is what an external server answers to anything that needs its process:
// the harness did not start it, so it can neither pause, kill nor restart it.
var ErrExternal = errors.New("not possible on an external server (the harness did not start it)")

// externalProbeTimeout bounds the check that an external server answers.
const externalProbeTimeout = 5 * time.Second

// ExternalOptions names Redis servers the harness did not start.
type ExternalOptions struct {
	Lock  []string // the lock servers, host:port, in order: nodes lock-0, lock-1, ...
	Store string   // the protected store, host:port
}

// ExternalBackend hands out servers that already run somewhere else. It starts and stops
// nothing: Close and Stop leave the servers alone. Faults that need a server's process
// get ErrExternal, and faults that would destroy its data must be opted into (see
// faults.Env.AllowDestructive).
type ExternalBackend struct {
	lock  []string
	store string
}

var (
	_ Backend = (*ExternalBackend)(nil)
	_ Node    = (*ExternalNode)(nil)
)

// NewExternalBackend checks that every address is host:port.
func NewExternalBackend(opts ExternalOptions) (*ExternalBackend, error) {
	if len(opts.Lock) == 0 || opts.Store == "" {
		return nil, fmt.Errorf("external backend: want at least one lock server and a store, got lock %v, store %q", opts.Lock, opts.Store)
	}
	for _, a := range append(append([]string(nil), opts.Lock...), opts.Store) {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("external backend: address %q: %w", a, err)
		}
	}
	return &ExternalBackend{lock: append([]string(nil), opts.Lock...), store: opts.Store}, nil
}

// Name is "external".
func (b *ExternalBackend) Name() string { return "external" }

// StartNode returns the server for cfg.Name ("lock-N" or "store") once it answers PING.
// It refuses what it cannot honour on a server it did not start: a persistence setting,
// extra arguments, libfaketime.
func (b *ExternalBackend) StartNode(ctx context.Context, cfg NodeConfig) (Node, error) {
	addr, err := b.addrOf(cfg.Name)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.Faketime:
		return nil, fmt.Errorf("external server %s (%s): cannot run it under libfaketime; use clock faults with mode emulated", cfg.Name, addr)
	case cfg.Persistence != "":
		return nil, fmt.Errorf("external server %s (%s): cannot set its persistence to %s; it keeps its own", cfg.Name, addr, cfg.Persistence)
	case len(cfg.ExtraArgs) > 0:
		return nil, fmt.Errorf("external server %s (%s): cannot pass it arguments %v", cfg.Name, addr, cfg.ExtraArgs)
	}
	pctx, cancel := context.WithTimeout(ctx, externalProbeTimeout)
	defer cancel()
	c := newProbeClient(addr)
	defer c.Close()
	if err := c.Ping(pctx).Err(); err != nil {
		return nil, fmt.Errorf("external server %s (%s) does not answer: %w", cfg.Name, addr, err)
	}
	return &ExternalNode{name: cfg.Name, addr: addr}, nil
}

// addrOf maps a node name Start uses to the address given for it.
func (b *ExternalBackend) addrOf(name string) (string, error) {
	if name == "store" {
		return b.store, nil
	}
	if i, err := strconv.Atoi(strings.TrimPrefix(name, "lock-")); err == nil && strings.HasPrefix(name, "lock-") && i >= 0 && i < len(b.lock) {
		return b.lock[i], nil
	}
	return "", fmt.Errorf("external backend has no server for node %q (it has lock-0 to lock-%d and store)", name, len(b.lock)-1)
}

// Close does nothing: the servers are not ours to stop.
func (b *ExternalBackend) Close() error { return nil }

// ExternalNode is a server the harness did not start.
type ExternalNode struct{ name, addr string }

// Name is the node's name in the topology.
func (n *ExternalNode) Name() string { return n.name }

// Addr is the address it was given.
func (n *ExternalNode) Addr() string { return n.addr }

// LogPath is "": the server's log is not ours to read.
func (n *ExternalNode) LogPath() string { return "" }

// Pause returns ErrExternal.
func (n *ExternalNode) Pause(context.Context) error { return n.refuse("pause") }

// Resume returns ErrExternal.
func (n *ExternalNode) Resume(context.Context) error { return n.refuse("resume") }

// Kill returns ErrExternal.
func (n *ExternalNode) Kill(context.Context) error { return n.refuse("kill") }

// Restart returns ErrExternal.
func (n *ExternalNode) Restart(context.Context) error { return n.refuse("restart") }

// Stop does nothing: the server keeps running, as it did before the harness came.
func (n *ExternalNode) Stop(context.Context) error { return nil }

func (n *ExternalNode) refuse(what string) error {
	return fmt.Errorf("%s redis %s at %s: %w", what, n.name, n.addr, ErrExternal)
}

// IsExternal reports whether n is a server the harness did not start.
func IsExternal(n Node) bool {
	_, ok := n.(*ExternalNode)
	return ok
}

// External reports whether any server of the cluster is external.
func (c *Cluster) External() bool {
	for _, n := range c.Nodes() {
		if IsExternal(n) {
			return true
		}
	}
	return false
}
