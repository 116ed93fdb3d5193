package subprocess_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// The libraries' options (impl_options) as their users set them: declared in Go
// (nodelibs.go, python.go), passed in LOCKLAB_OPTIONS, read by the clients
// (clients/node/options.js, clients/python/redis_py_lock.py). These tests show that each
// client gets the values, refuses what it does not understand, and that the values reach
// the library: each changes what the library does on a real server.

// optionClients are the library clients that take options, with how to run each by hand
// (paths from this package's folder).
var optionClients = []struct {
	name string
	argv []string
}{
	{"redis-py", []string{"/usr/bin/python3", "../../clients/python/redis_py_lock.py"}},
	{"node-redlock", []string{"node", "../../clients/node/redlock.js"}},
	{"node-redlock-auto", []string{"node", "../../clients/node/redlock-auto.js"}},
	{"redis-semaphore-mutex", []string{"node", "../../clients/node/redis-semaphore.js", "mutex"}},
	{"redis-semaphore-redlock", []string{"node", "../../clients/node/redis-semaphore.js", "redlock"}},
}

// logBuffer collects a client's stderr (Config.Log) for a test to read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// loggedOptions is the object of the "options {...}" line a client logs at start.
func loggedOptions(line string) (map[string]any, bool) {
	_, obj, ok := strings.Cut(line, "] options ")
	if !ok {
		return nil, false
	}
	var m map[string]any
	return m, json.Unmarshal([]byte(strings.TrimSpace(obj)), &m) == nil
}

