package subprocess_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// redis-py (clients/python/redis_py_lock.py) is redis-py 4.3.4's Lock from Debian's
// python3-redis, run by /usr/bin/python3, tested through its registry entry against real
// servers like the Node.js clients. It keeps the lock under the bare key and extends,
// so the shared conformance suite takes it as it is. Without python3-redis these tests
// fail with New's message, which says what to install.

// uuid1RE is uuid.uuid1().hex, redis-py's token: time-based, version nibble 1.
var uuid1RE = regexp.MustCompile(`^[0-9a-f]{12}1[0-9a-f]{3}[89ab][0-9a-f]{15}$`)

func TestRedisPyRegistryEntry(t *testing.T) {
	impl := get(t, "redis-py")
	if impl.Topology != "single" || impl.Fencing || impl.Mutant || impl.Bug != "" ||
		!strings.Contains(impl.Description, "redis-py 4.3.4") || !strings.Contains(impl.Description, "Lock") ||
		!strings.Contains(impl.Description, "python3-redis") ||
		len(impl.Steps) != 1 || impl.Steps[0] != lockimpl.StepGranted {
		t.Errorf("redis-py = %+v", impl)
	}
}

// TestRedisPyConformance runs the shared conformance suite, the replicated topology
// (through redis-py's Sentinel client) included.
func TestRedisPyConformance(t *testing.T) {
	locktest.Conformance(t, get(t, "redis-py"))
}

// The token is redis-py's own: uuid1().hex, 32 hex digits from the clock and the host's
// node id, not 128 random bits. Leases of one process share the node part.
func TestRedisPyTokenIsUUID1(t *testing.T) {
	addr, rc := locktest.Server(t)
	l := locktest.New(t, get(t, "redis-py"), lockimpl.Config{Addrs: []string{addr}})
	ctx := clustertest.Context(t)
	a, err := l.Acquire(ctx, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Acquire(ctx, "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, lease := range []lockimpl.Lease{a, b} {
		if !uuid1RE.MatchString(lease.Token) {
			t.Errorf("token %q is not a uuid1 hex", lease.Token)
		}
		if got := rc.Get(ctx, lease.Key).Val(); got != lease.Token {
			t.Errorf("server holds %q at %s, want the lease's token %q", got, lease.Key, lease.Token)
		}
	}
	if a.Token == b.Token || a.Token[16:] != b.Token[16:] {
		t.Errorf("tokens %s and %s: want distinct tokens sharing clock sequence and node", a.Token, b.Token)
	}
}

// redis-py sends PX int(timeout*1000) with timeout in seconds: 1001 ms becomes
// 1.001 s and then PX 1000. The validity the client reports counts from what was sent,
// so it never overstates the grant.
func TestRedisPyTTLTruncatedToWhatWasSent(t *testing.T) {
	addr, rc := locktest.Server(t)
	l := locktest.New(t, get(t, "redis-py"), lockimpl.Config{Addrs: []string{addr}})
	ctx := clustertest.Context(t)
	const ttl = 1001 * time.Millisecond
	start := time.Now()
	lease, err := l.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if pttl := rc.PTTL(ctx, "k").Val(); pttl <= 0 || pttl > time.Second {
		t.Fatalf("PTTL %s after a %s acquire, want at most 1s (redis-py truncates)", pttl, ttl)
	}
	if lease.Deadline.Sub(start) > time.Second {
		t.Fatalf("deadline %s after the call, want at most the 1s redis-py sent", lease.Deadline.Sub(start))
	}
	ext, err := l.Extend(ctx, lease, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if pttl := rc.PTTL(ctx, "k").Val(); pttl <= 0 || pttl > time.Second {
		t.Fatalf("PTTL %s after a %s extend, want at most 1s", pttl, ttl)
	}
	if ext.Validity > time.Second {
		t.Fatalf("extended validity %s, want at most 1s", ext.Validity)
	}
}

// A server that answers nothing makes redis-py's socket timeout (LOCKLAB_TIMEOUT_MS)
// fire: unknown, and the client stays. redis-py does not retry (retry_on_timeout is
// off); the commands reached the server, which runs them once resumed, so "unknown"
// was the honest answer. (The extend script is loaded first: on a server that does not
// know it, the EVALSHA sent into the pause would run as a NOSCRIPT error.)
func TestRedisPyTimeoutIsUnknown(t *testing.T) {
	n := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	rc := clustertest.Client(t, n.Addr())
	l := locktest.New(t, get(t, "redis-py"), lockimpl.Config{Addrs: []string{n.Addr()}, Timeout: 300 * time.Millisecond})
	pid := clientProcess(t, l).Pid()
	ctx := clustertest.Context(t)
	held, err := l.Acquire(ctx, "held", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if held, err = l.Extend(ctx, held, 10*time.Second); err != nil { // loads the script
		t.Fatal(err)
	}
	if err := n.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = n.Resume(ctx)
		}
	}()
	for what, op := range map[string]func() error{
		"Acquire": func() error { _, err := l.Acquire(ctx, "k", time.Minute); return err },
		"Extend":  func() error { _, err := l.Extend(ctx, held, time.Minute); return err },
	} {
		err := op()
		if lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "TimeoutError") {
			t.Fatalf("%s against a paused server: %v; want the client's unknown (a TimeoutError)", what, err)
		}
	}
	if err := n.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	resumed = true
	stillServes(t, l, pid, "k")
	if pttl := rc.PTTL(ctx, "held").Val(); pttl <= 10*time.Second {
		t.Fatalf("PTTL of the lock whose extend to 1m was unknown: %s; want more than 10s (the extend took effect)", pttl)
	}
	if err := l.Release(ctx, held); err != nil {
		t.Fatalf("Release after an unknown extend: %v", err)
	}
}

