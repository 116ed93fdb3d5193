package releases_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/locklab/locklab/lockimpl/subprocess"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/releases"
)

// TestTableNamesRealImplementations: every implementation of the table is shipped, a Go
// library's runs in process (locklab-lockserve serves it), and every Node.js client of
// lockimpl/subprocess is in the table as an npm library.
func TestTableNamesRealImplementations(t *testing.T) {
	reg := locks.All()
	seen := map[string]bool{}
	for _, l := range releases.Libraries() {
		if seen[l.Impl] {
			t.Errorf("%s is in the table twice", l.Impl)
		}
		seen[l.Impl] = true
		impl, err := reg.Get(l.Impl)
		if err != nil {
			t.Errorf("table: %v", err)
			continue
		}
		if l.Ecosystem == releases.Go && impl.Process {
			t.Errorf("%s: a Go library's implementation must run in process, for locklab-lockserve to serve it", l.Impl)
		}
		if _, err := releases.Pinned(context.Background(), l.Impl); err != nil {
			t.Errorf("Pinned(%s): %v", l.Impl, err)
		}
	}
	for _, impl := range reg.List() {
		_, err := subprocess.NodeRelease(impl.Name, "1.0.0", "/nowhere/node_modules")
		lib, lerr := releases.Of(impl.Name)
		if isNode := err == nil; isNode != (lerr == nil && lib.Ecosystem == releases.NPM) {
			t.Errorf("%s: a Node.js client %v, in the table as %+v (%v)", impl.Name, isNode, lib, lerr)
		}
	}
	if v, err := releases.Pinned(context.Background(), "redsync"); err != nil || !strings.HasPrefix(v, "v4.") {
		t.Errorf("Pinned(redsync) = %q, %v", v, err)
	}
	if v, err := releases.Pinned(context.Background(), "redis-semaphore-mutex"); err != nil || v != "5.8.0" {
		t.Errorf("Pinned(redis-semaphore-mutex) = %q, %v (clients/node/package.json)", v, err)
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct{ name, lib, version string }{
		{"redsync@v4.13.0", "github.com/go-redsync/redsync/v4", "v4.13.0"},
		{"redislock@v0.9.4", "github.com/bsm/redislock", "v0.9.4"},
		{"rueidislock@v1.0.70-rc.1", "github.com/redis/rueidis", "v1.0.70-rc.1"},
		{"etcd@v3.6.0", "go.etcd.io/etcd/client/v3", "v3.6.0"},
		{"node-redlock-auto@1.3.0", "@sesamecare-oss/redlock", "1.3.0"},
		{"seed-withlock@5.4.1", "ioredis", "5.4.1"},
		{"redis-semaphore-redlock@5.6.0", "redis-semaphore", "5.6.0"},
		{"redis-py@4.3.4", "python3-redis", "4.3.4"},
	} {
		lib, v, err := releases.Parse(c.name)
		if err != nil || lib.Package != c.lib || v != c.version {
			t.Errorf("Parse(%s) = %+v, %q, %v", c.name, lib, v, err)
		}
	}
	for name, want := range map[string]string{
		"redsync":                    "want NAME@VERSION",
		"redsync@":                   "want NAME@VERSION",
		"@v1.0.0":                    "want NAME@VERSION",
		"redsync@4.13.0":             "with its v",
		"redsync@v3.0.0":             "has major version 4",
		"redislock@v2.0.0":           "has major version 0 or 1",
		"redsync@latest":             "exact Go module version",
		"node-redlock@v4.2.0":        "without a v: 4.2.0",
		"node-redlock@^4.2.0":        "no range, no tag",
		"node-redlock@latest":        "no range, no tag",
		"setnx@v1.0.0":               "setnx runs no library",
		"check-then-set@1.0.0":       "check-then-set runs no library",
		"rueidislock-process@v1.0.0": "rueidislock@VERSION",
		"redis-py@4.3/4":             "want a version",
	} {
		if _, _, err := releases.Parse(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%s): %v, want an error saying %q", name, err, want)
		}
	}
}