// waitLoggedOptions waits (bounded) for the options line in log.
func waitLoggedOptions(t *testing.T, log *logBuffer) map[string]any {
	t.Helper()
	deadline := time.Now().Add(clustertest.Wait)
	for {
		for line := range strings.SplitSeq(log.String(), "\n") {
			if m, ok := loggedOptions(line); ok {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no options line in the client's log:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wireMap is opts as LOCKLAB_OPTIONS carries them, decoded.
func wireMap(t *testing.T, opts lockimpl.Options) map[string]any {
	t.Helper()
	data, err := opts.Wire()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// defaults are impl's options at their defaults.
func defaults(impl lockimpl.Impl) lockimpl.Options {
	out := lockimpl.Options{}
	for _, o := range impl.Options {
		out[o.Name] = o.Default
	}
	return out
}

// Every option reaches the client: left out (a Config built by hand) it gets the Go
// default, set it gets the plan's value; and a client run by hand, without
// LOCKLAB_OPTIONS, has the same defaults as the Go declaration.
func TestLibraryClientsReadTheirOptions(t *testing.T) {
	addr, _ := locktest.Server(t)
	for _, c := range optionClients {
		t.Run(c.name, func(t *testing.T) {
			impl := locktest.Impl(t, subprocess.Impls(), c.name)
			if len(impl.Options) == 0 {
				t.Fatal("no options declared")
			}
			// A plan's values: each option's last drawn value.
			plan := lockimpl.Options{}
			for _, o := range impl.Options {
				if len(o.Values) > 0 {
					plan[o.Name] = o.Values[len(o.Values)-1]
				}
			}
			for _, given := range []lockimpl.Options{nil, plan} {
				want := defaults(impl)
				for k, v := range given {
					want[k] = v
				}
				var log logBuffer
				locktest.New(t, impl, lockimpl.Config{Addrs: []string{addr}, Options: given, Log: &log})
				if got := waitLoggedOptions(t, &log); !reflect.DeepEqual(got, wireMap(t, want)) {
					t.Errorf("given %v, the client read %v; want %v", given, got, wireMap(t, want))
				}
			}
			// By hand: the client's own defaults, before it connects anywhere.
			ctx, cancel := context.WithTimeout(clustertest.Context(t), clustertest.Wait)
			defer cancel()
			cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
			cmd.Env = append(withoutLocklabEnv(), "LOCKLAB_ADDRS=127.0.0.1:1")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if got, ok := loggedOptions(sc.Text()); ok {
					if want := wireMap(t, defaults(impl)); !reflect.DeepEqual(got, want) {
						t.Errorf("run by hand, the client's defaults are %v; the Go declaration's %v", got, want)
					}
					return
				}
			}
			t.Fatal("run by hand, the client logged no options")
		})
	}
}

// withoutLocklabEnv is the test's environment without locklab's variables.
func withoutLocklabEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOCKLAB_") {
			env = append(env, kv)
		}
	}
	return env
}

// A client refuses LOCKLAB_OPTIONS it does not understand — not JSON, not an object, an
// option it does not have, a value of another kind — on stderr, before its hello.
func TestLibraryClientsRefuseBadOptions(t *testing.T) {
	for _, c := range optionClients {
		t.Run(c.name, func(t *testing.T) {
			impl := locktest.Impl(t, subprocess.Impls(), c.name)
			wrongKind := `{"` + impl.Options[0].Name + `":{"x":1}}`
			for _, bad := range []string{`{bad`, `[1]`, `{"no_such_option":1}`, wrongKind} {
				ctx, cancel := context.WithTimeout(clustertest.Context(t), clustertest.Wait)
				cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
				cmd.Env = append(withoutLocklabEnv(), "LOCKLAB_ADDRS=127.0.0.1:1", subprocess.EnvOptions+"="+bad)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				cancel()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() == 0 || stdout.Len() > 0 ||
					!strings.Contains(stderr.String(), "fatal") || !strings.Contains(stderr.String(), "LOCKLAB_OPTIONS") {
					t.Errorf("LOCKLAB_OPTIONS=%s: %v, stdout %q, stderr %q; want a non-zero exit before the hello, naming LOCKLAB_OPTIONS",
						bad, err, stdout.String(), stderr.String())
				}
			}
		})
	}
}

// libNamed is the node library client of that name.
func libNamed(t *testing.T, name string) nodeLib {
	t.Helper()
	for _, lib := range nodeLibs {
		if lib.name == name {
			return lib
		}
	}
	t.Fatalf("no node library client %s", name)
	return nodeLib{}
}

// commandCalls is how many times the server ran the commands since its last
// CONFIG RESETSTAT (INFO commandstats).
func commandCalls(t *testing.T, rc *redis.Client, cmds ...string) int64 {
	t.Helper()
	info, err := rc.Info(clustertest.Context(t), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for line := range strings.SplitSeq(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		for _, cmd := range cmds {
			if name != "cmdstat_"+cmd {
				continue
			}
			calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
			v, err := strconv.ParseInt(calls, 10, 64)
			if err != nil {
				t.Fatalf("INFO commandstats: %q", line)
			}
			n += v
		}
	}
	return n
}

func resetStats(t *testing.T, rc *redis.Client) {
	t.Helper()
	if err := rc.ConfigResetStat(clustertest.Context(t)).Err(); err != nil {
		t.Fatal(err)
	}
}

// minPTTL samples key's PTTL on rc every few milliseconds for d and returns the least,
// or an error when the key was missing.
func minPTTL(ctx context.Context, rc *redis.Client, key string, d time.Duration) (time.Duration, error) {
	least := time.Duration(1<<62 - 1)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		pttl, err := rc.PTTL(ctx, key).Result()
		if err != nil || pttl <= 0 {
			return 0, fmt.Errorf("PTTL of %s: %s, %v; want the key alive", key, pttl, err)
		}
		least = min(least, pttl)
	}
	return least, nil
}

// The "Redlock on N nodes, automatic extension off and on": a lease held past
// its TTL without a release stays on every server with node-redlock-auto (using()
// extends it), and is gone with node-redlock (4.2.0 has no automatic extension). The
// threshold reaches the library: with 500 ms (the library's default) the key's PTTL
// never drops far below 500 ms, with 100 ms (locklab's) it drops to about 100 ms before
// each extension.
func TestNodeRedlockAutoExtendsPastItsTTL(t *testing.T) {
	s := startLibServers(t, 3)
	auto, plain := libNamed(t, "node-redlock-auto"), libNamed(t, "node-redlock")
	with500 := s.locker(t, auto, lockimpl.Config{Options: lockimpl.Options{"automatic_extension_threshold": 500 * time.Millisecond}})
	with100 := s.locker(t, auto, lockimpl.Config{}) // the default
	off := s.locker(t, plain, lockimpl.Config{})
	ctx := clustertest.Context(t)
	const ttl = 700 * time.Millisecond
	leases := map[string]lockimpl.Lease{}
	for key, l := range map[string]lockimpl.Locker{"auto-500": with500, "auto-100": with100, "off": off} {
		lease, err := l.Acquire(ctx, key, ttl)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		leases[key] = lease
	}
	var least500, least100 time.Duration
	var err500, err100 error
	var wg sync.WaitGroup
	wg.Go(func() { least500, err500 = minPTTL(ctx, s.raws[0], "auto-500", 2*ttl) })
	wg.Go(func() { least100, err100 = minPTTL(ctx, s.raws[1], "auto-100", 2*ttl) })
	wg.Wait()
	if err := errors.Join(err500, err100); err != nil {
		t.Fatal(err)
	}
	t.Logf("least PTTL over %s: %s with threshold 500ms, %s with 100ms", 2*ttl, least500, least100)
	s.wantOnEvery(t, "auto-500", leases["auto-500"].Token, 0, ttl)
	s.wantOnEvery(t, "auto-100", leases["auto-100"].Token, 0, ttl)
	s.wantOnEvery(t, "off", "", 0, 0)
	if least500 < 300*time.Millisecond || least100 > 250*time.Millisecond {
		t.Errorf("least PTTL %s with threshold 500ms, %s with 100ms: want about 500ms and 100ms", least500, least100)
	}
	if err := with500.Release(ctx, leases["auto-500"]); err != nil {
		t.Fatalf("Release: %v", err)
	}
	s.wantOnEvery(t, "auto-500", "", 0, 0)
	if err := off.Release(ctx, leases["off"]); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("Release of node-redlock's expired lease: %v; want ErrNotHeld", err)
	}
}

