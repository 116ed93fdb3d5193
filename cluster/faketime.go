package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server clocks. With Options.ServerClock ClockFaketime the lock servers run under
// libfaketime, reading their wall clock's offset and rate from a per-node file that
// SetClock rewrites while they run. Only the wall clock is faked (DONT_FAKE_MONOTONIC):
// Redis needs a sane monotonic clock for its timers, and key expiry uses the wall clock,
// which is the clock a jump must move.
//
// Debian's redis-server (jemalloc) hangs under libfaketime: jemalloc reads the clock while
// libfaketime is still resolving its own symbols. The servers run a build of the same
// Redis without jemalloc instead, made by scripts/build-redis-libc.sh.
const (
	ClockReal     = "real"
	ClockFaketime = "faketime"
)

// Environment variables that locate the faketime setup.
const (
	// EnvFaketimeServer names the redis-server (built with MALLOC=libc) to run under
	// libfaketime, instead of the one scripts/build-redis-libc.sh cached.
	EnvFaketimeServer = "LOCKLAB_REDIS_FAKETIME_SERVER"
	// EnvLibfaketime names the libfaketime shared object to preload.
	EnvLibfaketime = "LOCKLAB_LIBFAKETIME"
	// EnvCache is locklab's cache directory; default ${XDG_CACHE_HOME:-~/.cache}/locklab.
	EnvCache = "LOCKLAB_CACHE"
)

// faketimeServerPath is where, under the cache directory, scripts/build-redis-libc.sh
// leaves its latest build (redis-libc links to the directory of that version).
const faketimeServerPath = "redis-libc/redis-server"

// buildHint is what to do when the libc build is missing or stale.
const buildHint = "run scripts/build-redis-libc.sh (builds the installed Redis with MALLOC=libc, about a minute) or set " + EnvFaketimeServer

// ClockNode is a Node whose wall clock the harness can move: a server of the process
// backend started under libfaketime. Other nodes may implement it and say no in FakeClock.
type ClockNode interface {
	Node
	// FakeClock reports whether the server runs under libfaketime.
	FakeClock() bool
	// SetClock makes the server's wall clock read real time + offset from now on and
	// advance at rate (1 = normal, 2 = twice as fast); SetClock(0, 1) is the real clock.
	// It takes effect at the server's next clock reading, and survives Kill and Restart.
	SetClock(offset time.Duration, rate float64) error
	// ClockOffset is how far the server's wall clock is ahead of the real one now, as set
	// (a negative value: behind). 0 for a server that does not run under libfaketime.
	ClockOffset() time.Duration
}

var _ ClockNode = (*ProcessNode)(nil)

// FakeClock reports whether the node runs under libfaketime.
func (n *ProcessNode) FakeClock() bool { return n.clock != nil }

// SetClock implements ClockNode.
func (n *ProcessNode) SetClock(offset time.Duration, rate float64) error {
	if n.clock == nil {
		return fmt.Errorf("set clock of redis %s on %s: it does not run under libfaketime (cluster option ServerClock %q)", n.name, n.addr, ClockFaketime)
	}
	if err := n.clock.set(time.Now(), offset, rate); err != nil {
		return fmt.Errorf("set clock of redis %s on %s: %w", n.name, n.addr, err)
	}
	return nil
}

// ClockOffset implements ClockNode.
func (n *ProcessNode) ClockOffset() time.Duration {
	if n.clock == nil {
		return 0
	}
	return n.clock.offsetAt(time.Now())
}

// faketimeSetup is what a node needs to run under libfaketime.
type faketimeSetup struct{ server, lib string }

// findFaketime finds the libc redis-server (same version as ordinary) and libfaketime.
func findFaketime(ordinary string) (faketimeSetup, error) {
	server, err := FindFaketimeServer(ordinary)
	if err != nil {
		return faketimeSetup{}, err
	}
	lib, err := FindLibfaketime()
	if err != nil {
		return faketimeSetup{}, err
	}
	return faketimeSetup{server: server, lib: lib}, nil
}

