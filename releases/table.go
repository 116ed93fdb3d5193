package releases

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Ecosystem is where a library's releases come from.
type Ecosystem string

const (
	Go     Ecosystem = "go"     // a Go module, from the Go module proxy
	NPM    Ecosystem = "npm"    // an npm package, from the npm registry
	Debian Ecosystem = "debian" // a Debian package: the installed version only
)

// Library is the library one implementation runs.
type Library struct {
	Impl      string // the implementation (lockimpl.Impl.Name) that runs it
	Ecosystem Ecosystem
	Package   string // Go module path, npm package name or Debian package name
}

// Libraries is the table: every implementation that runs a library, and which one.
// Implementations missing here (locklab's own locks, the mutants, clients registered
// with --impl-cmd) run no release of anything.
func Libraries() []Library {
	return []Library{
		{"redsync", Go, "github.com/go-redsync/redsync/v4"},
		{"redislock", Go, "github.com/bsm/redislock"},
		{"rueidislock", Go, "github.com/redis/rueidis"},
		{"etcd", Go, "go.etcd.io/etcd/client/v3"},
		{"node-ioredis", NPM, "ioredis"},
		{"seed-withlock", NPM, "ioredis"},
		{"node-redlock", NPM, "redlock"},
		{"node-redlock-auto", NPM, "@sesamecare-oss/redlock"},
		{"redis-semaphore-mutex", NPM, "redis-semaphore"},
		{"redis-semaphore-redlock", NPM, "redis-semaphore"},
		{"redis-py", Debian, "python3-redis"},
	}
}

// Of is the library impl runs, or an error that says why impl has no releases.
func Of(impl string) (Library, error) {
	var names []string
	for _, l := range Libraries() {
		if l.Impl == impl {
			return l, nil
		}
		names = append(names, l.Impl)
	}
	sort.Strings(names)
	if base, ok := strings.CutSuffix(impl, "-process"); ok {
		for _, l := range Libraries() {
			if l.Impl == base && l.Ecosystem == Go {
				return Library{}, fmt.Errorf("%s: name the library's implementation instead, %s@VERSION: a release of a Go library always runs out of process", impl, base)
			}
		}
	}
	return Library{}, fmt.Errorf("%s runs no library locklab has releases of (locklab's own locks, the mutants and clients registered by command run none); NAME@VERSION takes one of %s",
		impl, strings.Join(names, ", "))
}

// Split cuts NAME@VERSION; ok is false when name has no "@".
func Split(name string) (impl, version string, ok bool) {
	return strings.Cut(name, "@")
}

// Parse reads NAME@VERSION: the library of NAME and VERSION, checked to be an exact
// release as the library's ecosystem writes it.
func Parse(name string) (Library, string, error) {
	impl, version, ok := Split(name)
	if !ok || impl == "" || version == "" {
		return Library{}, "", fmt.Errorf("%q: want NAME@VERSION, e.g. redsync@v4.13.0", name)
	}
	lib, err := Of(impl)
	if err != nil {
		return Library{}, "", err
	}
	if err := lib.CheckVersion(version); err != nil {
		return Library{}, "", fmt.Errorf("%s: %w", name, err)
	}
	return lib, version, nil
}

// semver is an exact semantic version without its "v": releases, pre-releases and Go's
// pseudo-versions; no ranges, no tags (the name is recorded in every history, and must
// say what ran).
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// CheckVersion says whether v is an exact release as l's ecosystem writes it: v1.2.3 for
// a Go module (its major version the one of the module path's /vN), 1.2.3 for npm.
func (l Library) CheckVersion(v string) error {
	switch l.Ecosystem {
	case Go:
		if !strings.HasPrefix(v, "v") || !semver.MatchString(v[1:]) {
			return fmt.Errorf("version %q: want an exact Go module version, v1.2.3 (with its v)", v)
		}
		major := strings.SplitN(v[1:], ".", 2)[0]
		want := "0 or 1"
		if i := strings.LastIndex(l.Package, "/v"); i >= 0 && regexp.MustCompile(`^[2-9][0-9]*$`).MatchString(l.Package[i+2:]) {
			want = l.Package[i+2:]
			if major == want {
				return nil
			}
		} else if major == "0" || major == "1" {
			return nil
		}
		return fmt.Errorf("version %q: module %s has major version %s", v, l.Package, want)
	case NPM:
		if strings.HasPrefix(v, "v") && semver.MatchString(v[1:]) {
			return fmt.Errorf("version %q: npm writes versions without a v: %s", v, v[1:])
		}
		if !semver.MatchString(v) {
			return fmt.Errorf("version %q: want an exact npm version, 1.2.3 (no range, no tag)", v)
		}
	case Debian:
		if strings.TrimSpace(v) != v || strings.ContainsAny(v, "/ ") {
			return fmt.Errorf("version %q: want a version such as %s", v, debianRedisPy)
		}
	}
	return nil
}

// dirName is pkg as one path element ("@sesamecare-oss/redlock": "@sesamecare-oss+redlock").
func dirName(pkg string) string { return strings.ReplaceAll(pkg, "/", "+") }
