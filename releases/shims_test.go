package releases_test

import (
	"context"
	"debug/buildinfo"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/releases"
)

// TestGoTags: every redsync release before v4.12.0 is built with the variant of its
// range, or refused naming the API difference; the others with none.
func TestGoTags(t *testing.T) {
	lib, err := releases.Of("redsync")
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]string{
		"v4.2.0": "redsync_v4pre7", "v4.3.0": "redsync_v4pre7", "v4.4.1": "redsync_v4pre7", "v4.6.0": "redsync_v4pre7",
		"v4.7.0": "redsync_v4pre12", "v4.7.1": "redsync_v4pre12", "v4.11.0": "redsync_v4pre12", "v4.12.0-rc.1": "redsync_v4pre12",
		"v4.12.0": "", "v4.13.0": "", "v4.18.1": "", "v4.100.0": "",
	} {
		tags, err := releases.GoTags(lib, v)
		if err != nil || strings.Join(tags, ",") != want {
			t.Errorf("GoTags(redsync, %s) = %v, %v; want %q", v, tags, err, want)
		}
	}
	for v, want := range map[string]string{
		"v4.0.0": "context to every command", "v4.0.2": "context to every command",
		"v4.0.4": "WithValue", "v4.1.0": "WithValue", "v4.2.0-rc.1": "WithValue",
	} {
		if _, err := releases.GoTags(lib, v); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), v) {
			t.Errorf("GoTags(redsync, %s): %v, want an error naming %s and saying %q", v, err, v, want)
		}
	}
	other, _ := releases.Of("redislock")
	if tags, err := releases.GoTags(other, "v0.1.0"); err != nil || tags != nil {
		t.Errorf("GoTags(redislock) = %v, %v", tags, err)
	}
	// A release served but refused says so instead of a compiler's error.
	if _, err := (releases.Cache{Dir: t.TempDir()}).Prepare(context.Background(), "redsync@v4.1.0"); err == nil || !strings.Contains(err.Error(), "build redsync@v4.1.0: locklab's adapter has no variant") {
		t.Errorf("Prepare(redsync@v4.1.0): %v", err)
	}
}

// oldRedsyncReleases are the releases TestOldRedsyncReleases builds, one or two in each
// range of releases.Shims: make test-versions prepares them.
var oldRedsyncReleases = []string{"redsync@v4.3.0", "redsync@v4.4.1", "redsync@v4.7.1"}

// TestOldRedsyncReleases builds locklab-lockserve against a redsync release in each range
// the adapter's variants cover (in $LOCKLAB_CACHE when set, else in a fresh folder),
// checks that the binary holds that release, and runs acquire, a contending acquire,
// extend and release through it on three real servers, and set_nx_on_extend, which
// those releases lack.
func TestOldRedsyncReleases(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	if os.Getenv(releases.EnvCache) == "" {
		t.Setenv(releases.EnvCache, t.TempDir())
	}
	cache, err := releases.DefaultCache()
	if err != nil {
		t.Fatal(err)
	}
	base, err := locks.All().Get("redsync")
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Nodes, Nodes: 3})
	for _, name := range oldRedsyncReleases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			r, err := cache.Prepare(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			info, err := buildinfo.ReadFile(r.Path)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range info.Deps {
				if d.Path == r.Package && d.Version != r.Version {
					t.Fatalf("%s is built with %s %s", r.Path, d.Path, d.Version)
				}
			}
			impl, err := r.Impl(base)
			if err != nil {
				t.Fatal(err)
			}
			tags, _ := releases.GoTags(r.Library, r.Version)
			oldRedsyncRoundTrip(t, impl, c.LockAddrs(), r.Version, strings.Join(tags, ",") == "redsync_v4pre7")
		})
	}
}

// oldRedsyncRoundTrip runs a lease's life through impl on addrs.
// untyped says that the release has no typed errors (before v4.7.0).
func oldRedsyncRoundTrip(t *testing.T, impl lockimpl.Impl, addrs []string, version string, untyped bool) {
	ctx := clustertest.Context(t)
	newLocker := func(opts lockimpl.Options) (lockimpl.Locker, error) {
		return impl.New(lockimpl.Config{Addrs: addrs, Timeout: 2 * time.Second, Options: opts})
	}
	a, err := newLocker(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := newLocker(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	key := "k-" + version
	lease, err := a.Acquire(ctx, key, 2*time.Second)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if lease.Token == "" || lease.Validity <= time.Second || lease.Validity > 2*time.Second {
		t.Fatalf("lease %+v: want a token and a validity of about 2s less the drift", lease)
	}
	// Refused on every server: before v4.7.0 redsync's ErrFailed cannot say so (unknown),
	// from v4.7.0 its ErrTaken does (fail).
	_, err = b.Acquire(ctx, key, 2*time.Second)
	want := histories.Fail
	if untyped {
		want = histories.Unknown
	}
	if got := lockimpl.Classify(err); err == nil || got != want {
		t.Fatalf("contending Acquire: %v (%s), want %s", err, got, want)
	}
	ext, err := a.Extend(ctx, lease, time.Hour)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if ext.Token != lease.Token || ext.Validity <= 2*time.Second || !ext.Deadline.After(lease.Deadline) {
		t.Fatalf("extended lease %+v from %+v: want the same token, an hour's validity", ext, lease)
	}
	if err := a.Release(ctx, ext); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// Every server answered that the token is not there: (false, nil) before v4.7.0,
	// ErrNodeTaken on each from v4.7.0.
	for what, err := range map[string]error{"Extend after Release": func() error { _, err := a.Extend(ctx, ext, time.Hour); return err }(), "Release after Release": a.Release(ctx, ext)} {
		if !errors.Is(err, lockimpl.ErrNotHeld) || lockimpl.Classify(err) != histories.Fail {
			t.Errorf("%s: %v (%s), want not held, fail", what, err, lockimpl.Classify(err))
		}
	}
	if l, err := newLocker(lockimpl.Options{"set_nx_on_extend": true}); err == nil {
		l.Close()
		t.Errorf("set_nx_on_extend on %s: no error", version)
	} else if !strings.Contains(err.Error(), "v4.12.0") {
		t.Errorf("set_nx_on_extend on %s: %v, want an error naming v4.12.0", version, err)
	}
}
