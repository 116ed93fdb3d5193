package main

import (
	"bufio"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/releases"
)

// The releases the tests build and install; .ci/run warms them into $LOCKLAB_CACHE
// (make versions) before make test, so that these tests find them built.
const (
	testGoRelease  = "redsync@v4.13.0"
	testNPMRelease = "redis-semaphore-mutex@5.6.0"
)

// TestReleasesRun builds redsync@v4.13.0 and installs redis-semaphore-mutex@5.6.0 into
// the cache ($LOCKLAB_CACHE when set, as CI warms it; a fresh folder otherwise), then
// runs each briefly on real servers: the history names the release, the run is clean
// (P1 ok), and what ran is that release (the binary's build information; the Node.js
// client's log).
func TestReleasesRun(t *testing.T) {
	if os.Getenv(releases.EnvCache) == "" {
		t.Setenv(releases.EnvCache, t.TempDir())
	}
	code, stdout, stderr := locklab(t, "list", "--prepare", testGoRelease+","+testNPMRelease)
	if code != exitOK {
		t.Fatalf("list --prepare: exit %d\n%s\n%s", code, stdout, stderr)
	}
	paths := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if f := strings.Split(line, "\t"); len(f) == 3 {
			paths[f[0]] = f[2]
		}
	}
	info, err := buildinfo.ReadFile(paths[testGoRelease])
	if err != nil {
		t.Fatalf("%s: %v\n%s", testGoRelease, err, stdout)
	}
	built := ""
	for _, d := range info.Deps {
		if d.Path == "github.com/go-redsync/redsync/v4" {
			built = d.Version
		}
	}
	if built != "v4.13.0" {
		t.Errorf("%s is built with redsync %q", paths[testGoRelease], built)
	}
	if _, err := os.Stat(filepath.Join(paths[testNPMRelease], "redis-semaphore", "package.json")); err != nil {
		t.Errorf("%s: %v\n%s", testNPMRelease, err, stdout)
	}

	for _, name := range []string{testGoRelease, testNPMRelease} {
		out := t.TempDir()
		code, stdout, stderr := locklab(t, "run", "--impl", name, "--duration", "1s", "--fencing", "off", "--out", out)
		if code != exitOK {
			t.Fatalf("run --impl %s: exit %d\n%s\n%s", name, code, stdout, stderr)
		}
		dir := runDir(t, out)
		if impl := historyImpl(t, dir); impl != name {
			t.Errorf("%s: history meta names impl %q", name, impl)
		}
		assertGranted(t, dir)
		var res struct {
			Result struct {
				Properties []struct{ Property, Verdict string }
			}
		}
		data, err := os.ReadFile(filepath.Join(dir, "result.json"))
		if err == nil {
			err = json.Unmarshal(data, &res)
		}
		verdicts := map[string]string{}
		for _, p := range res.Result.Properties {
			verdicts[p.Property] = p.Verdict
		}
		if err != nil || verdicts["P1"] != "ok" || verdicts["P2"] != "ok" || verdicts["L1"] != "ok" {
			t.Errorf("%s: verdicts %v (%v), want P1, P2 and L1 ok", name, verdicts, err)
		}
		if name == testNPMRelease { // the Node.js client logs the release it loaded
			data, err := os.ReadFile(filepath.Join(dir, "logs", "client-0.log"))
			if err != nil || !strings.Contains(string(data), "library redis-semaphore@5.6.0 ") {
				t.Errorf("%s: client log %q (%v) does not name redis-semaphore@5.6.0", name, data, err)
			}
		}
	}
}

// historyImpl is the implementation the meta line of dir's history names.
func historyImpl(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		t.Fatalf("%s: empty history", dir)
	}
	var head struct{ Meta struct{ Impl string } }
	if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
		t.Fatalf("%s: meta line: %v", dir, err)
	}
	return head.Meta.Impl
}

// TestListVersions prints the versions the registries serve, with the pinned one.
func TestListVersions(t *testing.T) {
	code, stdout, stderr := locklab(t, "list", "--versions", "redsync")
	if code != exitOK || !strings.Contains(stdout, "v4.13.0") || !strings.Contains(stdout, "pinned: v4.") || !strings.Contains(stdout, "may still be served") {
		t.Errorf("list --versions redsync: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = locklab(t, "list", "--versions", "redis-semaphore-mutex")
	if code != exitOK || !strings.Contains(stdout, " 5.6.0 ") || !strings.Contains(stdout, "pinned: 5.8.0") {
		t.Errorf("list --versions redis-semaphore-mutex: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestReleaseErrorsNameTheirPlace: a release that cannot be is refused with the flag or
// the plan's field it came from, before anything is built.
func TestReleaseErrorsNameTheirPlace(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(releases.EnvCache, filepath.Join(dir, "cache"))
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte("{\n  \"impl\": \"node-redlock@v4.2.0\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, []flagCase{
		{[]string{"list", "--prepare", "setnx@1.0.0"}, `flag --prepare "setnx@1.0.0": setnx runs no library`},
		{[]string{"list", "--prepare", "redsync"}, `flag --prepare "redsync": "redsync": want NAME@VERSION`},
		{[]string{"list", "--versions", "unsafe-release"}, `flag --versions "unsafe-release": unsafe-release runs no library`},
		{[]string{"run", "--impl", "check-then-set@1.0.0", "--out", dir}, "flag --impl: check-then-set runs no library"},
		{[]string{"run", "--impl", "nope@1.0.0", "--out", dir}, `flag --impl: nope@1.0.0: unknown lock implementation "nope"`},
		{[]string{"run", "--impl", "redsync@4.13", "--out", dir}, `flag --impl: redsync@4.13: version "4.13": want an exact Go module version`},
		{[]string{"run", "--plan", plan, "--out", dir}, plan + `:2: impl: node-redlock@v4.2.0: version "v4.2.0": npm writes versions without a v: 4.2.0`},
		{[]string{"matrix", "--impl", "redis-py@9.9.9", "--scenario", "baseline", "--out", dir}, "no PyPI is reachable"},
	})
	if _, err := os.Stat(filepath.Join(dir, "cache", "go")); err == nil {
		t.Error("a refused release left a build in the cache")
	}
}
