package subprocess_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
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

// What the tests of the subprocess clients share: the implementations by name, the
// client process behind a locker, checks that several clients' tests run, and the
// conformance checks of the Node.js clients locktest.Conformance cannot take as they are.

// get is this package's implementation called name.
func get(t testing.TB, name string) lockimpl.Impl {
	t.Helper()
	return locktest.Impl(t, subprocess.Impls(), name)
}

// newErr is the error of impl.New(cfg), which must fail.
func newErr(t *testing.T, impl lockimpl.Impl, cfg lockimpl.Config) error {
	t.Helper()
	l, err := impl.New(cfg)
	if err == nil {
		l.Close()
		t.Fatal("New succeeded")
	}
	return err
}

// uuidRE is crypto.randomUUID()'s format (the token of seed-withlock, the blog's, and of
// redis-semaphore).
var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// clientProcess is the process side of a subprocess locker.
func clientProcess(t *testing.T, l lockimpl.Locker) subprocess.ClientProcess {
	t.Helper()
	p, ok := l.(subprocess.ClientProcess)
	if !ok {
		t.Fatalf("%T is not a ClientProcess", l)
	}
	if p.Pid() <= 0 {
		t.Fatalf("Pid() = %d after New", p.Pid())
	}
	return p
}

// reaped reports whether pid no longer exists at all (not even as a zombie): the
// locker's own child must be both dead and reaped.
func reaped(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// procState is pid's state letter from /proc ('T' stopped, 'Z' zombie), 0 when gone.
func procState(pid int) byte {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}

// notRunning reports whether pid is gone or a zombie: a process the client left behind
// is reparented, and reaping it is then its new parent's business.
func notRunning(pid int) bool {
	st := procState(pid)
	return st == 0 || st == 'Z'
}

// stillServes fails unless l's client is still the process pid after well-formed
// unknowns against paused servers, now resumed, and serves the next request; and, unless
// unknownKey is "", unless the acquire of unknownKey that was unknown took effect (the
// server ran it once resumed: "unknown" was the honest answer).
func stillServes(t *testing.T, l lockimpl.Locker, pid int, unknownKey string) {
	t.Helper()
	if p := clientProcess(t, l).Pid(); p != pid {
		t.Fatalf("client replaced (pid %d, was %d) after a well-formed unknown", p, pid)
	}
	ctx := clustertest.Context(t)
	if _, err := l.Acquire(ctx, "k2", time.Minute); err != nil {
		t.Fatalf("Acquire after the server resumed: %v", err)
	}
	if unknownKey == "" {
		return
	}
	if _, err := l.Acquire(ctx, unknownKey, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("Acquire of the key whose acquire was unknown: %v; want ErrNotAcquired (the first one took effect)", err)
	}
}

// commandTimeoutIsUnknown: a server that answers nothing makes the command of impl, an
// ioredis client, time out: unknown, and the client stays. The command did reach the
// server, which runs it once resumed.
func commandTimeoutIsUnknown(t *testing.T, impl lockimpl.Impl) {
	n := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	l := locktest.New(t, impl, lockimpl.Config{Addrs: []string{n.Addr()}, Timeout: 300 * time.Millisecond})
	pid := clientProcess(t, l).Pid()
	ctx := clustertest.Context(t)
	// The client is connected (a command it refuses to send while connecting would be
	// another unknown, not this test's).
	if _, err := l.Acquire(ctx, "warm-up", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := n.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := l.Acquire(ctx, "k", time.Minute)
	if lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "Command timed out") {
		t.Fatalf("Acquire against a paused server: %v; want the client's unknown", err)
	}
	if err := n.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	stillServes(t, l, pid, "k")
}

// signalled takes the lock of key "k" for ttl with l, then sends sig to l's client: the
// lease and the client.
func signalled(t *testing.T, l lockimpl.Locker, ttl time.Duration, sig syscall.Signal) (lockimpl.Lease, subprocess.ClientProcess) {
	t.Helper()
	p := clientProcess(t, l)
	lease, err := l.Acquire(clustertest.Context(t), "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return lease, p
}

// signalPausesTheProcess: SIGSTOP is a true process pause. The frozen client's lease
// expires and another client takes the lock; once continued, the first client's release
// is refused, and the new holder's lock stays.
func signalPausesTheProcess(t *testing.T, impl lockimpl.Impl) {
	addr, rc := locktest.Server(t)
	a, b := locktest.Locker(t, impl, addr, nil), locktest.Locker(t, impl, addr, nil)
	lease, pa := signalled(t, a, 300*time.Millisecond, syscall.SIGSTOP)
	if st := procState(pa.Pid()); st != 'T' {
		t.Fatalf("client state %q after SIGSTOP, want T (stopped)", st)
	}
	time.Sleep(600 * time.Millisecond)
	locktest.WaitGone(t, rc, "k")
	if procState(pa.Pid()) != 'T' {
		t.Fatal("client ran again while it should be stopped")
	}
	ctx := clustertest.Context(t)
	fresh, err := b.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("Acquire while the holder is frozen past its TTL: %v", err)
	}
	if err := pa.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("Release by the woken client: %v; want ErrNotHeld", err)
	}
	if got := rc.Get(ctx, "k").Val(); got != fresh.Token {
		t.Fatalf("server holds %q, want the new holder's token", got)
	}
}

