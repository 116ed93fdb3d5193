package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/cluster/exactlyonce"
	"github.com/locklab/locklab/cluster/faketime"
)

// DefaultTimeout is the per-command network timeout when Config.Timeout is 0.
const DefaultTimeout = 2 * time.Second

// Config is what every implementation is built from.
type Config struct {
	Addrs     []string // lock servers (single topology: one)
	Sentinels []string // replicated topology: follow the primary through these Sentinels
	Master    string   // replicated topology: the master name the Sentinels monitor
	// Cluster: Addrs are the nodes of a Redis Cluster, which a cluster client takes as its
	// seeds (ClusterClient); only an implementation with Impl.Cluster takes it.
	Cluster bool
	// Via maps a server's own address, as Sentinel names it, to the address to dial
	// instead (the client's link to that server); addresses not in it are dialled as named.
	Via map[string]string
	// Access is how to use the server behind an address of Addrs that needs more than a
	// plain connection: an external server's user, password, database and TLS
	// (cluster.Endpoints.Access). An address not in it needs nothing.
	Access  map[string]access.Access
	Clock   Clock         // nil → SystemClock{}
	Step    StepFunc      // nil → no hook
	Timeout time.Duration // per-command network timeout; 0 → DefaultTimeout
	// Log receives what a client process writes to its stderr (subprocess clients), for
	// the run directory; nil: kept only for error messages.
	Log io.Writer
	// Scrub keeps the run's secrets out of what a client process says (its stderr, in Log
	// and in error messages); nil: the passwords of Access.
	Scrub *access.Scrubber
	// FakeClock, when set, moves the wall clock of a client that runs as a process of its
	// own: the process starts under libfaketime reading this clock's file, and a
	// client-clock fault moves it with Clock. It reaches only programs that read the time
	// through libc (Node.js, Python): Go programs read it without libc.
	FakeClock *faketime.Clock
	// Options are the implementation's option values (Impl.ResolveOptions); a missing
	// value is the option's default (Option.Bool and its siblings read them).
	Options Options
	// Wait, when Replicas > 0, makes every grant and extension wait for replicas to
	// acknowledge it (Redis WAIT): only an implementation with Impl.Waits takes it.
	Wait Wait
}

// Wait is WAIT after each write of a lock: a grant is kept only once Replicas replicas
// acknowledged it within Timeout, else it is released and refused.
type Wait struct {
	Replicas int
	Timeout  time.Duration
}

// Check says what is wrong with w for a lock whose commands time out after timeout: a
// WAIT must end before the command that carries it times out, and WAIT 0 would block
// for ever.
func (w Wait) Check(timeout time.Duration) error {
	switch {
	case w.Replicas < 0:
		return fmt.Errorf("wait: %d replicas: want 0 or more", w.Replicas)
	case w.Replicas == 0 && w.Timeout != 0:
		return fmt.Errorf("wait: a timeout (%s) without replicas to wait for", w.Timeout)
	case w.Replicas == 0:
		return nil
	case w.Timeout < time.Millisecond:
		return fmt.Errorf("wait: timeout %s: want at least 1ms (WAIT 0 blocks until the replicas answer)", w.Timeout)
	case timeout > 0 && w.Timeout >= timeout:
		return fmt.Errorf("wait: timeout %s: want less than the command timeout %s, or the WAIT itself times out", w.Timeout, timeout)
	}
	return nil
}

// WithDefaults fills in the zero fields. Every implementation's constructor starts
// with it, also those outside this package.
func (c Config) WithDefaults() Config {
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// SingleAddr is the one server of a single-instance implementation: an error unless
// Addrs holds exactly one.
func (c Config) SingleAddr() (string, error) {
	if len(c.Addrs) != 1 {
		return "", fmt.Errorf("single-instance lock needs exactly one address, got %d", len(c.Addrs))
	}
	return c.Addrs[0], nil
}

// PrimaryClient is the client of a lock that talks to one primary: go-redis's failover
// client when Sentinels are given (replicated topology: it asks them for the primary
// and follows a failover), else a client of the one address (NewClient). Adapters of
// libraries built on go-redis take their client from here.
func (c Config) PrimaryClient() (*redis.Client, error) {
	if c.Cluster {
		return nil, errors.New("takes no Redis Cluster (it needs one primary)")
	}
	if len(c.Sentinels) == 0 {
		addr, err := c.SingleAddr()
		if err != nil {
			return nil, err
		}
		return c.Client(addr), nil
	}
	if c.Master == "" {
		return nil, fmt.Errorf("sentinels given without the master name they monitor")
	}
	return newFailoverClient(c.Sentinels, c.Master, c.Via, c.Timeout), nil
}

// NewClient is a go-redis client that sends each command exactly once, so that an
// outcome is never misreported (see exactlyonce.Options), to a server that needs no
// Access. A lock's clients come from Config.Client or PrimaryClient.
func NewClient(addr string, timeout time.Duration) *redis.Client {
	return redis.NewClient(exactlyonce.Options(addr, timeout))
}

// Client is NewClient for one of c's addresses, with its Access (c.Timeout as given:
// constructors call it after WithDefaults). Every go-redis client of a lock, here or in
// an adapter, is built by it or by PrimaryClient.
func (c Config) Client(addr string) *redis.Client {
	return redis.NewClient(c.Access[addr].Apply(exactlyonce.Options(addr, c.Timeout)))
}

// failoverPoolSize is the failover client's pool size. A lock client runs one command
// at a time, so it bounds nothing here; what it sets is go-redis's dial breaker: after
// PoolSize failed dials in a row a pool stops dialling and retries once a second. While
// a primary is dead and not yet replaced, every attempt is a failed dial (the default
// pool, 10 per CPU, trips within a second), and a tripped client would find the new
// primary up to a second late: measured, it missed a 2 s failover's new primary for 0.9 s.
const failoverPoolSize = 1000

// newFailoverClient is NewClient's counterpart for a replicated topology: go-redis's
// failover client, which asks the Sentinels for the primary whenever it opens a
// connection and drops its connections to an old primary when a Sentinel announces a
// new one. It keeps NewClient's guarantees: each command is sent once (MaxRetries -1,
// one dial attempt), the same handshake (FailoverOptions has no maintenance option:
// the failover client always disables it), the same timeouts, also towards the
// Sentinels. via (may be nil) redirects the addresses the Sentinels name.
func newFailoverClient(sentinels []string, master string, via map[string]string, timeout time.Duration) *redis.Client {
	opts := &redis.FailoverOptions{
		MasterName:            master,
		SentinelAddrs:         sentinels,
		Protocol:              2,
		DisableIdentity:       true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              failoverPoolSize,
	}
	if len(via) > 0 {
		opts.Dialer = viaDialer(via, timeout) // it sees the Sentinels' addresses too
	}
	return redis.NewFailoverClient(opts)
}

// viaDialer dials the address via maps an address to, or the address itself when via
// has none (a Sentinel's, a seed that is a link already).
func viaDialer(via map[string]string, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := via[addr]; ok {
			addr = to
		}
		return d.DialContext(ctx, network, addr)
	}
}
