package subprocess_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
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
// with those differences (libConformance, in helpers_test.go), on every server of the
// lock.

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

func TestRedlockAndSemaphoreRegistryEntries(t *testing.T) {
	forEachLib(t, nodeLibs, func(t *testing.T, lib nodeLib) {
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
	libConformance(t, nodeLibs)
}

// A server that answers nothing: every command to it times out. On a single server, or
// on a majority of a Redlock's, the outcome is unknown — the commands reached the
// servers and run once they resume — and the client process stays.
func TestRedlockAndSemaphorePausedServerIsUnknown(t *testing.T) {
	forEachLib(t, nodeLibs, func(t *testing.T, lib nodeLib) {
		const timeout = 300 * time.Millisecond
		s, l := lib.start(t, lockimpl.Config{Timeout: timeout})
		pid := clientProcess(t, l).Pid()
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
		stillServes(t, l, pid, "")
	})
}

// A Redlock with one server of three paused still grants, but only after that server's
// command timed out: the libraries wait for every server's answer — except
// @sesamecare-oss/redlock, which grants as soon as a quorum voted.
func TestRedlockAndSemaphoreOnePausedServerDelaysEveryAcquire(t *testing.T) {
	forEachLib(t, withNodes(nodeLibs, 3), func(t *testing.T, lib nodeLib) {
		const timeout = 500 * time.Millisecond
		s, l := lib.start(t, lockimpl.Config{Timeout: timeout})
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
	forEachLib(t, withNodes(nodeLibs, 3), func(t *testing.T, lib nodeLib) {
		if lib.noExtend {
			t.Skip("extends by itself only: see TestNodeRedlockAutoFailedExtensionIsSilent")
		}
		s, l := lib.start(t, lockimpl.Config{})
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
