package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// The adapter templates of clients/templates wrap the example locks of
// clients/templates/testdata, unedited, as a user wraps an existing lock: registered by
// --impl-cmd (registryFor), then held to the conformance suite against real servers.
//
// One Node.js adapter wraps both Node.js examples: an ES module and a CommonJS module.
// They load ioredis. They are run from a copy in a temporary "project" whose
// node_modules is a copy of clients/node/node_modules (what `npm install` would put
// there), so that the bare import and the require() resolve from the lock's own folder,
// as they would in the user's project, and from nowhere the adapter is.

// envTemplates names another folder of templates for one test process (the mutants of
// TestTemplateMutantsFail).
const envTemplates = "LOCKLAB_TEST_TEMPLATES"

// template is an adapter template and the example lock it wraps.
type template struct {
	name    string
	command func(t *testing.T, dir string) string // --impl-cmd's COMMAND, adapters in dir
}

// nodeAdapter is the Node.js adapter among the templates in dir.
func nodeAdapter(dir string) string { return filepath.Join(dir, "node", "adapter.mjs") }

var templates = []template{
	{"node-esm", func(t *testing.T, dir string) string { // an ES module
		return "node " + nodeAdapter(dir) + " " + nodeProject(t) + "/my-lock.mjs" +
			" --env REDIS_URL=redis://{addr} --env REDIS_COMMAND_TIMEOUT_MS={timeout_ms}"
	}},
	{"node-cjs", func(t *testing.T, dir string) string { // a CommonJS module
		return "node " + nodeAdapter(dir) + " " + nodeProject(t) + "/mutex.js" +
			" --env REDIS_HOST={host} --env REDIS_PORT={port} --env REDIS_TIMEOUT_MS={timeout_ms}" +
			" --export RedisMutex --acquire lock --release unlock --extend refresh --refusal ^LockedError:"
	}},
	{"python", func(t *testing.T, dir string) string {
		return "/usr/bin/python3 " + filepath.Join(dir, "python", "adapter.py") +
			" ../../clients/templates/testdata/python/fenced_locks.py:FencedLock" +
			" --env 'REDIS_URL=redis://{addr}/0?socket_timeout={timeout_s}' --acquire lock --release unlock --fencing"
	}},
}

// templatesDir is the folder of the templates under test.
func templatesDir() string {
	if dir := os.Getenv(envTemplates); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "clients", "templates")
}

// nodeProject is a temporary project holding the Node.js example locks and their
// dependencies, installed: its folder.
func nodeProject(t *testing.T) string {
	t.Helper()
	modules := filepath.Join("..", "..", "clients", "node", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "ioredis", "package.json")); err != nil {
		t.Fatalf("ioredis is not installed: run `npm ci --prefix clients/node` (`make deps` does it): %v", err)
	}
	dir := t.TempDir()
	examples, _ := filepath.Glob(filepath.Join("..", "..", "clients", "templates", "testdata", "node", "*"))
	for _, src := range append(examples, modules) {
		if out, err := exec.Command("cp", "-R", src, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp -R %s %s: %v\n%s", src, dir, err, out)
		}
	}
	return dir
}

// implCmd registers command as name the way --impl-cmd does.
func implCmd(t *testing.T, name, command string) (lockimpl.Impl, error) {
	t.Helper()
	cmd, _, err := newRoot().Find([]string{"list"})
	if err == nil {
		err = cmd.ParseFlags([]string{"--" + flagImplCmd, name + "=" + command})
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd.SetContext(clustertest.Context(t))
	reg, err := registryFor(cmd)
	if err != nil {
		return lockimpl.Impl{}, err
	}
	return reg.Get(name)
}

// forEachTemplate runs f on each template's implementation, registered as the template's
// name, as a subtest named after it.
func forEachTemplate(t *testing.T, f func(t *testing.T, impl lockimpl.Impl)) {
	for _, tm := range templates {
		t.Run(tm.name, func(t *testing.T) {
			impl, err := implCmd(t, tm.name, tm.command(t, templatesDir()))
			if err != nil {
				t.Fatal(err)
			}
			f(t, impl)
		})
	}
}

func TestTemplatesConformance(t *testing.T) {
	forEachTemplate(t, func(t *testing.T, impl lockimpl.Impl) {
		if impl.Fencing != (impl.Name == "python") || impl.Topology != cluster.Single {
			t.Fatalf("%s registered with fencing %v, topology %s", impl.Name, impl.Fencing, impl.Topology)
		}
		locktest.Conformance(t, impl)
	})
}

// A server that answers nothing: each lock's own command timeout, which the adapter set
// from LOCKLAB_TIMEOUT_MS, fires, and the adapter says unknown (the client stays). The
// commands did reach the server, which runs them once resumed: unknown was the truth.
func TestTemplatesTimeoutIsUnknown(t *testing.T) {
	forEachTemplate(t, func(t *testing.T, impl lockimpl.Impl) {
		n := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
		l := locktest.New(t, impl, lockimpl.Config{Addrs: []string{n.Addr()}, Timeout: 300 * time.Millisecond})
		ctx := clustertest.Context(t)
		held, err := l.Acquire(ctx, "held", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		pid := l.(subprocess.ClientProcess).Pid()
		if err := n.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		_, acqErr := l.Acquire(ctx, "k", time.Minute)
		relErr := l.Release(ctx, held)
		if err := n.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		for what, err := range map[string]error{"Acquire": acqErr, "Release": relErr} {
			if lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "client reports outcome unknown") {
				t.Errorf("%s against a paused server: %v; want the adapter's unknown", what, err)
			}
		}
		if got := l.(subprocess.ClientProcess).Pid(); got != pid {
			t.Errorf("client replaced (pid %d, was %d) after a well-formed unknown", got, pid)
		}
		if _, err := l.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Errorf("Acquire of the key whose acquire was unknown: %v; want ErrNotAcquired (the first one took effect)", err)
		}
	})
}