// apply makes n, not yet started, a server under libfaketime with a clock file of its own
// that starts at the real time.
func (f faketimeSetup) apply(n *ProcessNode) {
	n.binary = f.server
	n.clock = &faketimeClock{path: filepath.Join(n.dir, "faketime.rc"), rate: 1}
	n.env = append(environWithout("LD_PRELOAD", "FAKETIME", "DONT_FAKE_MONOTONIC"),
		"LD_PRELOAD="+f.lib,
		"FAKETIME_TIMESTAMP_FILE="+n.clock.path,
		// Read the file at every clock reading: with libfaketime's default cache a change
		// would take up to 10 s to be seen. The file is tiny and in the page cache.
		"FAKETIME_NO_CACHE=1",
		"DONT_FAKE_MONOTONIC=1",
	)
}

// environWithout is the process environment minus variables named or prefixed by
// prefixes, so that an inherited FAKETIME setting cannot override the node's own.
func environWithout(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				keep = false
			}
		}
		if keep {
			env = append(env, kv)
		}
	}
	return env
}

// CacheDir is locklab's cache directory: $LOCKLAB_CACHE, else locklab under the user's
// cache directory (the place scripts/build-redis-libc.sh writes to).
func CacheDir() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locklab cache directory: %w (set %s)", err, EnvCache)
	}
	return filepath.Join(d, "locklab"), nil
}

// FindFaketimeServer finds the redis-server to run under libfaketime: $LOCKLAB_REDIS_FAKETIME_SERVER,
// else the build cached by scripts/build-redis-libc.sh, which must be the same Redis
// version as ordinary (the backend's usual redis-server). Either must not use jemalloc.
func FindFaketimeServer(ordinary string) (string, error) {
	if bin := os.Getenv(EnvFaketimeServer); bin != "" {
		path, err := exec.LookPath(bin)
		if err != nil {
			return "", fmt.Errorf("redis-server for libfaketime: $%s=%q: %w", EnvFaketimeServer, bin, err)
		}
		if _, err := libcBuild(path); err != nil {
			return "", err
		}
		return path, nil
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cache, filepath.FromSlash(faketimeServerPath))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("redis-server for libfaketime: no build at %s: %s", path, buildHint)
	}
	version, err := libcBuild(path)
	if err != nil {
		return "", err
	}
	if want, err := redisVersion(ordinary); err == nil && want != version {
		return "", fmt.Errorf("redis-server for libfaketime: %s is Redis %s but %s is Redis %s: %s", path, version, ordinary, want, buildHint)
	}
	return path, nil
}

// libcBuild checks that path is a redis-server not built with jemalloc, which hangs under
// libfaketime, and returns its version.
func libcBuild(path string) (string, error) {
	version, malloc, err := serverBuild(path)
	if err != nil {
		return "", fmt.Errorf("redis-server for libfaketime: %w", err)
	}
	if strings.HasPrefix(malloc, "jemalloc") {
		return "", fmt.Errorf("redis-server for libfaketime: %s uses %s, which hangs under libfaketime: %s", path, malloc, buildHint)
	}
	return version, nil
}

// redisVersion is the version a redis-server binary reports.
func redisVersion(path string) (string, error) {
	version, _, err := serverBuild(path)
	return version, err
}

// serverBuild reads v= and malloc= from "Redis server v=7.0.15 sha=... malloc=libc ...".
func serverBuild(path string) (version, malloc string, err error) {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s --version: %w", path, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			version = v
		}
		if m, ok := strings.CutPrefix(f, "malloc="); ok {
			malloc = m
		}
	}
	if version == "" {
		return "", "", fmt.Errorf("%s --version: no version in %q", path, strings.TrimSpace(string(out)))
	}
	return version, malloc, nil
}

// multiarch is Debian's library directory name for the architecture Go runs on ("" when
// it has none here).
func multiarch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64-linux-gnu"
	case "arm64":
		return "aarch64-linux-gnu"
	case "386":
		return "i386-linux-gnu"
	case "arm":
		return "arm-linux-gnueabihf"
	case "ppc64le":
		return "powerpc64le-linux-gnu"
	case "s390x":
		return "s390x-linux-gnu"
	case "riscv64":
		return "riscv64-linux-gnu"
	}
	return ""
}