// redis-py's release() forgets the Lock's token before it sends the script, so after a
// release that timed out the Lock cannot be released again (LockError, nothing sent).
// The client asks Redis anyway, through a new Lock with the lease's token: the second
// release tells what the first one did.
//
// The release script is loaded first. On a server that does not know it, redis-py's
// first EVALSHA is answered NOSCRIPT (then SCRIPT LOAD and EVALSHA again): sent into the
// pause, that EVALSHA runs as an error once the server resumes, and the lock stays.
func TestRedisPyReleaseAfterUnknownRelease(t *testing.T) {
	n := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	rc := clustertest.Client(t, n.Addr())
	l := locktest.New(t, get(t, "redis-py"), lockimpl.Config{Addrs: []string{n.Addr()}, Timeout: 300 * time.Millisecond})
	ctx := clustertest.Context(t)
	warm, err := l.Acquire(ctx, "warm-up", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, warm); err != nil { // loads the script
		t.Fatal(err)
	}
	lease, err := l.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	err = l.Release(ctx, lease)
	if rerr := n.Resume(ctx); rerr != nil {
		t.Fatal(rerr)
	}
	if lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "TimeoutError") {
		t.Fatalf("Release against a paused server: %v; want unknown", err)
	}
	// The server runs the script it had received once it resumes: the lock is gone.
	locktest.WaitGone(t, rc, "k")
	if err := l.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) || lockimpl.Classify(err) != histories.Fail {
		t.Fatalf("second Release: %v; want ErrNotHeld from the script (not redis-py's LockError)", err)
	}
}

// A server that is gone: the client's commands fail with a connection error, unknown.
func TestRedisPyServerKilledIsUnknown(t *testing.T) {
	l, lease := locktest.HeldOnKilledServer(t, get(t, "redis-py"), time.Second, time.Minute)
	ctx := clustertest.Context(t)
	if _, err := l.Acquire(ctx, "k2", time.Minute); lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "ConnectionError") {
		t.Fatalf("Acquire on a killed server: %v; want unknown (a ConnectionError)", err)
	}
	if _, err := l.Extend(ctx, lease, time.Minute); lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Extend on a killed server: %v; want unknown", err)
	}
	if err := l.Release(ctx, lease); lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Release on a killed server: %v; want unknown", err)
	}
}

// A client that replaces a killed one extends and releases its predecessor's lease:
// the request carries the token, which the new process gives a new Lock.
func TestRedisPyActsOnItsPredecessorsLease(t *testing.T) {
	addr, rc := locktest.Server(t)
	l := locktest.New(t, get(t, "redis-py"), lockimpl.Config{Addrs: []string{addr}})
	pid := clientProcess(t, l).Pid()
	lease, p := signalled(t, l, 10*time.Second, syscall.SIGKILL)
	ctx := clustertest.Context(t)
	ext, err := l.Extend(ctx, lease, time.Hour)
	if err != nil {
		t.Fatalf("Extend by the new client: %v", err)
	}
	if p.Pid() == pid || p.Pid() <= 0 {
		t.Fatalf("Pid %d after the kill, was %d: want a new client", p.Pid(), pid)
	}
	if pttl := rc.PTTL(ctx, "k").Val(); pttl <= 10*time.Second {
		t.Fatalf("PTTL %s after the extend, want more than 10s", pttl)
	}
	if err := l.Release(ctx, ext); err != nil {
		t.Fatalf("Release by the new client: %v", err)
	}
	if rc.Exists(ctx, "k").Val() != 0 {
		t.Fatal("key still there after Release")
	}
}

// SIGSTOP freezes the client: its lease expires, another client takes the lock, and
// once continued the first client's release is refused by the script.
func TestRedisPySignalPausesTheProcess(t *testing.T) {
	signalPausesTheProcess(t, get(t, "redis-py"))
}

