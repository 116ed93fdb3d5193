package subprocess_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// The Node.js client is tested through its registry entry, against a real server. When
// node or the client's node_modules are missing these tests fail with New's message,
// which says what to install: CI installs them, so a skip would hide a broken setup.

// TestConformance runs the shared conformance suite on the Node.js client.
func TestConformance(t *testing.T) {
	locktest.Conformance(t, get(t, "node-ioredis"))
}

func TestNodeClientRegistryEntry(t *testing.T) {
	impl := get(t, "node-ioredis")
	if impl.Topology != "single" || impl.Fencing || impl.Mutant || impl.Description == "" ||
		len(impl.Steps) != 1 || impl.Steps[0] != lockimpl.StepGranted {
		t.Errorf("node-ioredis = %+v", impl)
	}
}

// A server that answers nothing makes the client's command time out: unknown, and the
// client stays usable. The command did reach the server, which runs it once resumed:
// "unknown" was the honest answer.
func TestNodeClientTimeoutIsUnknown(t *testing.T) {
	commandTimeoutIsUnknown(t, get(t, "node-ioredis"))
}

// SIGSTOP is a true process pause: the frozen client's lease expires and another
// client takes the lock; once continued, the first client's release is refused.
func TestNodeClientSignalPausesTheProcess(t *testing.T) {
	signalPausesTheProcess(t, get(t, "node-ioredis"))
}

// SIGKILL is a crash: the client is gone, and the next request runs a new one.
func TestNodeClientSignalKill(t *testing.T) {
	addr, _ := locktest.Server(t)
	l := locktest.New(t, get(t, "node-ioredis"), lockimpl.Config{Addrs: []string{addr}})
	p := clientProcess(t, l)
	pid := p.Pid()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !reaped(pid) {
		t.Fatalf("client (pid %d) still there after Signal(SIGKILL) returned", pid)
	}
	if err := p.Signal(syscall.SIGCONT); err == nil {
		t.Error("Signal to a killed client: no error")
	}
	if _, err := l.Acquire(clustertest.Context(t), "k", time.Minute); err != nil {
		t.Fatalf("Acquire after the client was killed: %v", err)
	}
	if p.Pid() == pid || p.Pid() <= 0 {
		t.Fatalf("Pid %d after a restart, was %d", p.Pid(), pid)
	}
}

