package subprocess_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// The Node.js lock libraries (clients/node/redlock.js, clients/node/redlock-auto.js,
// clients/node/redis-semaphore.js) are tested through their registry entries against
// real servers: three independent servers for the Redlock ones, one for
// redis-semaphore's Mutex.
//
// locktest.Conformance cannot take them as they are: it runs every lock on one server
// and also on the replicated topology (the Redlock ones run on "nodes" only), reads the
// lock under the caller's key (redis-semaphore keeps it at "mutex:<key>"), expects a
// lock to expire one TTL after it was taken (redis-semaphore's mutexes refresh
// themselves until released, node-redlock-auto extends itself) and to extend on request
// (node-redlock-auto cannot). TestRedlockAndSemaphoreConformance runs the same checks
// with those differences, on every server of the lock.

// nodeLib is one Node.js library client under test.
type nodeLib struct {
	name      string
	nodes     int    // servers: 3 for a Redlock, 1 for a single-instance lock
	prefix    string // where the library keeps the lock of key: prefix + key
	refreshes bool   // the library refreshes a held lock by itself until release
	noExtend  bool   // the client cannot extend on request (it renews by itself)
	// answersAtQuorum: the library settles a Redlock call once a quorum voted, without
	// waiting for the other servers.
	answersAtQuorum bool
	token           *regexp.Regexp
	library         string           // the library and version its description names
	options         lockimpl.Options // the options the tests run it with (nil: the defaults)
}

var (
	hex32RE = regexp.MustCompile(`^[0-9a-f]{32}$`)

	nodeLibs = []nodeLib{
		{name: "node-redlock", nodes: 3, token: hex32RE, library: "redlock 4.2.0"},
		{name: "redis-semaphore-mutex", nodes: 1, prefix: "mutex:", refreshes: true, token: uuidRE, library: "redis-semaphore 5.8.0"},
		{name: "redis-semaphore-redlock", nodes: 3, prefix: "mutex:", refreshes: true, token: uuidRE, library: "redis-semaphore 5.8.0"},
		{name: "node-redlock-auto", nodes: 3, refreshes: true, noExtend: true, answersAtQuorum: true, token: hex32RE,
			library: "@sesamecare-oss/redlock 1.4.0"},
	}
)

func (lib nodeLib) impl(t testing.TB) lockimpl.Impl {
	t.Helper()
	return locktest.Impl(t, subprocess.Impls(), lib.name)
}

func (lib nodeLib) key(key string) string { return lib.prefix + key }

// extendErr is what an Extend that the library would answer with want gives: want, or
// ErrUnsupported for a client that cannot extend.
func (lib nodeLib) extendErr(want error) error {
	if lib.noExtend {
		return lockimpl.ErrUnsupported
	}
	return want
}

// libServers are lib's servers: their nodes, addresses and raw clients.
type libServers struct {
	nodes []cluster.Node
	addrs []string
	raws  []*redis.Client
}

func startLibServers(t *testing.T, n int) libServers {
	t.Helper()
	var s libServers
	for i := range n {
		node := clustertest.Node(t, cluster.NodeConfig{Name: fmt.Sprintf("lock%d", i)})
		s.nodes = append(s.nodes, node)
		s.addrs = append(s.addrs, node.Addr())
		s.raws = append(s.raws, clustertest.Client(t, node.Addr()))
	}
	return s
}

// locker builds lib on s, closed at cleanup, with lib's options unless cfg has some.
func (s libServers) locker(t *testing.T, lib nodeLib, cfg lockimpl.Config) lockimpl.Locker {
	t.Helper()
	cfg.Addrs = s.addrs
	if cfg.Options == nil {
		cfg.Options = lib.options
	}
	return locktest.New(t, lib.impl(t), cfg)
}

// values is the value of key on each server ("" when absent).
func (s libServers) values(ctx context.Context, key string) []string {
	vals := make([]string, len(s.raws))
	for i, r := range s.raws {
		vals[i] = r.Get(ctx, key).Val()
	}
	return vals
}