// TestUnservedReleasesSayWhy: a version the Go module proxy does not serve names the
// module and version and quotes go; a redis-py other than Debian's says where Python
// comes from. Nothing is left in the cache.
func TestUnservedReleasesSayWhy(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cache := releases.Cache{Dir: t.TempDir()}
	ctx := context.Background()
	_, err := cache.Prepare(ctx, "redsync@v4.0.0")
	if err == nil {
		t.Fatal("redsync@v4.0.0 was built")
	}
	for _, want := range []string{"build redsync@v4.0.0", "github.com/go-redsync/redsync/v4@v4.0.0", "go: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !strings.Contains(err.Error(), "does not serve") && !strings.Contains(err.Error(), "go get") {
		t.Errorf("error %q does not say the proxy refused it", err)
	}
	_, err = cache.Prepare(ctx, "redis-py@5.0.1")
	if err == nil || !strings.Contains(err.Error(), "no PyPI is reachable") || !strings.Contains(err.Error(), "Debian's python3-redis") {
		t.Errorf("redis-py@5.0.1: %v", err)
	}
	debian, _ := releases.Versions(ctx, "redis-py")
	if len(debian) != 1 {
		t.Fatalf("Versions(redis-py) = %v", debian)
	}
	if r, err := cache.Prepare(ctx, "redis-py@"+debian[0]); err != nil || r.Path != "" {
		t.Errorf("redis-py@%s (Debian's): %+v, %v", debian[0], r, err)
	}
	entries, _ := os.ReadDir(cache.Dir + "/go/redsync@v4.0.0")
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("a failed build left %s in the cache", e.Name())
		}
	}
}

// TestSourceTree: found from the working directory (a test runs in its package's
// folder), or named by LOCKLAB_SRC; a wrong LOCKLAB_SRC says so.
func TestSourceTree(t *testing.T) {
	src, err := releases.SourceTree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src + "/cmd/locklab-lockserve"); err != nil {
		t.Errorf("source tree %s: %v", src, err)
	}
	t.Setenv(releases.EnvSrc, t.TempDir())
	if _, err := releases.SourceTree(); err == nil || !strings.Contains(err.Error(), "LOCKLAB_SRC") {
		t.Errorf("a LOCKLAB_SRC without locklab's go.mod: %v", err)
	}
	if _, err := (releases.Cache{Dir: t.TempDir()}).Prepare(context.Background(), "redsync@v4.13.0"); err == nil || !strings.Contains(err.Error(), "LOCKLAB_SRC") {
		t.Errorf("a build without a source tree: %v", err)
	}
}

func TestDefaultCache(t *testing.T) {
	t.Setenv(releases.EnvCache, "relative/cache")
	c, err := releases.DefaultCache()
	if err != nil || !strings.HasSuffix(c.Dir, "/relative/cache") || !strings.HasPrefix(c.Dir, "/") {
		t.Errorf("DefaultCache with %s=relative/cache: %+v, %v", releases.EnvCache, c, err)
	}
	t.Setenv(releases.EnvCache, "")
	if c, err := releases.DefaultCache(); err == nil && !strings.HasSuffix(c.Dir, "/locklab") {
		t.Errorf("DefaultCache: %s", c.Dir)
	}
	if _, err := releases.Versions(context.Background(), "watchdog"); err == nil {
		t.Error("Versions(watchdog): no error")
	}
}

// TestLimitsDropWhatARangeCannotDo: redis-semaphore's Mutex before 5.6.0 cannot run on a
// Redis Cluster, so its release's implementation does not claim to (plans are refused
// when read, campaigns never draw it); 5.6.0 and the other variant keep it.
func TestLimitsDropWhatARangeCannotDo(t *testing.T) {
	reg := locks.All()
	for _, c := range []struct {
		impl, version string
		cluster       bool
	}{
		{"redis-semaphore-mutex", "5.3.0", false},
		{"redis-semaphore-mutex", "5.5.1", false},
		{"redis-semaphore-mutex", "5.6.0", true},
		{"redis-semaphore-redlock", "5.3.0", false}, // N independent servers: never on a cluster
	} {
		base, err := reg.Get(c.impl)
		if err != nil {
			t.Fatal(err)
		}
		lib, err := releases.Of(c.impl)
		if err != nil {
			t.Fatal(err)
		}
		impl, err := releases.Release{Library: lib, Version: c.version, Path: t.TempDir()}.Impl(base)
		if err != nil {
			t.Fatal(err)
		}
		if impl.RunsOn("cluster") != c.cluster {
			t.Errorf("%s: runs on a Redis Cluster %v, want %v (%s)", impl.Name, impl.RunsOn("cluster"), c.cluster, impl.Description)
		}
		if !c.cluster && c.impl == "redis-semaphore-mutex" && !strings.Contains(impl.Description, "Not on a Redis Cluster (up to 5.5.1") {
			t.Errorf("%s: the description does not say why it is not on a cluster: %s", impl.Name, impl.Description)
		}
	}
}