// using() refuses a ttl shorter than the threshold + 100 ms before it sends anything:
// unknown (not a refusal by the servers), nothing on them. The library's default, 500 ms,
// refuses every ttl under 600 ms; locklab's, 100 ms, takes the shortest a generator
// draws, 200 ms.
func TestNodeRedlockAutoRefusesATTLBelowTheThreshold(t *testing.T) {
	s := startLibServers(t, 3)
	auto := libNamed(t, "node-redlock-auto")
	l := s.locker(t, auto, lockimpl.Config{Options: lockimpl.Options{"automatic_extension_threshold": 500 * time.Millisecond}})
	ctx := clustertest.Context(t)
	_, err := l.Acquire(ctx, "k", 599*time.Millisecond)
	if lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "automaticExtensionThreshold") || !strings.Contains(err.Error(), "nothing sent") {
		t.Fatalf("Acquire for 599ms with threshold 500ms: %v; want unknown, nothing sent", err)
	}
	s.wantOnEvery(t, "k", "", 0, 0)
	if _, err := l.Acquire(ctx, "k", 600*time.Millisecond); err != nil {
		t.Fatalf("Acquire for 600ms with threshold 500ms: %v", err)
	}
	l100 := s.locker(t, auto, lockimpl.Config{})
	if _, err := l100.Acquire(ctx, "k2", 200*time.Millisecond); err != nil {
		t.Fatalf("Acquire for 200ms with the default threshold: %v", err)
	}
}

// Threshold 0 schedules the extension when the validity is over; Lock.extend then finds
// the Lock expired by its own clock and sends nothing: the lease is lost at its first
// extension, silently. The holder learns it from its release.
func TestNodeRedlockAutoThresholdZeroLosesTheLease(t *testing.T) {
	s := startLibServers(t, 3)
	auto := libNamed(t, "node-redlock-auto")
	a := s.locker(t, auto, lockimpl.Config{Options: lockimpl.Options{"automatic_extension_threshold": time.Duration(0)}})
	b := s.locker(t, auto, lockimpl.Config{})
	ctx := clustertest.Context(t)
	lease, err := a.Acquire(ctx, "k", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	s.waitGone(t, "k")
	fresh, err := b.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after the lease was lost: %v", err)
	}
	err = a.Release(ctx, lease)
	if !errors.Is(err, lockimpl.ErrNotHeld) || !strings.Contains(err.Error(), "automatic extension had failed") {
		t.Fatalf("Release of the lost lease: %v; want ErrNotHeld naming the failed extension", err)
	}
	s.wantOnEvery(t, "k", fresh.Token, 0, time.Minute)
}

