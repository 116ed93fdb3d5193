package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/cluster/exactlyonce"
)

// ErrExternal is what an external server answers to anything that needs its process:
// the harness did not start it, so it can neither pause, kill nor restart it.
var ErrExternal = errors.New("not possible on an external server (the harness did not start it)")

// externalProbeTimeout bounds the check that an external server answers.
const externalProbeTimeout = 5 * time.Second

// ExternalOptions names Redis servers the harness did not start. Each is a bare
// host:port or a URL, redis://[user[:password]@]host[:port][/db] or rediss://... (TLS);
// see access.ParseServerURL.
type ExternalOptions struct {
	Lock  []string // the lock servers, in order: nodes lock-0, lock-1, ...
	Store string   // the protected store
	// Roots are the CAs rediss:// servers are checked against (zero: the system's).
	Roots access.TLSRoots
	// LookupEnv supplies passwords kept out of the URLs (access.EnvUsername,
	// access.EnvPassword); nil: none. Pass os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// ExternalBackend hands out servers that already run somewhere else. It starts and stops
// nothing: Close and Stop leave the servers alone. Faults that need a server's process
// get ErrExternal, and faults that would destroy its data must be opted into (see
// faults.Env.AllowDestructive).
type ExternalBackend struct {
	lock  []access.ServerURL
	store access.ServerURL
}

var (
	_ Backend = (*ExternalBackend)(nil)
	_ Node    = (*ExternalNode)(nil)
)

// NewExternalBackend parses every server's address or URL. Its errors name the server
// as access.RedactURL shows it.
func NewExternalBackend(opts ExternalOptions) (*ExternalBackend, error) {
	if len(opts.Lock) == 0 || opts.Store == "" {
		redacted := make([]string, len(opts.Lock))
		for i, l := range opts.Lock {
			redacted[i] = access.RedactURL(l)
		}
		return nil, fmt.Errorf("external backend: want at least one lock server and a store, got lock %q, store %q", redacted, access.RedactURL(opts.Store))
	}
	b := &ExternalBackend{}
	for i, raw := range opts.Lock {
		s, err := access.ParseServerURL(raw, opts.LookupEnv, opts.Roots)
		if err != nil {
			return nil, fmt.Errorf("external backend: lock server %d: %w", i, err)
		}
		b.lock = append(b.lock, s)
	}
	s, err := access.ParseServerURL(opts.Store, opts.LookupEnv, opts.Roots)
	if err != nil {
		return nil, fmt.Errorf("external backend: store: %w", err)
	}
	b.store = s
	return b, nil
}

// URLs are the servers as plans record them: URLs with every password access.Redacted.
func (b *ExternalBackend) URLs() (lock []string, store string) {
	for _, s := range b.lock {
		lock = append(lock, s.URL)
	}
	return lock, b.store.URL
}

// TLS reports whether any server is reached over TLS.
func (b *ExternalBackend) TLS() bool {
	for _, s := range append(append([]access.ServerURL(nil), b.lock...), b.store) {
		if s.Access.TLS != nil {
			return true
		}
	}
	return false
}

// Name is "external".
func (b *ExternalBackend) Name() string { return "external" }

// StartNode returns the server for cfg.Name ("lock-N" or "store") once it answers PING.
// It refuses what it cannot honour on a server it did not start: a persistence setting,
// extra arguments, libfaketime.
func (b *ExternalBackend) StartNode(ctx context.Context, cfg NodeConfig) (Node, error) {
	srv, err := b.serverOf(cfg.Name)
	if err != nil {
		return nil, err
	}
	addr := srv.Addr
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
	opts := srv.Access.Apply(exactlyonce.Options(addr, externalProbeTimeout))
	opts.PoolSize = 1
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Ping(pctx).Err(); err != nil {
		return nil, fmt.Errorf("external server %s (%s) %s", cfg.Name, srv.URL, srv.Access.Explain(err))
	}
	return &ExternalNode{name: cfg.Name, addr: addr, url: srv.URL, access: srv.Access}, nil
}

// serverOf maps a node name Start uses to the server given for it.
func (b *ExternalBackend) serverOf(name string) (access.ServerURL, error) {
	if name == "store" {
		return b.store, nil
	}
	if i, err := strconv.Atoi(strings.TrimPrefix(name, "lock-")); err == nil && strings.HasPrefix(name, "lock-") && i >= 0 && i < len(b.lock) {
		return b.lock[i], nil
	}
	return access.ServerURL{}, fmt.Errorf("external backend has no server for node %q (it has lock-0 to lock-%d and store)", name, len(b.lock)-1)
}

// Close does nothing: the servers are not ours to stop.
func (b *ExternalBackend) Close() error { return nil }

// ExternalNode is a server the harness did not start.
type ExternalNode struct {
	name, addr string
	url        string // as shown: the password access.Redacted
	access     access.Access
}

// Name is the node's name in the topology.
func (n *ExternalNode) Name() string { return n.name }

// Addr is its host:port.
func (n *ExternalNode) Addr() string { return n.addr }

// URL is the server's URL as given, with its password access.Redacted (host:port when
// it was given so).
func (n *ExternalNode) URL() string { return n.url }

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

// AccessOf is how the harness uses n: an external server's Access; nothing for the
// servers locklab starts.
func AccessOf(n Node) access.Access {
	if e, ok := n.(*ExternalNode); ok {
		return e.access
	}
	return access.Access{}
}

// Secrets are the Access of b's servers when b is an external backend (none for the
// servers locklab starts): what access.NewScrubber needs.
func Secrets(b Backend) []access.Access {
	var out []access.Access
	if e, ok := b.(*ExternalBackend); ok && e != nil {
		for _, s := range append(append([]access.ServerURL(nil), e.lock...), e.store) {
			out = append(out, s.Access)
		}
	}
	return out
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