func TestRedisPySaysWhatToInstall(t *testing.T) {
	impl := get(t, "redis-py")
	cfg := lockimpl.Config{Addrs: []string{"127.0.0.1:1"}}

	t.Run("no python3-redis", func(t *testing.T) {
		// Debian's interpreter without site-packages: no redis module.
		python := filepath.Join(t.TempDir(), "python3")
		if err := os.WriteFile(python, []byte("#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv(subprocess.EnvPython, python)
		err := newErr(t, impl, cfg)
		if !strings.Contains(err.Error(), "apt-get install -y python3-redis") {
			t.Errorf("error %q does not say to install python3-redis", err)
		}
	})
	t.Run("no interpreter", func(t *testing.T) {
		t.Setenv(subprocess.EnvPython, filepath.Join(t.TempDir(), "python3"))
		err := newErr(t, impl, cfg)
		if !strings.Contains(err.Error(), "python3-redis") || !strings.Contains(err.Error(), subprocess.EnvPython) {
			t.Errorf("error %q does not name python3-redis and %s", err, subprocess.EnvPython)
		}
	})
	t.Run("no client there", func(t *testing.T) {
		t.Setenv(subprocess.EnvPythonClient, filepath.Join(t.TempDir(), "nowhere"))
		if err := newErr(t, impl, cfg); !strings.Contains(err.Error(), subprocess.EnvPythonClient) {
			t.Errorf("error %q does not name %s", err, subprocess.EnvPythonClient)
		}
	})
}

// threadLocalScript shows what thread_local means to redis-py's Lock (the client keeps
// the default, True, and answers every request on its main thread). It prints one JSON
// object of findings.
const threadLocalScript = `
import json, os, threading, time
import redis
from redis.exceptions import LockError

host, port = os.environ["ADDR"].rsplit(":", 1)
r = redis.Redis(host=host, port=int(port), socket_timeout=5)
out = {}

def in_thread(f):
    res = {}
    def run():
        try:
            res["v"] = f()
        except Exception as err:
            res["v"] = type(err).__name__ + ": " + str(err)
    th = threading.Thread(target=run)
    th.start()
    th.join()
    return res["v"]

# thread_local=True: another thread does not see the token; its release sends nothing.
# (Lock.__init__ sets local.token = None in the constructing thread only, so another
# thread's release finds no attribute at all.)
lock = r.lock("tl", timeout=60, blocking=False, thread_local=True)
assert lock.acquire()
out["other_thread_release"] = in_thread(lambda: lock.release() or "released")
out["held_after_other_thread"] = r.get("tl") == lock.local.token
lock.release()

# One Lock shared by two threads: thread 1's lease expires, thread 2 takes the lock with
# the same Lock, thread 1 releases.
for tl in (True, False):
    name = "shared-%s" % tl
    shared = r.lock(name, timeout=1, blocking=False, thread_local=tl)
    assert shared.acquire()
    while r.exists(name):
        time.sleep(0.01)
    assert in_thread(lambda: shared.acquire())
    t2 = r.get(name)
    try:
        shared.release()
        res = "released"
    except LockError as err:
        res = type(err).__name__
    out["shared_%s" % tl] = {"release": res, "thread2_lock_left": r.get(name) == t2}
print(json.dumps(out))
`

// sharedLock is what happened to one Lock shared by two threads.
type sharedLock struct {
	Release         string `json:"release"`
	Thread2LockLeft bool   `json:"thread2_lock_left"`
}

// redis-py's thread_local (True by default) keeps the token per thread: a Lock acquired
// in one thread cannot be released from another (nothing is sent: the other thread's
// release fails with an AttributeError, not even LockError, as local.token was only
// initialised in the thread that made the Lock), and a Lock
// shared between threads cannot release another thread's lease. With thread_local=False
// the documented hazard is real: thread 1, whose lease expired, releases the lock thread
// 2 took through the same Lock object.
func TestRedisPyThreadLocal(t *testing.T) {
	addr, _ := locktest.Server(t)
	cmd := exec.CommandContext(clustertest.Context(t), "/usr/bin/python3", "-c", threadLocalScript)
	cmd.Env = append(os.Environ(), "ADDR="+addr)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	var got struct {
		OtherThreadRelease   string     `json:"other_thread_release"`
		HeldAfterOtherThread bool       `json:"held_after_other_thread"`
		SharedTrue           sharedLock `json:"shared_True"`
		SharedFalse          sharedLock `json:"shared_False"`
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("python said %q: %v", stdout, err)
	}
	if !strings.Contains(got.OtherThreadRelease, "AttributeError") || !strings.Contains(got.OtherThreadRelease, "token") || !got.HeldAfterOtherThread {
		t.Errorf("thread_local=True, release from another thread: %q, lock still held: %v; want redis-py's AttributeError (no token in this thread) and the lock held",
			got.OtherThreadRelease, got.HeldAfterOtherThread)
	}
	if got.SharedTrue.Release != "LockNotOwnedError" || !got.SharedTrue.Thread2LockLeft {
		t.Errorf("thread_local=True, shared Lock: thread 1's release %q, thread 2's lock left: %v; want LockNotOwnedError and the lock left",
			got.SharedTrue.Release, got.SharedTrue.Thread2LockLeft)
	}
	if got.SharedFalse.Release != "released" || got.SharedFalse.Thread2LockLeft {
		t.Errorf("thread_local=False, shared Lock: thread 1's release %q, thread 2's lock left: %v; want thread 2's lock released by thread 1",
			got.SharedFalse.Release, got.SharedFalse.Thread2LockLeft)
	}
}