// FindLibfaketime finds the libfaketime to preload: $LOCKLAB_LIBFAKETIME, else the
// distribution's. It prefers the MT variant: Redis reads the clock from more than one
// thread, and that variant serialises libfaketime's own state.
func FindLibfaketime() (string, error) {
	if lib := os.Getenv(EnvLibfaketime); lib != "" {
		if _, err := os.Stat(lib); err != nil {
			return "", fmt.Errorf("libfaketime: $%s: %w", EnvLibfaketime, err)
		}
		return lib, nil
	}
	var dirs []string
	if arch := multiarch(); arch != "" {
		dirs = append(dirs, filepath.Join("/usr/lib", arch, "faketime"))
	}
	dirs = append(dirs, "/usr/lib/faketime", "/usr/lib64/faketime", "/usr/local/lib/faketime")
	for _, dir := range dirs {
		for _, name := range []string{"libfaketimeMT.so.1", "libfaketime.so.1"} {
			path := filepath.Join(dir, name)
			if _, err := os.Stat(path); err == nil {
				return path, nil
			}
		}
	}
	return "", fmt.Errorf("libfaketime not found in %s: install it (apt-get install libfaketime) or set %s",
		strings.Join(dirs, ", "), EnvLibfaketime)
}

// faketimeClock is the content of one node's libfaketime file. libfaketime reads
// "+X xR" as: server time = S + X + (t − S)·R, where t is the real time and S the real
// time at which libfaketime started in the process. The clock is kept as what the harness
// asked for (at real time base the server read base+offset, advancing at rate since) and
// the file is derived from it for the current process's S, so that a restart, which
// changes S, does not move the clock.
type faketimeClock struct {
	path string

	mu     sync.Mutex
	start  time.Time // S: real time just before the current process started
	base   time.Time
	offset time.Duration
	rate   float64
}

// set makes the server read now+offset at now, advancing at rate.
func (c *faketimeClock) set(now time.Time, offset time.Duration, rate float64) error {
	if rate <= 0 {
		return fmt.Errorf("clock rate %g: want a positive speed factor (1 = normal)", rate)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base, c.offset, c.rate = now, offset, rate
	return c.writeLocked()
}

// started records that a process is about to start at now, and writes its file.
func (c *faketimeClock) started(now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.base.IsZero() {
		c.base = now
	}
	c.start = now
	return c.writeLocked()
}

// offsetAt is the server clock's lead over the real one at real time now.
func (c *faketimeClock) offsetAt(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset + time.Duration(float64(now.Sub(c.base))*(c.rate-1))
}

// line is the file's content: X = offset + (S − base)·(R − 1) solves
// S + X + (t − S)·R = t + offset + (t − base)·(R − 1) for every t. Caller holds mu.
func (c *faketimeClock) line() string {
	x := c.offset.Seconds() + c.start.Sub(c.base).Seconds()*(c.rate-1)
	return fmt.Sprintf("%+.6f x%s\n", x, strconv.FormatFloat(c.rate, 'f', -1, 64))
}

// writeLocked replaces the file at once (write and rename), so that libfaketime, which
// reads it at every clock reading, never sees half of it. Caller holds mu.
func (c *faketimeClock) writeLocked() error {
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(c.line()), 0o644); err != nil {
		return fmt.Errorf("write faketime file: %w", err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return errors.Join(fmt.Errorf("replace faketime file: %w", err), os.Remove(tmp))
	}
	return nil
}

// checkClock refuses a server clock option Start does not know.
func (o Options) checkClock() error {
	switch o.ServerClock {
	case "", ClockReal, ClockFaketime:
		return nil
	}
	return fmt.Errorf("server clock %q: want %q or %q", o.ServerClock, ClockReal, ClockFaketime)
}

// lockNode is the configuration of a lock server named name: the options' persistence,
// and libfaketime when the options ask for it. The store never runs under libfaketime:
// clock faults are about the lock service.
func (o Options) lockNode(name string) NodeConfig {
	return NodeConfig{Name: name, Persistence: o.Persistence, Faketime: o.ServerClock == ClockFaketime}
}
