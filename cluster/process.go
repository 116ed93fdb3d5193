package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"

	"github.com/locklab/locklab/cluster/faketime"
	"github.com/locklab/locklab/cluster/spawn"
)

// EnvRedisServer names the redis-server binary when ProcessOptions.Binary is empty.
const EnvRedisServer = "LOCKLAB_REDIS_SERVER"

// portAttempts is how many free ports StartNode tries before giving up on clashes.
const portAttempts = 5

// errBackendClosed is returned for work asked of a closed backend.
var errBackendClosed = spawn.ErrClosed

// ProcessOptions configures a ProcessBackend.
type ProcessOptions struct {
	// Binary is the redis-server to run; empty means $LOCKLAB_REDIS_SERVER, then
	// redis-server from PATH.
	Binary string
	// Dir is where the backend makes its temporary directory (one subdirectory per
	// server); empty means the system's temp dir. The backend's directory is removed by
	// Close only when Dir is empty: a caller who chose a place keeps what is there.
	Dir string
}

// ProcessBackend runs each server as a local redis-server process in its own process group,
// bound to 127.0.0.1 on a free port, with its own directory and log.
type ProcessBackend struct {
	binary  string
	root    string
	keepDir bool
	spawn   *spawn.Spawner

	mu     sync.Mutex
	nodes  []*ProcessNode
	closed bool
}

// NewProcessBackend finds the redis-server binary and makes the backend's directory.
func NewProcessBackend(opts ProcessOptions) (*ProcessBackend, error) {
	bin, err := findBinary(opts.Binary)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp(opts.Dir, "locklab-redis-")
	if err != nil {
		return nil, fmt.Errorf("make redis directory: %w", err)
	}
	return &ProcessBackend{binary: bin, root: root, keepDir: opts.Dir != "", spawn: spawn.New()}, nil
}

// findBinary resolves the redis-server to run, saying where it looked when there is none.
func findBinary(explicit string) (string, error) {
	name, from := explicit, "ProcessOptions.Binary"
	if name == "" {
		name, from = os.Getenv(EnvRedisServer), "$"+EnvRedisServer
	}
	if name == "" {
		name, from = "redis-server", "PATH"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("redis-server not found (looked for %q in %s: %v); install it with `apt-get install redis-server` or set %s to its path",
			name, from, err, EnvRedisServer)
	}
	return path, nil
}

// The process backend's types satisfy the package's interfaces.
var (
	_ Backend   = (*ProcessBackend)(nil)
	_ Node      = (*ProcessNode)(nil)
	_ Discarder = (*ProcessNode)(nil)
)

// Name is "process".
func (b *ProcessBackend) Name() string { return "process" }

// Binary is the redis-server the backend runs.
func (b *ProcessBackend) Binary() string { return b.binary }

// StartNode starts one server and waits until it answers. Names need not be unique: each
// server gets a fresh directory.
func (b *ProcessBackend) StartNode(ctx context.Context, cfg NodeConfig) (Node, error) {
	persist, err := cfg.Persistence.Args()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errBackendClosed
	}
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("redis-%d", len(b.nodes))
	}
	b.mu.Unlock()

	var setup faketime.Setup
	if cfg.Faketime {
		if setup, err = faketime.Find(b.binary); err != nil {
			return nil, fmt.Errorf("start %s under libfaketime: %w", cfg.Name, err)
		}
	}
	dir, err := os.MkdirTemp(b.root, cfg.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("make directory for %s: %w", cfg.Name, err)
	}
	n, err := b.startOnFreePort(ctx, func(port int) (*ProcessNode, error) {
		extra := cfg.ExtraArgs
		if cfg.ClusterBus {
			// The default bus port, the client port + 10000, may be taken or beyond 65535;
			// a fresh one at each attempt, since a clash may be the bus port's.
			bus, err := FreePort()
			if err != nil {
				return nil, fmt.Errorf("cluster bus port of %s: %w", cfg.Name, err)
			}
			extra = append(slices.Clip(extra), "--cluster-port", strconv.Itoa(bus))
		}
		n := newProcessNode(b, cfg.Name, dir, port, persist, extra)
		if cfg.Faketime {
			applyFaketime(n, setup)
		}
		return n, nil
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// startOnFreePort builds a node for a free port and starts it, again on another port
// when some other process took the port first (a few times at most). Each node is
// registered before it starts, so that a concurrent Close stops it too.
func (b *ProcessBackend) startOnFreePort(ctx context.Context, build func(port int) (*ProcessNode, error)) (*ProcessNode, error) {
	var errs []error
	for range portAttempts {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		n, err := build(port)
		if err != nil {
			return nil, err
		}
		if err := b.register(n); err != nil {
			return nil, err
		}
		err = n.start(ctx)
		if err == nil {
			return n, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func (b *ProcessBackend) register(n *ProcessNode) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errBackendClosed
	}
	b.nodes = append(b.nodes, n)
	return nil
}

// Close stops every server the backend started and removes its directory (unless the
// caller chose it). It is idempotent.
func (b *ProcessBackend) Close() error {
	b.mu.Lock()
	nodes := b.nodes
	b.closed = true
	b.mu.Unlock()

	errs := []error{StopAll(context.Background(), nodes)}
	b.spawn.Close()
	if !b.keepDir {
		errs = append(errs, os.RemoveAll(b.root))
	}
	return errors.Join(errs...)
}