func TestNodeClientCloseLeavesNoProcess(t *testing.T) {
	addr, _ := locktest.Server(t)
	impl := get(t, "node-ioredis")
	l, err := impl.New(lockimpl.Config{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	pid := clientProcess(t, l).Pid()
	if _, err := l.Acquire(clustertest.Context(t), "k", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !reaped(pid) {
		t.Fatalf("client (pid %d, state %q) still there after Close", pid, procState(pid))
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Acquire(clustertest.Context(t), "k2", time.Minute); lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Acquire after Close: %v; want an unknown error", err)
	}
}

// A caller that gives up mid-request leaves no process behind: the client, whose state
// is unknowable, is killed and reaped, and Close finds nothing left.
func TestNodeClientContextCancelledMidRequest(t *testing.T) {
	n := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	l := locktest.New(t, get(t, "node-ioredis"), lockimpl.Config{Addrs: []string{n.Addr()}, Timeout: time.Minute})
	p := clientProcess(t, l)
	pid := p.Pid()
	if err := n.Pause(clustertest.Context(t)); err != nil {
		t.Fatal(err)
	}
	defer n.Resume(context.Background())
	ctx, cancel := context.WithCancel(clustertest.Context(t))
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := l.Acquire(ctx, "k", time.Minute)
	if !errors.Is(err, context.Canceled) || lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Acquire cancelled mid-request: %v; want unknown wrapping context.Canceled", err)
	}
	if !reaped(pid) {
		t.Fatalf("client (pid %d) still there after its request was abandoned", pid)
	}
	if p.Pid() != 0 {
		t.Fatalf("Pid %d after the client was killed, want 0 until the next request", p.Pid())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestNodeClientSaysWhatToInstall(t *testing.T) {
	impl := get(t, "node-ioredis")
	cfg := lockimpl.Config{Addrs: []string{"127.0.0.1:1"}}
	t.Run("no client there", func(t *testing.T) {
		t.Setenv(subprocess.EnvNodeClient, filepath.Join(t.TempDir(), "nowhere"))
		if err := newErr(t, impl, cfg); !strings.Contains(err.Error(), subprocess.EnvNodeClient) {
			t.Errorf("error %q does not name %s", err, subprocess.EnvNodeClient)
		}
	})
	t.Run("no node_modules", func(t *testing.T) {
		src, err := os.ReadFile("../../clients/node/lock.js")
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "lock.js"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(subprocess.EnvNodeClient, dir)
		if err := newErr(t, impl, cfg); !strings.Contains(err.Error(), "npm ci --prefix clients/node") || !strings.Contains(err.Error(), "ioredis") {
			t.Errorf("error %q does not say to install ioredis with npm ci", err)
		}
	})
	t.Run("no node", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		if err := newErr(t, impl, cfg); !strings.Contains(err.Error(), "node") || !strings.Contains(err.Error(), "PATH") {
			t.Errorf("error %q does not say node is missing from PATH", err)
		}
	})
}

// The fakes below are shell scripts speaking (or failing to speak) the protocol.

// fakeHello is a correct hello line without fencing.
const fakeHello = `{"hello":"locklab-lock/1","name":"fake","fencing":false}`

// fakeAnswering says hello, then answers every request with printf template $1, whose
// %s is the request's id.
const fakeAnswering = `echo '` + fakeHello + `'
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  printf "$1\n" "$id"
done`

// fake builds a locker whose client is sh -c script with args.
func fake(t *testing.T, cfg lockimpl.Config, fencing bool, script string, args ...string) (lockimpl.Locker, error) {
	t.Helper()
	if cfg.Addrs == nil {
		cfg.Addrs = []string{"127.0.0.1:1"} // never dialled by a fake
	}
	argv := append([]string{"sh", "-c", script, "fake"}, args...)
	l, err := subprocess.Subprocess("fake", "a shell script", argv, fencing).New(cfg)
	if err == nil {
		t.Cleanup(func() { l.Close() })
	}
	return l, err
}

func mustFake(t *testing.T, cfg lockimpl.Config, fencing bool, script string, args ...string) lockimpl.Locker {
	t.Helper()
	l, err := fake(t, cfg, fencing, script, args...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// pidInError is the pid a fake printed as "pid=N" on stderr, quoted in err.
func pidInError(t *testing.T, err error) int {
	t.Helper()
	m := regexp.MustCompile(`pid=(\d+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error %q does not quote the client's stderr (pid=N)", err)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

func TestSubprocessBadHello(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		fencing      bool
		want         []string
	}{
		{"garbage", `echo "pid=$$" >&2; echo 'Welcome to my lock!'; cat >/dev/null`, false,
			[]string{"malformed hello line", "Welcome to my lock!"}},
		{"other version", `echo "pid=$$" >&2; echo '{"hello":"locklab-lock/2","fencing":false}'; cat >/dev/null`, false,
			[]string{`"locklab-lock/2"`, subprocess.SubprocessProtocol}},
		{"fencing disagrees", `echo "pid=$$" >&2; echo '` + fakeHello + `'; cat >/dev/null`, true,
			[]string{"fencing false", "registered with fencing true"}},
		{"exits", `echo "pid=$$ cannot start: no config" >&2; exit 7`, false,
			[]string{"exited before its hello line", "exit status 7", "cannot start: no config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fake(t, lockimpl.Config{}, tc.fencing, tc.script)
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if pid := pidInError(t, err); !reaped(pid) {
				t.Errorf("client (pid %d) still there after New failed", pid)
			}
		})
	}
}

func TestSubprocessNoHello(t *testing.T) {
	cfg := lockimpl.Config{Timeout: 100 * time.Millisecond}
	_, err := fake(t, cfg, false, `echo "pid=$$ booting" >&2; exec sleep 600`)
	if err == nil {
		t.Fatal("New succeeded")
	}
	if !strings.Contains(err.Error(), "no hello line within") || !strings.Contains(err.Error(), "booting") {
		t.Errorf("error %q does not say the hello never came, with the client's stderr", err)
	}
	if pid := pidInError(t, err); !reaped(pid) {
		t.Errorf("client (pid %d) still there after New failed", pid)
	}
}

// The lease is what the client reports, counted from just before the request was sent,
// never more than the TTL asked for.
func TestSubprocessLease(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, answer string
		fencing      bool
		fence        int64
		validity     time.Duration
	}{
		{"client validity", `{"id":%s,"outcome":"ok","token":"t","fence":0,"validity_ms":480}`, false, 0, 480 * time.Millisecond},
		{"fractional validity", `{"id":%s,"outcome":"ok","token":"t","validity_ms":480.9}`, false, 0, 480 * time.Millisecond},
		{"no validity", `{"id":%s,"outcome":"ok","token":"t"}`, false, 0, time.Second},
		{"validity over ttl", `{"id":%s,"outcome":"ok","token":"t","validity_ms":5000}`, false, 0, time.Second},
		{"negative validity", `{"id":%s,"outcome":"ok","token":"t","validity_ms":-5}`, false, 0, 0},
		{"fence without fencing", `{"id":%s,"outcome":"ok","token":"t","fence":7,"validity_ms":480}`, false, 0, 480 * time.Millisecond},
		{"fence", `{"id":%s,"outcome":"ok","token":"t","fence":7,"validity_ms":480}`, true, 7, 480 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := locktest.NewSteppedClock(base, time.Millisecond)
			script := fakeAnswering
			if tc.fencing {
				script = strings.Replace(script, `"fencing":false`, `"fencing":true`, 1)
			}
			l := mustFake(t, lockimpl.Config{Clock: clock}, tc.fencing, script, tc.answer)
			lease, err := l.Acquire(clustertest.Context(t), "k", time.Second)
			if err != nil {
				t.Fatal(err)
			}
			// Acquire reads the clock once before sending, once when it returns.
			if want := base.Add(tc.validity); !lease.Deadline.Equal(want) {
				t.Errorf("deadline %v, want %v (the first clock reading + %s)", lease.Deadline, want, tc.validity)
			}
			if want := tc.validity - time.Millisecond; lease.Validity != want {
				t.Errorf("validity %s, want %s", lease.Validity, want)
			}
			if lease.Token != "t" || lease.Fence != tc.fence || lease.Key != "k" {
				t.Errorf("lease %+v, want key k, token t, fence %d", lease, tc.fence)
			}
		})
	}
}

func TestSubprocessOutcomes(t *testing.T) {
	ctx := clustertest.Context(t)
	lease := lockimpl.Lease{Key: "k", Token: "t"}

	l := mustFake(t, lockimpl.Config{}, false, fakeAnswering, `{"id":%s,"outcome":"fail","error":"held by another"}`)
	if _, err := l.Acquire(ctx, "k", time.Second); !errors.Is(err, lockimpl.ErrNotAcquired) || !strings.Contains(err.Error(), "held by another") {
		t.Errorf("Acquire answered fail: %v; want ErrNotAcquired with the client's reason", err)
	}
	if err := l.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("Release answered fail: %v; want ErrNotHeld", err)
	}
	if _, err := l.Extend(ctx, lease, time.Second); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("Extend answered fail: %v; want ErrNotHeld", err)
	}

	l = mustFake(t, lockimpl.Config{}, false, fakeAnswering, `{"id":%s,"outcome":"unknown","error":"connection reset"}`)
	p := clientProcess(t, l)
	pid := p.Pid()
	_, err := l.Acquire(ctx, "k", time.Second)
	if lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("Acquire answered unknown: %v; want unknown with the client's reason", err)
	}
	if err := l.Release(ctx, lease); lockimpl.Classify(err) != histories.Unknown {
		t.Errorf("Release answered unknown: %v", err)
	}
	if p.Pid() != pid {
		t.Errorf("client replaced after well-formed answers (pid %d, was %d)", p.Pid(), pid)
	}

	l = mustFake(t, lockimpl.Config{}, false, fakeAnswering, `{"id":%s,"outcome":"ok"}`)
	if err := l.Release(ctx, lease); err != nil {
		t.Errorf("Release answered ok: %v", err)
	}
}

// granted_ms, optional, is the lease the servers granted: on the lease of an ok answer,
// in a GrantedError of an unknown one (the lock may live that long), not on a refusal.
func TestSubprocessGranted(t *testing.T) {
	ctx := clustertest.Context(t)
	l := mustFake(t, lockimpl.Config{}, false, fakeAnswering, `{"id":%s,"outcome":"ok","token":"t","validity_ms":280,"granted_ms":1000.5}`)
	lease, err := l.Acquire(ctx, "k", 300*time.Millisecond)
	if err != nil || lease.Granted != time.Second || lease.Validity > 280*time.Millisecond {
		t.Errorf("Acquire: %+v, %v; want 1 s granted beside a validity of at most 280 ms", lease, err)
	}
	if lease, err := l.Extend(ctx, lease, 300*time.Millisecond); err != nil || lease.Granted != time.Second || lease.Token != "t" {
		t.Errorf("Extend: %+v, %v; want token t, 1 s granted", lease, err)
	}
	l = mustFake(t, lockimpl.Config{}, false, fakeAnswering, `{"id":%s,"outcome":"ok","token":"t"}`)
	if lease, err := l.Acquire(ctx, "k", 300*time.Millisecond); err != nil || lease.Granted != 0 {
		t.Errorf("Acquire without granted_ms: %+v, %v; want nothing granted said", lease, err)
	}
	l = mustFake(t, lockimpl.Config{}, false, fakeAnswering, `{"id":%s,"outcome":"unknown","error":"try-lock timed out","granted_ms":1000}`)
	if _, err := l.Acquire(ctx, "k", 300*time.Millisecond); lockimpl.Classify(err) != histories.Unknown || lockimpl.GrantedOf(err) != time.Second {
		t.Errorf("Acquire answered unknown with granted_ms: %v (granted %s); want unknown, 1 s granted", err, lockimpl.GrantedOf(err))
	}
	l = mustFake(t, lockimpl.Config{}, false, fakeAnswering, `{"id":%s,"outcome":"fail","granted_ms":1000}`)
	if _, err := l.Acquire(ctx, "k", 300*time.Millisecond); !errors.Is(err, lockimpl.ErrNotAcquired) || lockimpl.GrantedOf(err) != 0 {
		t.Errorf("Acquire answered fail with granted_ms: %v (granted %s); want a refusal, nothing granted", err, lockimpl.GrantedOf(err))
	}
}

func TestSubprocessExtendUnsupported(t *testing.T) {
	script := strings.Replace(fakeAnswering, `"fencing":false`, `"fencing":false,"extend":false`, 1)
	l := mustFake(t, lockimpl.Config{}, false, script, `{"id":%s,"outcome":"ok","token":"t"}`)
	if _, err := l.Extend(clustertest.Context(t), lockimpl.Lease{Key: "k", Token: "t"}, time.Second); !errors.Is(err, lockimpl.ErrUnsupported) {
		t.Fatalf("Extend on a client that cannot: %v; want ErrUnsupported", err)
	}
}

// A broken answer is unknown, the client is killed, and the next request runs a new one.
func TestSubprocessBrokenAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, answer, want string
	}{
		{"garbage", `this is not JSON %s`, `"this is not JSON`},
		{"wrong id", `{"id":999%s,"outcome":"ok","token":"t"}`, "want"},
		{"no id", `{"outcome":"ok","token":"t"}`, "has no id"},
		{"unknown outcome", `{"id":%s,"outcome":"maybe"}`, `outcome "maybe"`},
		{"ok without token", `{"id":%s,"outcome":"ok"}`, "without a token"},
		{"granted zero", `{"id":%s,"outcome":"ok","token":"t","granted_ms":0}`, "granted_ms 0 is not a positive number"},
		{"granted negative", `{"id":%s,"outcome":"unknown","granted_ms":-1000}`, "granted_ms -1000 is not a positive number"},
		{"granted not a number", `{"id":%s,"outcome":"ok","token":"t","granted_ms":"1s"}`, "malformed answer line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustFake(t, lockimpl.Config{}, false, fakeAnswering, tc.answer)
			p := clientProcess(t, l)
			pid := p.Pid()
			_, err := l.Acquire(clustertest.Context(t), "k", time.Second)
			if lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "client process broken") ||
				!strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Acquire answered %q: %v; want unknown, broken, naming %q", tc.answer, err, tc.want)
			}
			if !reaped(pid) || p.Pid() != 0 {
				t.Fatalf("broken client (pid %d) not killed and forgotten (Pid %d)", pid, p.Pid())
			}
			// The next request starts a new client (which breaks the same way).
			_, err = l.Acquire(clustertest.Context(t), "k", time.Second)
			if lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("second Acquire: %v", err)
			}
		})
	}
}

func TestSubprocessDiesMidRequest(t *testing.T) {
	l := mustFake(t, lockimpl.Config{}, false, `echo '`+fakeHello+`'; read -r line; echo "dying with $line" >&2; exit 3`)
	pid := clientProcess(t, l).Pid()
	_, err := l.Acquire(clustertest.Context(t), "k", time.Second)
	if lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Acquire: %v; want unknown", err)
	}
	for _, w := range []string{"exited before answering", "exit status 3", `dying with {"id":1,"op":"acquire","key":"k","ttl_ms":1000}`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if !reaped(pid) {
		t.Errorf("client (pid %d) not reaped", pid)
	}
}

func TestSubprocessNoAnswer(t *testing.T) {
	l := mustFake(t, lockimpl.Config{Timeout: 100 * time.Millisecond}, false, `echo '`+fakeHello+`'; exec sleep 600`)
	pid := clientProcess(t, l).Pid()
	_, err := l.Acquire(clustertest.Context(t), "k", time.Second)
	if lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("Acquire: %v; want unknown, no answer", err)
	}
	if !reaped(pid) {
		t.Errorf("silent client (pid %d) not killed", pid)
	}
}