// wantOnEvery fails unless every server holds want at key, with a PTTL in (lo, hi].
func (s libServers) wantOnEvery(t *testing.T, key, want string, lo, hi time.Duration) {
	t.Helper()
	ctx := clustertest.Context(t)
	for i, r := range s.raws {
		if v := r.Get(ctx, key).Val(); v != want {
			t.Fatalf("server %d holds %q at %s, want %q", i, v, key, want)
		}
		if want == "" {
			continue
		}
		if pttl := r.PTTL(ctx, key).Val(); pttl <= lo || pttl > hi {
			t.Fatalf("server %d: PTTL of %s %s, want in (%s, %s]", i, key, pttl, lo, hi)
		}
	}
}

func (s libServers) waitGone(t *testing.T, key string) {
	t.Helper()
	for _, r := range s.raws {
		locktest.WaitGone(t, r, key)
	}
}

// forEachLib runs f on each library client, as a subtest named after it.
func forEachLib(t *testing.T, f func(t *testing.T, lib nodeLib)) {
	for _, lib := range nodeLibs {
		t.Run(lib.name, func(t *testing.T) { f(t, lib) })
	}
}

// forEachRedlockLib is forEachLib on the clients of N servers.
func forEachRedlockLib(t *testing.T, f func(t *testing.T, lib nodeLib)) {
	for _, lib := range nodeLibs {
		if lib.nodes > 1 {
			t.Run(lib.name, func(t *testing.T) { f(t, lib) })
		}
	}
}

func TestRedlockAndSemaphoreRegistryEntries(t *testing.T) {
	forEachLib(t, func(t *testing.T, lib nodeLib) {
		impl := lib.impl(t)
		topo := cluster.Nodes
		if lib.nodes == 1 {
			topo = cluster.Single
		}
		if impl.Topology != topo || impl.Fencing || impl.Mutant || impl.Bug != "" ||
			!strings.Contains(impl.Description, lib.library) ||
			len(impl.Steps) != 1 || impl.Steps[0] != lockimpl.StepGranted {
			t.Errorf("%s = %+v; want topology %s, no fencing, not a mutant, a description naming %s", lib.name, impl, topo, lib.library)
		}
		if impl.RunsOn(cluster.Replicated) != (topo == cluster.Single) {
			t.Errorf("%s runs on replicated: %v", lib.name, impl.RunsOn(cluster.Replicated))
		}
		if impl.NoExtend != lib.noExtend || len(impl.Options) == 0 {
			t.Errorf("%s: NoExtend %v (want %v), %d options (want the library's)", lib.name, impl.NoExtend, lib.noExtend, len(impl.Options))
		}
	})
}

// The versions the descriptions and docs name are the ones package.json pins and
// package-lock.json and node_modules hold.
func TestRedlockAndSemaphoreVersionsArePinned(t *testing.T) {
	dir := filepath.Join("..", "..", "clients", "node")
	read := func(path string, v any) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var pkg struct{ Dependencies map[string]string }
	read(filepath.Join(dir, "package.json"), &pkg)
	var lock struct {
		Packages map[string]struct{ Version string }
	}
	read(filepath.Join(dir, "package-lock.json"), &lock)
	for module, version := range map[string]string{"redlock": "4.2.0", "redis-semaphore": "5.8.0", "ioredis": "6.0.0", "@sesamecare-oss/redlock": "1.4.0"} {
		if got := pkg.Dependencies[module]; got != version {
			t.Errorf("package.json pins %s %q, want exactly %q", module, got, version)
		}
		if got := lock.Packages["node_modules/"+module].Version; got != version {
			t.Errorf("package-lock.json has %s %q, want %q", module, got, version)
		}
		var installed struct{ Version string }
		read(filepath.Join(dir, "node_modules", module, "package.json"), &installed)
		if installed.Version != version {
			t.Errorf("node_modules holds %s %s, want %s: run npm ci --prefix clients/node", module, installed.Version, version)
		}
	}
}