// The lock's bare imports and require()s resolve from its own folder, not the adapter's:
// the Node.js examples where they are committed, with no node_modules above them, cannot
// load ioredis, although the adapter runs from a folder whose node_modules has it.
func TestTemplateLockImportsFromItsOwnProject(t *testing.T) {
	src, err := os.ReadFile(nodeAdapter(templatesDir()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	adapter := nodeAdapter(dir)
	modules, err := filepath.Abs(filepath.Join("..", "..", "clients", "node", "node_modules"))
	if err == nil {
		err = os.MkdirAll(filepath.Dir(adapter), 0o755)
	}
	if err == nil {
		err = os.WriteFile(adapter, src, 0o644)
	}
	if err == nil {
		err = os.Symlink(modules, filepath.Join(filepath.Dir(adapter), "node_modules"))
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(adapter), "node_modules", "ioredis", "package.json")); err != nil {
		t.Fatalf("ioredis is not beside the adapter: %v", err)
	}
	for lock, want := range map[string]string{
		"my-lock.mjs": "Cannot find package 'ioredis'", // ERR_MODULE_NOT_FOUND
		"mutex.js":    "Cannot find module 'ioredis'",  // MODULE_NOT_FOUND, from require()
	} {
		path := filepath.Join("..", "..", "clients", "templates", "testdata", "node", lock)
		if _, err := implCmd(t, "orphan", "node "+adapter+" "+path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("registering %s outside a project: %v; want Node's %q", lock, err, want)
		}
	}
}

// locklab run through the command tree, on a template registered by --impl-cmd: the
// clients take locks, and what the lock printed on stdout at import is in their logs.
func TestTemplateRun(t *testing.T) {
	dir := t.TempDir()
	command := templates[0].command(t, templatesDir())
	code, stdout, stderr := locklab(t, "run", "--impl-cmd", "my-lock="+command, "--impl", "my-lock", "--duration", "1s", "--out", dir)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "*", histories.HistoryFile))
	if len(runs) != 1 {
		t.Fatalf("histories %v, want one", runs)
	}
	h, err := histories.Load(filepath.Dir(runs[0]))
	if err != nil {
		t.Fatal(err)
	}
	granted := 0
	for _, op := range h.Ops {
		if op.Kind == histories.Acquire && op.Outcome == histories.OK {
			granted++
		}
	}
	if granted == 0 {
		t.Errorf("no acquire granted in %d operations", len(h.Ops))
	}
	log, err := os.ReadFile(filepath.Join(filepath.Dir(runs[0]), "logs", "client-0.log"))
	if err != nil || !strings.Contains(string(log), "my-lock: connecting to redis://127.0.0.1:") {
		t.Errorf("client-0.log: %v\n%s", err, log)
	}
}

// Templates that misclassify fail the tests the real ones pass. Each mutant is one edit
// of a real template, written to a folder of its own and run by this test binary in a
// child process, on the test that must catch it.
func TestTemplateMutantsFail(t *testing.T) {
	if os.Getenv(envTemplates) != "" {
		t.Skip("a mutant's own process")
	}
	for _, m := range []struct {
		name, file, from, to, test, want string
	}{
		{ // every throw taken for a refusal
			"throw-is-refusal", "node/adapter.mjs",
			`outcome: refusal?.test(why) ? "fail" : "unknown"`, `outcome: "fail"`,
			"^TestTemplatesTimeoutIsUnknown$/^node-esm$", "want the adapter's unknown",
		},
		{ // a definite refusal called unknown
			"null-is-unknown", "node/adapter.mjs",
			`return { id: r.id, outcome: "fail", error: ` + "`${r.op} answered ${got}`", `return { id: r.id, outcome: "unknown", error: ` + "`${r.op} answered ${got}`",
			"^TestTemplatesConformance$/^node-esm$/^AcquireRelease$", "want ErrNotAcquired",
		},
		{ // a lock's refusal exception not mapped (no --refusal)
			"refusal-unmapped", "node/adapter.mjs",
			`const refusal = opt.refusal ? new RegExp(opt.refusal) : null;`, `const refusal = null;`,
			"^TestTemplatesConformance$/^node-cjs$/^AcquireRelease$", "want ErrNotAcquired",
		},
		{ // Python: every exception taken for a refusal
			"python-throw-is-refusal", "python/adapter.py",
			`"fail" if refused else "unknown"`, `"fail"`,
			"^TestTemplatesTimeoutIsUnknown$/^python$", "want the adapter's unknown",
		},
	} {
		t.Run(m.name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(templatesDir(), m.file))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(src), m.from); n != 1 {
				t.Fatalf("%s holds %q %d times, want once: update the mutant", m.file, m.from, n)
			}
			dir := t.TempDir()
			mutant := filepath.Join(dir, m.file)
			if err := os.MkdirAll(filepath.Dir(mutant), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(mutant, []byte(strings.Replace(string(src), m.from, m.to, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(clustertest.Context(t), os.Args[0], "-test.run", m.test, "-test.count", "1")
			cmd.Env = append(os.Environ(), envTemplates+"="+dir)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !strings.Contains(string(out), m.want) {
				t.Fatalf("mutant %s: %v; want %s to fail with %q:\n%s", m.name, err, m.test, m.want, out)
			}
		})
	}
}