// An automatic extension refused by a quorum (another holder's value on two servers of
// three) is retried back to back, without a delay, until the Lock's validity is over,
// and every attempt re-sets our value where it is still ours; then the routine's
// AbortSignal fires, which the protocol cannot carry: the holder hears of it at its
// release (fail). Unlike 4.2.0's extend, nothing deletes our value on the minority.
func TestNodeRedlockAutoFailedExtensionIsSilent(t *testing.T) {
	s := startLibServers(t, 3)
	auto := libNamed(t, "node-redlock-auto")
	l := s.locker(t, auto, lockimpl.Config{Options: lockimpl.Options{"automatic_extension_threshold": 200 * time.Millisecond}})
	ctx := clustertest.Context(t)
	const ttl = time.Second
	lease, err := l.Acquire(ctx, "k", ttl) // extended from about 790 ms on
	if err != nil {
		t.Fatal(err)
	}
	resetStats(t, s.raws[0])
	for _, r := range s.raws[:2] {
		if err := r.Set(ctx, "k", "other", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1200 * time.Millisecond) // the retries end at the validity's end, about 990 ms
	attempts := commandCalls(t, s.raws[0], "evalsha", "eval")
	t.Logf("extension attempts seen by one refusing server: %d", attempts)
	if attempts < 10 {
		t.Errorf("%d extension attempts on a refusing server in 200 ms; want the library's back-to-back retries", attempts)
	}
	if v := s.values(ctx, "k"); v[0] != "other" || v[1] != "other" || v[2] != lease.Token {
		t.Fatalf("servers hold %q; want the others' values and ours, re-set by the retries, on the third", v)
	}
	err = l.Release(ctx, lease)
	if !errors.Is(err, lockimpl.ErrNotHeld) || !strings.Contains(err.Error(), "automatic extension had failed") {
		t.Fatalf("Release after the failed extension: %v; want ErrNotHeld naming it", err)
	}
	if v := s.values(ctx, "k"); v[0] != "other" || v[1] != "other" || v[2] != "" {
		t.Fatalf("servers hold %q after the release; want the others' values kept and ours deleted", v)
	}
}

// redlock 4.2.0's drift_factor and retry_count reach the library: the validity is
// ttl − (round(ttl × driftFactor) + 2 ms) − elapsed, and a refused acquire makes
// 1 + retry_count attempts, each followed by its clean-up.
func TestNodeRedlockOptions(t *testing.T) {
	s := startLibServers(t, 3)
	lib := libNamed(t, "node-redlock")
	ctx := clustertest.Context(t)
	const ttl = time.Second
	for _, c := range []struct {
		drift  string
		lo, hi time.Duration // of the deadline, from just before the call
	}{
		{"0.1", 0, ttl - 101*time.Millisecond},                    // at most 1000 − 102
		{"0", ttl - 100*time.Millisecond, ttl - time.Millisecond}, // at most 1000 − 2
	} {
		l := s.locker(t, lib, lockimpl.Config{Options: lockimpl.Options{"drift_factor": c.drift}})
		start := time.Now()
		lease, err := l.Acquire(ctx, "drift-"+c.drift, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if d := lease.Deadline.Sub(start); d < c.lo || d > c.hi {
			t.Errorf("drift_factor %s: deadline %s after the call; want in [%s, %s]", c.drift, d, c.lo, c.hi)
		}
	}

	for _, r := range s.raws {
		if err := r.Set(ctx, "held", "other", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		opts  lockimpl.Options
		calls int64 // lock scripts and clean-ups on one server
	}{
		{lockimpl.Options{}, 2},
		{lockimpl.Options{"retry_count": 3, "retry_delay": 50 * time.Millisecond, "retry_jitter": time.Duration(0)}, 8},
	} {
		l := s.locker(t, lib, lockimpl.Config{Options: c.opts})
		warm, err := l.Acquire(ctx, "warm-up", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, warm); err != nil { // both scripts are known to the servers now
			t.Fatal(err)
		}
		resetStats(t, s.raws[0])
		start := time.Now()
		_, err = l.Acquire(ctx, "held", time.Minute)
		took := time.Since(start)
		if !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("%v: Acquire of a held lock: %v; want ErrNotAcquired", c.opts, err)
		}
		if got := commandCalls(t, s.raws[0], "evalsha", "eval"); got != c.calls {
			t.Errorf("%v: %d scripts on one server (took %s); want %d", c.opts, got, took, c.calls)
		}
	}
}

// redis-semaphore's refreshInterval follows refresh_interval_percent of the ttl: 20 %
// refreshes five times a TTL, the default 80 % once, 0 % never (the lock expires one
// TTL after it was taken, unreleased), 150 % only after the key expired (the lock is
// lost, and another holder's value is left alone).
func TestRedisSemaphoreRefreshInterval(t *testing.T) {
	lib := libNamed(t, "redis-semaphore-mutex")
	ctx := clustertest.Context(t)
	t.Run("how often", func(t *testing.T) {
		const ttl = time.Second
		for _, c := range []struct {
			percent  int
			lo, hi   int64
			lockOpts lockimpl.Options
		}{
			{20, 4, 6, lockimpl.Options{"refresh_interval_percent": 20}},
			{80, 1, 1, lockimpl.Options{}},
		} {
			s := startLibServers(t, 1)
			l := s.locker(t, lib, lockimpl.Config{Options: c.lockOpts})
			lease, err := l.Acquire(ctx, "k", ttl)
			if err != nil {
				t.Fatal(err)
			}
			// The extend runs the refresh script (the server knows it from then on) and
			// starts the refresh anew.
			if lease, err = l.Extend(ctx, lease, ttl); err != nil {
				t.Fatal(err)
			}
			resetStats(t, s.raws[0])
			time.Sleep(ttl + 100*time.Millisecond)
			got := commandCalls(t, s.raws[0], "evalsha", "eval")
			if got < c.lo || got > c.hi {
				t.Errorf("refresh_interval_percent %d: %d refresh scripts in %s; want %d to %d", c.percent, got, ttl+100*time.Millisecond, c.lo, c.hi)
			}
			s.wantOnEvery(t, lib.key("k"), lease.Token, 0, ttl)
			if err := l.Release(ctx, lease); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("never", func(t *testing.T) {
		s := startLibServers(t, 1)
		l := s.locker(t, lib, lockimpl.Config{Options: lockimpl.Options{"refresh_interval_percent": 0}})
		lease, err := l.Acquire(ctx, "k", 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		s.waitGone(t, lib.key("k"))
		if err := l.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
			t.Fatalf("Release of the expired lock: %v; want ErrNotHeld", err)
		}
	})
	t.Run("after the key expired", func(t *testing.T) {
		s := startLibServers(t, 1)
		a := s.locker(t, lib, lockimpl.Config{Options: lockimpl.Options{"refresh_interval_percent": 150}})
		b := s.locker(t, lib, lockimpl.Config{})
		const ttl = 400 * time.Millisecond // refreshed at 600 ms
		lease, err := a.Acquire(ctx, "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		s.waitGone(t, lib.key("k"))
		fresh, err := b.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatalf("Acquire after the key expired: %v", err)
		}
		time.Sleep(time.Until(start.Add(3 * ttl))) // past a's refresh
		err = a.Release(ctx, lease)
		if !errors.Is(err, lockimpl.ErrNotHeld) || !strings.Contains(err.Error(), "onLockLost") {
			t.Fatalf("Release after the late refresh: %v; want ErrNotHeld, the lock lost", err)
		}
		s.wantOnEvery(t, lib.key("k"), fresh.Token, 0, time.Minute)
	})
}

// redis-semaphore's acquireAttemptsLimit, retryInterval and acquireTimeout reach the
// library: one attempt is refused at once; attempts retryInterval apart take the lock
// once the holder's key expires, unless acquireTimeout ends them first.
func TestRedisSemaphoreAcquireAttempts(t *testing.T) {
	lib := libNamed(t, "redis-semaphore-mutex")
	s := startLibServers(t, 1)
	ctx := clustertest.Context(t)
	hold := func() {
		t.Helper()
		if err := s.raws[0].Set(ctx, lib.key("k"), "other", 300*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		opts     lockimpl.Options
		acquired bool
		lo, hi   time.Duration
	}{
		{lockimpl.Options{}, false, 0, 200 * time.Millisecond},
		{lockimpl.Options{"acquire_attempts_limit": 1000, "retry_interval": 20 * time.Millisecond}, true, 200 * time.Millisecond, 2 * time.Second},
		{lockimpl.Options{"acquire_attempts_limit": 1000, "acquire_timeout": 100 * time.Millisecond}, false, 90 * time.Millisecond, 250 * time.Millisecond},
	} {
		l := s.locker(t, lib, lockimpl.Config{Options: c.opts})
		hold()
		start := time.Now()
		lease, err := l.Acquire(ctx, "k", time.Minute)
		took := time.Since(start)
		if (err == nil) != c.acquired || (err != nil && !errors.Is(err, lockimpl.ErrNotAcquired)) || took < c.lo || took > c.hi {
			t.Errorf("%v: Acquire of a lock held for 300ms: %v after %s; want acquired %v (else ErrNotAcquired) in [%s, %s]", c.opts, err, took, c.acquired, c.lo, c.hi)
		}
		if err == nil {
			if err := l.Release(ctx, lease); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// redis-py's blocking, blocking_timeout and sleep reach the Lock: a blocking acquire
// waits for a held lock to expire (the recorded acquire covers the tries; the validity
// counts from the try that was granted), gives up after blocking_timeout (fail: every
// try was refused), and tries every sleep.
func TestRedisPyBlocking(t *testing.T) {
	addr, rc := locktest.Server(t)
	ctx := clustertest.Context(t)
	hold := func(ttl time.Duration) {
		t.Helper()
		if err := rc.Set(ctx, "k", "other", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	const ttl = time.Second
	for _, c := range []struct {
		opts     lockimpl.Options
		acquired bool
		lo, hi   time.Duration
	}{
		{lockimpl.Options{}, false, 0, 200 * time.Millisecond},
		{lockimpl.Options{"blocking": true}, true, 250 * time.Millisecond, 600 * time.Millisecond},
		// Tries at 0, 30, 60 and 90 ms: redis-py sleeps only when the next try would start
		// within blocking_timeout.
		{lockimpl.Options{"blocking": true, "blocking_timeout": 100 * time.Millisecond, "sleep": 30 * time.Millisecond}, false, 60 * time.Millisecond, 300 * time.Millisecond},
	} {
		l := locktest.New(t, get(t, "redis-py"), lockimpl.Config{Addrs: []string{addr}, Options: c.opts})
		hold(300 * time.Millisecond)
		start := time.Now()
		lease, err := l.Acquire(ctx, "k", ttl)
		took := time.Since(start)
		if (err == nil) != c.acquired || (err != nil && !errors.Is(err, lockimpl.ErrNotAcquired)) || took < c.lo || took > c.hi {
			t.Errorf("%v: Acquire of a lock held for 300ms: %v after %s; want acquired %v (else ErrNotAcquired) in [%s, %s]", c.opts, err, took, c.acquired, c.lo, c.hi)
			continue
		}
		if err == nil {
			// The deadline counts the validity the client reported from before the request
			// (never more than the truth); a validity counted from the first try would
			// leave at most ttl − took.
			if left := lease.Deadline.Sub(start); left < ttl-200*time.Millisecond {
				t.Errorf("%v: deadline %s after the call, which took %s; want the validity counted from the try that was granted", c.opts, left, took)
			}
			if err := l.Release(ctx, lease); err != nil {
				t.Fatal(err)
			}
		}
		locktest.WaitGone(t, rc, "k")
	}

	for _, c := range []struct {
		sleep  time.Duration
		lo, hi int64 // SETs in a blocking_timeout of 300 ms
	}{
		{10 * time.Millisecond, 12, 31},
		{100 * time.Millisecond, 3, 4},
	} {
		l := locktest.New(t, get(t, "redis-py"), lockimpl.Config{Addrs: []string{addr}, Options: lockimpl.Options{
			"blocking": true, "blocking_timeout": 300 * time.Millisecond, "sleep": c.sleep}})
		hold(time.Minute)
		resetStats(t, rc)
		if _, err := l.Acquire(ctx, "k", ttl); !errors.Is(err, lockimpl.ErrNotAcquired) || !strings.Contains(err.Error(), "tries") {
			t.Fatalf("sleep %s: blocking Acquire of a held lock: %v; want ErrNotAcquired after several tries", c.sleep, err)
		}
		if got := commandCalls(t, rc, "set"); got < c.lo || got > c.hi {
			t.Errorf("sleep %s: %d SETs in a blocking_timeout of 300ms; want %d to %d", c.sleep, got, c.lo, c.hi)
		}
		if err := rc.Del(ctx, "k").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// thread_local=False changes nothing for this client (one Lock per lease, every request
// on the main thread): the lock works as with the default.
func TestRedisPyThreadLocalOff(t *testing.T) {
	addr, rc := locktest.Server(t)
	l := locktest.New(t, get(t, "redis-py"), lockimpl.Config{Addrs: []string{addr}, Options: lockimpl.Options{"thread_local": false}})
	other := locktest.New(t, get(t, "redis-py"), lockimpl.Config{Addrs: []string{addr}, Options: lockimpl.Options{"thread_local": false}})
	ctx := clustertest.Context(t)
	lease, err := l.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("second Acquire: %v; want ErrNotAcquired", err)
	}
	if lease, err = l.Extend(ctx, lease, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := other.Release(ctx, lockimpl.Lease{Key: "k", Token: "not-ours"}); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("Release with another token: %v; want ErrNotHeld", err)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if rc.Exists(ctx, "k").Val() != 0 {
		t.Fatal("key still there after Release")
	}
}

// The client files these tests run by hand are the ones locklab finds.
func TestOptionClientsExist(t *testing.T) {
	for _, c := range optionClients {
		if _, err := os.Stat(filepath.Clean(c.argv[1])); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