// TestRedlockAndSemaphoreConformance is locktest.Conformance's checks, on every server
// of each library client (see the top of this file for the differences).
func TestRedlockAndSemaphoreConformance(t *testing.T) {
	t.Run("AcquireRelease", func(t *testing.T) {
		forEachLib(t, func(t *testing.T, lib nodeLib) {
			s := startLibServers(t, lib.nodes)
			a, b := s.locker(t, lib, lockimpl.Config{}), s.locker(t, lib, lockimpl.Config{})
			ctx := clustertest.Context(t)
			const ttl = time.Minute
			lease, err := a.Acquire(ctx, "k", ttl)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if !lib.token.MatchString(lease.Token) || lease.Key != "k" || lease.Fence != 0 {
				t.Fatalf("lease %+v: want key k, the library's token, no fence", lease)
			}
			if lease.Validity <= 0 || lease.Validity > ttl || lease.Remaining(time.Now()) > ttl {
				t.Fatalf("validity %s, remaining %s; want in (0, %s]", lease.Validity, lease.Remaining(time.Now()), ttl)
			}
			s.wantOnEvery(t, lib.key("k"), lease.Token, 0, ttl)
			if lib.prefix != "" && s.raws[0].Exists(ctx, "k").Val() != 0 {
				t.Fatalf("the lock was taken under the bare key, not %s", lib.key("k"))
			}
			_, err = b.Acquire(ctx, "k", ttl)
			if !errors.Is(err, lockimpl.ErrNotAcquired) || lockimpl.Classify(err) != histories.Fail {
				t.Fatalf("second Acquire: %v; want ErrNotAcquired", err)
			}
			if err := a.Release(ctx, lease); err != nil {
				t.Fatalf("Release: %v", err)
			}
			s.wantOnEvery(t, lib.key("k"), "", 0, 0)
			if err := a.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) || lockimpl.Classify(err) != histories.Fail {
				t.Fatalf("second Release: %v; want ErrNotHeld", err)
			}
			if _, err := b.Acquire(ctx, "k", ttl); err != nil {
				t.Fatalf("Acquire after Release: %v", err)
			}
		})
	})

	// The holder's lease runs out while it is away (a refreshing library's process is
	// stopped, as its timer would otherwise keep the lock); a new holder takes the lock;
	// the old holder's release and extend are refused and touch nothing of the new one.
	t.Run("StaleLeaseCannotHarmNewHolder", func(t *testing.T) {
		forEachLib(t, func(t *testing.T, lib nodeLib) {
			s := startLibServers(t, lib.nodes)
			a, b := s.locker(t, lib, lockimpl.Config{}), s.locker(t, lib, lockimpl.Config{})
			ctx := clustertest.Context(t)
			stale, err := a.Acquire(ctx, "k", 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			pa := clientProcess(t, a)
			if lib.refreshes {
				if err := pa.Signal(syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}
			s.waitGone(t, lib.key("k"))
			fresh, err := b.Acquire(ctx, "k", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if lib.refreshes {
				if err := pa.Signal(syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.Release(ctx, stale); !errors.Is(err, lockimpl.ErrNotHeld) {
				t.Fatalf("Release of a stale lease: %v; want ErrNotHeld", err)
			}
			if _, err := a.Extend(ctx, stale, time.Hour); !errors.Is(err, lib.extendErr(lockimpl.ErrNotHeld)) {
				t.Fatalf("Extend of a stale lease: %v; want %v", err, lib.extendErr(lockimpl.ErrNotHeld))
			}
			s.wantOnEvery(t, lib.key("k"), fresh.Token, 0, time.Minute)
		})
	})

	t.Run("Extend", func(t *testing.T) {
		forEachLib(t, func(t *testing.T, lib nodeLib) {
			s := startLibServers(t, lib.nodes)
			l := s.locker(t, lib, lockimpl.Config{})
			ctx := clustertest.Context(t)
			lease, err := l.Acquire(ctx, "k", time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if lib.noExtend {
				if _, err := l.Extend(ctx, lease, time.Hour); !errors.Is(err, lockimpl.ErrUnsupported) {
					t.Fatalf("Extend: %v; want ErrUnsupported", err)
				}
				s.wantOnEvery(t, lib.key("k"), lease.Token, 0, time.Second)
				return
			}
			ext, err := l.Extend(ctx, lease, time.Hour)
			if err != nil {
				t.Fatalf("Extend: %v", err)
			}
			if ext.Key != lease.Key || ext.Token != lease.Token || ext.Fence != lease.Fence {
				t.Fatalf("extended lease %+v does not keep key, token and fence of %+v", ext, lease)
			}
			if !ext.Deadline.After(lease.Deadline) || ext.Validity <= time.Second {
				t.Fatalf("extended deadline %v (validity %s), was %v", ext.Deadline, ext.Validity, lease.Deadline)
			}
			s.wantOnEvery(t, lib.key("k"), lease.Token, time.Second, time.Hour)
			if lib.refreshes {
				// The refresh goes on with the new ttl, not the acquire's: after two of the
				// old refresh intervals the PTTL is still far above one second.
				time.Sleep(2 * time.Second)
				s.wantOnEvery(t, lib.key("k"), lease.Token, time.Minute, time.Hour)
			}
			if err := l.Release(ctx, ext); err != nil {
				t.Fatalf("Release of the extended lease: %v", err)
			}
			s.wantOnEvery(t, lib.key("k"), "", 0, 0)
			if _, err := l.Extend(ctx, ext, time.Hour); !errors.Is(err, lockimpl.ErrNotHeld) {
				t.Fatalf("Extend after Release: %v; want ErrNotHeld", err)
			}
		})
	})

	// A lock that is not released expires one TTL after it was taken; a refreshing
	// library keeps it while its process runs, and it expires once the process is gone.
	t.Run("LeaseExpires", func(t *testing.T) {
		forEachLib(t, func(t *testing.T, lib nodeLib) {
			s := startLibServers(t, lib.nodes)
			a, b := s.locker(t, lib, lockimpl.Config{}), s.locker(t, lib, lockimpl.Config{})
			ctx := clustertest.Context(t)
			const ttl = 300 * time.Millisecond
			lease, err := a.Acquire(ctx, "k", ttl)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range s.raws {
				if pttl := r.PTTL(ctx, lib.key("k")).Val(); pttl == -1 || pttl > ttl {
					t.Fatalf("server %d: PTTL %s, want at most %s", i, pttl, ttl)
				}
			}
			if lib.refreshes {
				time.Sleep(4 * ttl)
				s.wantOnEvery(t, lib.key("k"), lease.Token, 0, ttl)
				if _, err := b.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
					t.Fatalf("Acquire of a lock kept by its refresh: %v; want ErrNotAcquired", err)
				}
				if err := clientProcess(t, a).Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
			s.waitGone(t, lib.key("k"))
			if _, err := b.Acquire(ctx, "k", time.Minute); err != nil {
				t.Fatalf("Acquire after expiry: %v", err)
			}
		})
	})

	t.Run("Fences", func(t *testing.T) {
		forEachLib(t, func(t *testing.T, lib nodeLib) {
			s := startLibServers(t, lib.nodes)
			lockers := []lockimpl.Locker{s.locker(t, lib, lockimpl.Config{}), s.locker(t, lib, lockimpl.Config{})}
			ctx := clustertest.Context(t)
			for i := range 4 {
				lease, err := lockers[i%2].Acquire(ctx, "k", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if lease.Fence != 0 {
					t.Fatalf("fence %d, want none", lease.Fence)
				}
				if _, err := lockers[(i+1)%2].Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
					t.Fatalf("contending Acquire: %v; want ErrNotAcquired", err)
				}
				if err := lockers[i%2].Release(ctx, lease); err != nil {
					t.Fatal(err)
				}
			}
		})
	})

	// The deadline never passes send time + ttl; the clients report their validity (the
	// library's own for node-redlock: ttl − 1% − 2 ms − elapsed).
	t.Run("DeadlineCountsFromBeforeTheCommand", func(t *testing.T) {
		forEachLib(t, func(t *testing.T, lib nodeLib) {
			s := startLibServers(t, lib.nodes)
			start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := locktest.NewSteppedClock(start, 10*time.Millisecond)
			l := s.locker(t, lib, lockimpl.Config{Clock: clock})
			const ttl = time.Second
			ctx := clustertest.Context(t)
			check := func(what string, l lockimpl.Lease, sent, returned time.Time) {
				t.Helper()
				latest, earliest := sent.Add(ttl), sent.Add(ttl-ttl/10)
				if l.Deadline.After(latest) || l.Deadline.Before(earliest) || l.Validity != l.Deadline.Sub(returned) {
					t.Fatalf("%s: deadline %v, validity %s; want a deadline in [%v, %v] and the validity left of it at %v",
						what, l.Deadline, l.Validity, earliest, latest, returned)
				}
			}
			lease, err := l.Acquire(ctx, "k", ttl)
			if err != nil {
				t.Fatal(err)
			}
			check("acquire", lease, start, start.Add(10*time.Millisecond))
			if lib.noExtend {
				return
			}
			ext, err := l.Extend(ctx, lease, ttl)
			if err != nil {
				t.Fatal(err)
			}
			check("extend", ext, start.Add(20*time.Millisecond), start.Add(30*time.Millisecond))
		})
	})

	t.Run("CrashAfterGrant", func(t *testing.T) {
		forEachLib(t, func(t *testing.T, lib nodeLib) {
			s := startLibServers(t, lib.nodes)
			l := s.locker(t, lib, lockimpl.Config{Step: func(_ context.Context, step string) error {
				if step == lockimpl.StepGranted {
					return fmt.Errorf("at %s: %w", step, lockimpl.ErrCrashed)
				}
				return nil
			}})
			ctx := clustertest.Context(t)
			_, err := l.Acquire(ctx, "k", time.Minute)
			if !errors.Is(err, lockimpl.ErrCrashed) || lockimpl.Classify(err) != histories.Unknown {
				t.Fatalf("Acquire: %v (%s); want the injected crash, unknown", err, lockimpl.Classify(err))
			}
			for i, r := range s.raws {
				if pttl := r.PTTL(ctx, lib.key("k")).Val(); pttl <= 0 {
					t.Fatalf("server %d: PTTL %s, want a granted lock with an expiry", i, pttl)
				}
			}
		})
	})

	t.Run("BadArguments", func(t *testing.T) {
		forEachLib(t, func(t *testing.T, lib nodeLib) {
			s := startLibServers(t, lib.nodes)
			l := s.locker(t, lib, lockimpl.Config{})
			ctx := clustertest.Context(t)
			if _, err := l.Acquire(ctx, "", time.Second); err == nil {
				t.Error("Acquire with an empty key succeeded")
			}
			if _, err := l.Acquire(ctx, "k", time.Microsecond); err == nil {
				t.Error("Acquire with a sub-millisecond ttl succeeded")
			}
		})
	})

	// redis-semaphore's Mutex, a single-instance lock, takes the lock on the primary
	// through the Sentinels.
	t.Run("SingleInstanceLocksRunOnReplicated", func(t *testing.T) {
		lib := nodeLibs[1]
		impl := lib.impl(t)
		c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 2})
		ctx := clustertest.Context(t)
		a, b := locktest.ReplicatedLocker(t, c, impl, 0, time.Second), locktest.ReplicatedLocker(t, c, impl, 1, time.Second)
		lease, err := a.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		primary := clustertest.Client(t, c.Lock[0].Addr())
		if got := primary.Get(ctx, lib.key("k")).Val(); got != lease.Token {
			t.Fatalf("primary holds %q, want the lease's token", got)
		}
		if _, err := b.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("second Acquire: %v; want ErrNotAcquired", err)
		}
		if err := a.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
	})

	// Redlock's quorum: one server of three down, acquire and release still succeed on
	// the other two.
	t.Run("Quorum", func(t *testing.T) {
		forEachRedlockLib(t, func(t *testing.T, lib nodeLib) {
			s := startLibServers(t, lib.nodes)
			l := s.locker(t, lib, lockimpl.Config{Timeout: time.Second})
			ctx := clustertest.Context(t)
			if err := s.nodes[2].Kill(ctx); err != nil {
				t.Fatal(err)
			}
			lease, err := l.Acquire(ctx, "k", 10*time.Second)
			if err != nil {
				t.Fatalf("Acquire with one server down: %v", err)
			}
			if v := s.values(ctx, lib.key("k")); v[0] != lease.Token || v[1] != lease.Token {
				t.Fatalf("live servers hold %q, want the lease's token", v[:2])
			}
			if err := l.Release(ctx, lease); err != nil {
				t.Fatalf("Release with one server down: %v", err)
			}
		})
	})
}

// A server that answers nothing: every command to it times out. On a single server, or
// on a majority of a Redlock's, the outcome is unknown — the commands reached the
// servers and run once they resume — and the client process stays.
func TestRedlockAndSemaphorePausedServerIsUnknown(t *testing.T) {
	forEachLib(t, func(t *testing.T, lib nodeLib) {
		s := startLibServers(t, lib.nodes)
		const timeout = 300 * time.Millisecond
		l := s.locker(t, lib, lockimpl.Config{Timeout: timeout})
		p := clientProcess(t, l)
		pid := p.Pid()
		ctx := clustertest.Context(t)
		held, err := l.Acquire(ctx, "held", time.Minute) // also: the client is connected
		if err != nil {
			t.Fatal(err)
		}
		paused := s.nodes[:len(s.nodes)/2+1] // one of one, two of three
		for _, n := range paused {
			if err := n.Pause(ctx); err != nil {
				t.Fatal(err)
			}
		}
		_, acqErr := l.Acquire(ctx, "k", time.Minute)
		relErr := l.Release(ctx, held)
		_, extErr := l.Extend(ctx, held, time.Minute)
		for _, n := range paused {
			if err := n.Resume(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if lib.noExtend {
			if !errors.Is(extErr, lockimpl.ErrUnsupported) {
				t.Errorf("Extend: %v; want ErrUnsupported", extErr)
			}
			extErr = relErr
		}
		for what, err := range map[string]error{"Acquire": acqErr, "Release": relErr, "Extend": extErr} {
			if lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "timed out") {
				t.Errorf("%s with %d of %d servers paused: %v (%s); want unknown, naming the timeout", what, len(paused), len(s.nodes), err, lockimpl.Classify(err))
			}
		}
		if p.Pid() != pid {
			t.Fatalf("client replaced (pid %d, was %d) after well-formed unknowns", p.Pid(), pid)
		}
		if _, err := l.Acquire(ctx, "k2", time.Minute); err != nil {
			t.Fatalf("Acquire after the servers resumed: %v", err)
		}
	})
}

// A Redlock with one server of three paused still grants, but only after that server's
// command timed out: the libraries wait for every server's answer — except
// @sesamecare-oss/redlock, which grants as soon as a quorum voted.
func TestRedlockAndSemaphoreOnePausedServerDelaysEveryAcquire(t *testing.T) {
	forEachRedlockLib(t, func(t *testing.T, lib nodeLib) {
		s := startLibServers(t, lib.nodes)
		const timeout = 500 * time.Millisecond
		l := s.locker(t, lib, lockimpl.Config{Timeout: timeout})
		ctx := clustertest.Context(t)
		if _, err := l.Acquire(ctx, "warm-up", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.nodes[2].Pause(ctx); err != nil {
			t.Fatal(err)
		}
		defer s.nodes[2].Resume(ctx)
		start := time.Now()
		lease, err := l.Acquire(ctx, "k", time.Minute)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("Acquire with one of three servers paused: %v", err)
		}
		t.Logf("%s: acquire with one of three servers paused took %s (command timeout %s), validity %s", lib.name, took, timeout, lease.Validity)
		if lib.answersAtQuorum {
			if took >= timeout {
				t.Fatalf("acquire took %s, want less than the paused server's command timeout %s: the library answers at a quorum", took, timeout)
			}
			return
		}
		if took < timeout {
			t.Fatalf("acquire took %s, less than the paused server's command timeout %s", took, timeout)
		}
	})
}

// redis-semaphore's Mutex lets a refresh's command error reject inside its timer: an
// unhandled rejection, which ends a Node.js process by default. The client logs it and
// lives on; the timed-out refresh ran once the server resumed, and the refresh goes on.
func TestRedisSemaphoreRefreshErrorDoesNotKillTheClient(t *testing.T) {
	lib := nodeLibs[1]
	s := startLibServers(t, 1)
	l := s.locker(t, lib, lockimpl.Config{Timeout: 100 * time.Millisecond})
	p := clientProcess(t, l)
	pid := p.Pid()
	ctx := clustertest.Context(t)
	const ttl = 2 * time.Second // refreshed every 1.6 s
	lease, err := l.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	// The extend runs the refresh script, so the server has it cached: the timed-out
	// refresh below is an EVALSHA the server runs, not one it answers NOSCRIPT (the
	// library would then send the script, but the command has timed out by then).
	start := time.Now()
	if lease, err = l.Extend(ctx, lease, ttl); err != nil {
		t.Fatal(err)
	}
	// Paused from 1.4 s to 1.8 s: the refresh at 1.6 s times out at 1.7 s; the server
	// runs it when it resumes, before the key's expiry at 2 s.
	time.Sleep(time.Until(start.Add(1400 * time.Millisecond)))
	if err := s.nodes[0].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(start.Add(1800 * time.Millisecond)))
	if err := s.nodes[0].Resume(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(start.Add(3500 * time.Millisecond))) // past the next refresh at 3.2 s
	if p.Pid() != pid || notRunning(pid) {
		t.Fatalf("client gone or replaced (pid %d, was %d) after a refresh error", p.Pid(), pid)
	}
	s.wantOnEvery(t, lib.key("k"), lease.Token, 0, ttl)
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// A Redlock extend that fails (our value on fewer than a quorum) deletes our value where
// it is left: both libraries clean up after a failed extend as after a failed acquire,
// so the lease is gone everywhere, not only where it was lost. The others' values stay.
func TestRedlockAndSemaphoreFailedExtendDeletesWhatIsLeft(t *testing.T) {
	forEachRedlockLib(t, func(t *testing.T, lib nodeLib) {
		if lib.noExtend {
			t.Skip("extends by itself only: see TestNodeRedlockAutoFailedExtensionIsSilent")
		}
		s := startLibServers(t, lib.nodes)
		l := s.locker(t, lib, lockimpl.Config{})
		ctx := clustertest.Context(t)
		lease, err := l.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		// Another holder's value on two of three servers (as after our keys expired there).
		for _, r := range s.raws[:2] {
			if err := r.Set(ctx, lib.key("k"), "other", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
		_, err = l.Extend(ctx, lease, time.Hour)
		if !errors.Is(err, lockimpl.ErrNotHeld) || lockimpl.Classify(err) != histories.Fail {
			t.Fatalf("Extend with our value on one server of three: %v; want ErrNotHeld", err)
		}
		if v := s.values(ctx, lib.key("k")); v[0] != "other" || v[1] != "other" || v[2] != "" {
			t.Fatalf("servers hold %q after the failed extend; want the others' values kept and ours deleted", v)
		}
		if err := l.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
			t.Fatalf("Release after the failed extend: %v; want ErrNotHeld", err)
		}
	})
}