// Close reaps the client and kills what it left running in its process group, also when
// the client is frozen.
func TestSubprocessCloseKillsTheGroup(t *testing.T) {
	for _, frozen := range []bool{false, true} {
		t.Run("frozen="+strconv.FormatBool(frozen), func(t *testing.T) {
			childFile := filepath.Join(t.TempDir(), "child")
			l := mustFake(t, lockimpl.Config{}, false,
				`sleep 600 & echo $! > "$1"; echo '`+fakeHello+`'; cat >/dev/null`, childFile)
			p := clientProcess(t, l)
			pid := p.Pid()
			var child int
			locktest.Eventually(t, "the client writes its child's pid", func() bool {
				b, _ := os.ReadFile(childFile)
				child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				return child > 0
			})
			if frozen {
				if err := p.Signal(syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if !reaped(pid) {
				t.Errorf("client (pid %d) still there after Close", pid)
			}
			// The child is reparented when the client exits: gone or a zombie for its new parent.
			locktest.Eventually(t, "the client's child dies", func() bool { return notRunning(child) })
		})
	}
}

// envDeathHelper makes the test binary act as a locklab that starts a client and then
// waits to be killed (TestSubprocessClientDiesWithLocklab).
const envDeathHelper = "LOCKLAB_TEST_DEATH_HELPER"

// A client must not outlive locklab, even when locklab is SIGKILLed and closes nothing:
// the parent-death signal kills it. The client here ignores its stdin, so only that
// signal can end it.
func TestSubprocessClientDiesWithLocklab(t *testing.T) {
	if os.Getenv(envDeathHelper) != "" {
		l, err := fake(t, lockimpl.Config{}, false, `echo '`+fakeHello+`'; exec sleep 600`)
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("client=" + strconv.Itoa(clientProcess(t, l).Pid()) + "\n")
		time.Sleep(clustertest.Wait) // killed long before
		return
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestSubprocessClientDiesWithLocklab$")
	helper.Env = append(os.Environ(), envDeathHelper+"=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Wait()
	defer helper.Process.Kill()
	sc := bufio.NewScanner(out)
	client := 0
	for client == 0 && sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "client="); ok {
			client, _ = strconv.Atoi(v)
		}
	}
	if client <= 0 {
		t.Fatalf("the helper did not report its client's pid (%v)", sc.Err())
	}
	if notRunning(client) {
		t.Fatalf("client (pid %d) not running before its locklab was killed", client)
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	locktest.Eventually(t, "the client dies with its locklab", func() bool { return notRunning(client) })
}

// leakyClient prints its environment and arguments to stderr, answers the first request
// with an error that holds its server's URL (the password JSON-escaped, as a client's
// JSON library writes it), then dies with the password on the last line of its stderr,
// which has no newline.
const leakyClient = `env >&2
echo "args: $0 $*" >&2
echo '` + fakeHello + `'
pw=$(printf '%s' "$LOCKLAB_REDIS_PASSWORD" | sed 's/\\/\\\\/g; s/"/\\"/g')
read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
printf '{"id":%s,"outcome":"unknown","error":"dial redis://%s:%s@%s: refused"}\n' "$id" "$LOCKLAB_REDIS_USERNAME" "$pw" "$LOCKLAB_ADDRS"
read -r line
printf 'fatal: cannot AUTH with %s' "$LOCKLAB_REDIS_PASSWORD" >&2
exit 3`

// TestSubprocessScrubsSecrets: a client that prints its environment, puts its server's
// URL in an error and dies saying its password leaks it neither into the log nor into
// any error; each shows it redacted where the client said it.
func TestSubprocessScrubsSecrets(t *testing.T) {
	pw := clustertest.AwkwardPassword(t)
	var log syncBuffer
	cfg := lockimpl.Config{
		Addrs:  []string{"127.0.0.1:1"},
		Access: map[string]access.Access{"127.0.0.1:1": {Username: "alice", Password: pw}},
		Log:    &log,
	}
	l := mustFake(t, cfg, false, leakyClient)
	_, acqErr := l.Acquire(context.Background(), "k", time.Second)
	if acqErr == nil || !strings.Contains(acqErr.Error(), "redis://alice:xxxxx@127.0.0.1:1") {
		t.Fatalf("acquire: %v; want the client's error with the URL redacted", acqErr)
	}
	relErr := l.Release(context.Background(), lockimpl.Lease{Key: "k", Token: "t"})
	if relErr == nil || !strings.Contains(relErr.Error(), "fatal: cannot AUTH with xxxxx") {
		t.Fatalf("release: %v; want the broken client's last words, redacted", relErr)
	}
	l.Close()
	if !strings.Contains(log.String(), access.EnvPassword+"=xxxxx") || !strings.Contains(log.String(), "fatal: cannot AUTH with xxxxx") {
		t.Errorf("the client's log does not hold its environment and last words, redacted:\n%s", log.String())
	}
	for what, text := range map[string]string{"log": log.String(), "acquire error": acqErr.Error(), "release error": relErr.Error()} {
		if leak := clustertest.Leak(pw, text); leak != "" {
			t.Errorf("%s shows %q of the password:\n%s", what, leak, text)
		}
	}
}

// TestSubprocessQuotesLinesScrubbed: a bad line is quoted in the error scrubbed, then
// shortened, so that the cut cannot leave a piece of a password the scrubber would not
// recognise.
func TestSubprocessQuotesLinesScrubbed(t *testing.T) {
	pw := clustertest.AwkwardPassword(t)
	cfg := lockimpl.Config{Access: map[string]access.Access{"127.0.0.1:1": {Password: pw}}}
	_, err := fake(t, cfg, false, `printf '%0278d%s and more\n' 0 "$LOCKLAB_REDIS_PASSWORD"; cat >/dev/null`)
	if err == nil || !strings.Contains(err.Error(), "malformed hello line") {
		t.Fatalf("New: %v; want the malformed hello line quoted", err)
	}
	if leak := clustertest.Leak(pw, err.Error()); leak != "" {
		t.Errorf("error shows %q of the password: %v", leak, err)
	}
}

// TestSubprocessCommandRedacted: a client's command line that carries a server's URL is
// shown with the password redacted.
func TestSubprocessCommandRedacted(t *testing.T) {
	pw := clustertest.AwkwardPassword(t)
	arg := "--url=redis://alice:" + url.PathEscape(pw) + "@127.0.0.1:1"
	_, err := fake(t, lockimpl.Config{}, false, `exit 3`, arg)
	if err == nil || !strings.Contains(err.Error(), "--url=redis://alice:xxxxx@127.0.0.1:1") {
		t.Fatalf("New: %v; want the command with the URL redacted", err)
	}
	if leak := clustertest.Leak(pw, err.Error()); leak != "" {
		t.Errorf("error shows %q of the password: %v", leak, err)
	}
}

// TestSubprocessShortPassword: a password that is also a word of the protocol changes
// no protocol line; only what is shown of them is scrubbed.
func TestSubprocessShortPassword(t *testing.T) {
	cfg := lockimpl.Config{Access: map[string]access.Access{"127.0.0.1:1": {Password: "ok"}}}
	l := mustFake(t, cfg, false, fakeAnswering, `{"id":%s,"outcome":"ok","token":"ok-token"}`)
	lease, err := l.Acquire(context.Background(), "k", time.Second)
	if err != nil || lease.Token != "ok-token" {
		t.Errorf("acquire: %+v, %v; want the token as the client said it", lease, err)
	}
}

// syncBuffer is a bytes.Buffer safe for a client's stderr and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