// nodeLib is one Node.js client under test by libConformance, with what sets it apart
// from the locks locktest.Conformance takes.
type nodeLib struct {
	name      string
	nodes     int    // servers: 3 for a Redlock, 1 for a single-instance lock
	prefix    string // where the library keeps the lock of key: prefix + key
	refreshes bool   // the library refreshes a held lock by itself until release
	noExtend  bool   // the client cannot extend on request (its hello says so)
	// noValidity: the client reports no validity, so a lease's deadline is exactly the
	// reading before the request plus the ttl.
	noValidity bool
	// answersAtQuorum: the library settles a Redlock call once a quorum voted, without
	// waiting for the other servers.
	answersAtQuorum bool
	token           *regexp.Regexp
	library         string           // the library and version its description names
	options         lockimpl.Options // the options the tests run it with (nil: the defaults)
}

func (lib nodeLib) impl(t testing.TB) lockimpl.Impl {
	t.Helper()
	return get(t, lib.name)
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

// start starts lib's servers and builds lib on them from cfg (see locker).
func (lib nodeLib) start(t *testing.T, cfg lockimpl.Config) (libServers, lockimpl.Locker) {
	t.Helper()
	s := startLibServers(t, lib.nodes)
	return s, s.locker(t, lib, cfg)
}

// startTwo starts lib's servers and builds lib on them twice: two clients.
func (lib nodeLib) startTwo(t *testing.T) (libServers, lockimpl.Locker, lockimpl.Locker) {
	t.Helper()
	s, a := lib.start(t, lockimpl.Config{})
	return s, a, s.locker(t, lib, lockimpl.Config{})
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

// forEachLib runs f on each of libs, as a subtest named after it (none: t is skipped).
func forEachLib(t *testing.T, libs []nodeLib, f func(t *testing.T, lib nodeLib)) {
	if len(libs) == 0 {
		t.Skip("no client of this kind here")
	}
	for _, lib := range libs {
		t.Run(lib.name, func(t *testing.T) { f(t, lib) })
	}
}

// withNodes are those of libs that run on n servers.
func withNodes(libs []nodeLib, n int) []nodeLib {
	return slices.DeleteFunc(slices.Clone(libs), func(lib nodeLib) bool { return lib.nodes != n })
}

// libConformance is locktest.Conformance's checks, on every server of each of libs,
// with the differences nodeLib says (see also the top of nodelibs_test.go).
func libConformance(t *testing.T, libs []nodeLib) {
	t.Run("AcquireRelease", func(t *testing.T) {
		forEachLib(t, libs, func(t *testing.T, lib nodeLib) {
			s, a, b := lib.startTwo(t)
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
		forEachLib(t, libs, func(t *testing.T, lib nodeLib) {
			s, a, b := lib.startTwo(t)
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
		forEachLib(t, libs, func(t *testing.T, lib nodeLib) {
			s, l := lib.start(t, lockimpl.Config{})
			ctx := clustertest.Context(t)
			lease, err := l.Acquire(ctx, "k", time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if lib.noExtend {
				// locklab answers ErrUnsupported itself, sends nothing, and the lock is untouched.
				pid := clientProcess(t, l).Pid()
				if _, err := l.Extend(ctx, lease, time.Hour); !errors.Is(err, lockimpl.ErrUnsupported) {
					t.Fatalf("Extend: %v; want ErrUnsupported", err)
				}
				s.wantOnEvery(t, lib.key("k"), lease.Token, 0, time.Second)
				if p := clientProcess(t, l).Pid(); p != pid {
					t.Fatalf("client replaced (pid %d, was %d): Extend must not reach it", p, pid)
				}
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
		forEachLib(t, libs, func(t *testing.T, lib nodeLib) {
			ttl, cfg := 300*time.Millisecond, lockimpl.Config{}
			if lib.refreshes {
				// Refreshed early, the lease keeps most of a TTL in hand, so that a client
				// process a loaded machine holds up for a while does not lose it: the test
				// is that it refreshes at all, not how close to its end.
				ttl = time.Second
				cfg.Options = lockimpl.Options{"refresh_interval_percent": 25}
				if lib.noExtend { // node-redlock-auto: extends itself from using()
					cfg.Options = lockimpl.Options{"automatic_extension_threshold": 3 * ttl / 4}
				}
			}
			s := startLibServers(t, lib.nodes)
			a, b := s.locker(t, lib, cfg), s.locker(t, lib, cfg)
			ctx := clustertest.Context(t)
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
		forEachLib(t, libs, func(t *testing.T, lib nodeLib) {
			_, a, b := lib.startTwo(t)
			lockers := []lockimpl.Locker{a, b}
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
	// library's own for node-redlock: ttl − 1% − 2 ms − elapsed, the elapsed time by its
	// own clock, which a loaded machine stretches: the real time the call took widens the
	// lower bound), or none: the deadline is then send time + ttl exactly.
	t.Run("DeadlineCountsFromBeforeTheCommand", func(t *testing.T) {
		forEachLib(t, libs, func(t *testing.T, lib nodeLib) {
			s := startLibServers(t, lib.nodes)
			start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := locktest.NewSteppedClock(start, 10*time.Millisecond)
			l := s.locker(t, lib, lockimpl.Config{Clock: clock})
			const ttl = time.Second
			ctx := clustertest.Context(t)
			var took time.Duration // the real time of the call checked
			check := func(what string, l lockimpl.Lease, sent, returned time.Time) {
				t.Helper()
				latest, earliest := sent.Add(ttl), sent.Add(ttl-ttl/10-took)
				if lib.noValidity {
					earliest = latest
				}
				if l.Deadline.After(latest) || l.Deadline.Before(earliest) || l.Validity != l.Deadline.Sub(returned) {
					t.Fatalf("%s: deadline %v, validity %s; want a deadline in [%v, %v] and the validity left of it at %v",
						what, l.Deadline, l.Validity, earliest, latest, returned)
				}
			}
			began := time.Now()
			lease, err := l.Acquire(ctx, "k", ttl)
			if err != nil {
				t.Fatal(err)
			}
			took = time.Since(began)
			check("acquire", lease, start, start.Add(10*time.Millisecond))
			if lib.noExtend {
				return
			}
			began = time.Now()
			ext, err := l.Extend(ctx, lease, ttl)
			if err != nil {
				t.Fatal(err)
			}
			took = time.Since(began)
			check("extend", ext, start.Add(20*time.Millisecond), start.Add(30*time.Millisecond))
		})
	})

	t.Run("CrashAfterGrant", func(t *testing.T) {
		forEachLib(t, libs, func(t *testing.T, lib nodeLib) {
			s, l := lib.start(t, lockimpl.Config{Step: func(_ context.Context, step string) error {
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
		forEachLib(t, libs, func(t *testing.T, lib nodeLib) {
			_, l := lib.start(t, lockimpl.Config{})
			ctx := clustertest.Context(t)
			if _, err := l.Acquire(ctx, "", time.Second); err == nil {
				t.Error("Acquire with an empty key succeeded")
			}
			if _, err := l.Acquire(ctx, "k", time.Microsecond); err == nil {
				t.Error("Acquire with a sub-millisecond ttl succeeded")
			}
		})
	})

	// A single-instance lock takes the lock on the primary through the Sentinels.
	t.Run("SingleInstanceLocksRunOnReplicated", func(t *testing.T) {
		forEachLib(t, withNodes(libs, 1), func(t *testing.T, lib nodeLib) {
			impl := lib.impl(t)
			if !impl.RunsOn(cluster.Replicated) {
				t.Fatalf("%s does not run on %s", impl.Name, cluster.Replicated)
			}
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
	})

	// Redlock's quorum: one server of three down, acquire and release still succeed on
	// the other two.
	t.Run("Quorum", func(t *testing.T) {
		forEachLib(t, withNodes(libs, 3), func(t *testing.T, lib nodeLib) {
			s, l := lib.start(t, lockimpl.Config{Timeout: time.Second})
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
