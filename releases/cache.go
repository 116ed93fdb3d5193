package releases

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/locklab/locklab/cluster/faketime"
)

const (
	// EnvCache is locklab's cache folder, which holds the releases built and installed.
	EnvCache = faketime.EnvCache
	// EnvSrc is the locklab source tree a Go release is built from (and whose Node.js
	// clients' package.json an npm release starts from); when unset it is found upward
	// from the executable or the working directory.
	EnvSrc = "LOCKLAB_SRC"

	module       = "github.com/locklab/locklab"
	lockserve    = "locklab-lockserve"
	nodeClients  = "clients/node"
	lockPollWait = 100 * time.Millisecond
)

// Cache is a folder of releases: go/IMPL@VERSION/STAMP/locklab-lockserve and
// npm/PACKAGE@VERSION/STAMP/node_modules, STAMP a digest of the source they were built
// from, so that a changed checkout builds its release anew instead of running a stale
// adapter.
type Cache struct{ Dir string }

// DefaultCache is locklab's cache folder, the one scripts/build-redis-libc.sh writes
// its Redis to: $LOCKLAB_CACHE, else os.UserCacheDir()/locklab.
func DefaultCache() (Cache, error) {
	dir, err := faketime.CacheDir()
	if err != nil {
		return Cache{}, err
	}
	abs, err := filepath.Abs(dir)
	return Cache{abs}, err
}

// Release is one release of a library, ready to run.
type Release struct {
	Library
	Version string
	// Path is what runs it: locklab-lockserve built against it (Go), the node_modules
	// folder it is installed in (npm), "" for Debian's installed package.
	Path string
	// Note says how it differs from what its library declares: for an npm release whose
	// peer dependency range excludes the clients' pinned one (ioredis), that range.
	Note string
}

// Prepare builds or installs NAME@VERSION into the cache unless it is there already, and
// says where it is. Concurrent calls, in this process or others, build it once.
func (c Cache) Prepare(ctx context.Context, name string) (Release, error) {
	lib, version, err := Parse(name)
	if err != nil {
		return Release{}, err
	}
	r := Release{Library: lib, Version: version}
	switch lib.Ecosystem {
	case Go:
		r.Path, err = c.buildGo(ctx, lib, version)
	case NPM:
		r.Path, err = c.installNPM(ctx, lib, version)
		if note, rerr := os.ReadFile(filepath.Join(filepath.Dir(r.Path), peerNote)); err == nil && rerr == nil {
			r.Note = "installed with --legacy-peer-deps beside the Node.js clients' pinned libraries, outside the range it declares: " + strings.TrimSpace(string(note))
		}
	case Debian:
		err = checkDebian(ctx, lib, version)
	}
	if err != nil {
		return Release{}, err
	}
	return r, nil
}

// buildGo is locklab-lockserve built against lib at version: go get into a copy of the
// source tree's go.mod, go build with that modfile and the build tags of the adapter's
// variant for version (GoTags), in a temporary folder renamed into place.
func (c Cache) buildGo(ctx context.Context, lib Library, version string) (string, error) {
	src, err := SourceTree()
	if err != nil {
		return "", fmt.Errorf("build %s@%s: %w", lib.Impl, version, err)
	}
	stamp, err := goStamp(src)
	if err != nil {
		return "", fmt.Errorf("build %s@%s: %w", lib.Impl, version, err)
	}
	dir := filepath.Join(c.Dir, "go", lib.Impl+"@"+version)
	final := filepath.Join(dir, stamp)
	bin := filepath.Join(final, lockserve)
	err = c.once(ctx, dir, bin, func(tmp string) error {
		for _, f := range []string{"go.mod", "go.sum"} {
			if err := copyFile(filepath.Join(src, f), filepath.Join(tmp, f)); err != nil {
				return err
			}
		}
		modfile := "-modfile=" + filepath.Join(tmp, "go.mod")
		if out, err := goCmd(ctx, src, "get", modfile, lib.Package+"@"+version); err != nil {
			why := "go get " + lib.Package + "@" + version + " failed"
			if s := string(out); strings.Contains(s, "not available") || strings.Contains(s, "unknown revision") || strings.Contains(s, "invalid version") {
				why = "the Go module proxy does not serve " + lib.Package + "@" + version + " (locklab list --versions " + lib.Impl + " lists what it does)"
			}
			return fmt.Errorf("%s: %s", why, firstLines(out, 4, err))
		}
		tags, err := GoTags(lib, version) // once the proxy said it serves the release
		if err != nil {
			return err
		}
		args := []string{"build", "-mod=mod", modfile}
		variant := ""
		if len(tags) > 0 {
			args = append(args, "-tags", strings.Join(tags, ","))
			variant = " (its variant for this release, -tags " + strings.Join(tags, ",") + ")"
		}
		args = append(args, "-o", filepath.Join(tmp, lockserve), "./cmd/"+lockserve)
		if out, err := goCmd(ctx, src, args...); err != nil {
			return fmt.Errorf("%s%s does not compile against %s %s: %s", adapterOf(out), variant, lib.Package, version, firstLines(out, 6, err))
		}
		return nil
	}, final)
	if err != nil {
		return "", fmt.Errorf("build %s@%s: %w", lib.Impl, version, err)
	}
	return bin, nil
}

// installNPM is lib at version installed by npm beside the other libraries of the
// Node.js clients: their package.json with that one dependency replaced, and their
// package-lock.json, so that everything else stays as pinned.
func (c Cache) installNPM(ctx context.Context, lib Library, version string) (string, error) {
	src, err := SourceTree()
	if err != nil {
		return "", fmt.Errorf("install %s@%s: %w", lib.Impl, version, err)
	}
	clients := filepath.Join(src, nodeClients)
	manifest, err := os.ReadFile(filepath.Join(clients, "package.json"))
	if err != nil {
		return "", fmt.Errorf("install %s@%s: the Node.js clients' package.json: %w", lib.Impl, version, err)
	}
	lockfile, err := os.ReadFile(filepath.Join(clients, "package-lock.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("install %s@%s: %w", lib.Impl, version, err)
	}
	sum := sha256.Sum256(append(append([]byte(nil), manifest...), lockfile...))
	dir := filepath.Join(c.Dir, "npm", dirName(lib.Package)+"@"+version)
	final := filepath.Join(dir, hex.EncodeToString(sum[:6]))
	modules := filepath.Join(final, "node_modules")
	err = c.once(ctx, dir, filepath.Join(modules, lib.Package, "package.json"), func(tmp string) error {
		var doc map[string]any
		if err := json.Unmarshal(manifest, &doc); err != nil {
			return fmt.Errorf("%s/package.json: %w", nodeClients, err)
		}
		deps, _ := doc["dependencies"].(map[string]any)
		if _, ok := deps[lib.Package]; !ok {
			return fmt.Errorf("%s/package.json has no dependency %s", nodeClients, lib.Package)
		}
		deps[lib.Package] = version
		out, err := json.MarshalIndent(doc, "", "  ")
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, "package.json"), append(out, '\n'), 0o644)
		}
		if err == nil && lockfile != nil {
			err = os.WriteFile(filepath.Join(tmp, "package-lock.json"), lockfile, 0o644)
		}
		if err != nil {
			return err
		}
		out, err = npmInstall(ctx, tmp)
		if conflict := peerConflict(out); err != nil && conflict != "" {
			// An older release whose peer range excludes the clients' pinned ioredis: run it
			// with theirs all the same (what it is handed is an ioredis client), and say so.
			out, err = npmInstall(ctx, tmp, "--legacy-peer-deps")
			if err == nil {
				err = os.WriteFile(filepath.Join(tmp, peerNote), []byte(conflict+"\n"), 0o644)
			}
		}
		if err != nil {
			return fmt.Errorf("npm install %s@%s (does the npm registry serve it?): %s", lib.Package, version, firstLines(out, 6, err))
		}
		got, err := installedVersion(filepath.Join(tmp, "node_modules", lib.Package))
		if err != nil || got != version {
			return fmt.Errorf("npm installed %s %q, want %s (%v)", lib.Package, got, version, err)
		}
		return nil
	}, final)
	if err != nil {
		return "", fmt.Errorf("install %s@%s: %w", lib.Impl, version, err)
	}
	return modules, nil
}

// peerNote is the file of an npm release that records the peer dependency it was
// installed against in spite of its declared range (Release.Note).
const peerNote = "peer-conflict.txt"

// npmInstall runs npm install in dir.
func npmInstall(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "npm", append([]string{"install", "--no-audit", "--no-fund", "--no-update-notifier"}, args...)...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// peerConflict is the peer dependency npm could not resolve (ERESOLVE's "Could not
// resolve dependency:" line), "" for any other failure.
func peerConflict(out []byte) string {
	_, rest, ok := strings.Cut(string(out), "Could not resolve dependency:")
	if !ok {
		return ""
	}
	for _, line := range strings.Split(rest, "\n") {
		if line = strings.TrimSpace(strings.TrimPrefix(line, "npm error")); line != "" {
			return line
		}
	}
	return ""
}

// once makes final by build (into a temporary folder of dir, renamed to final) unless
// done, a file of final, exists; under an flock on dir/.lock, so that processes that
// want the same release at once build it once. Older builds in dir (other stamps) are
// removed after.
func (c Cache) once(ctx context.Context, dir, done string, build func(tmp string) error, final string) error {
	if isFile(done) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if isFile(done) {
		return nil // another process built it while we waited
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := build(tmp); err != nil {
		return err
	}
	_ = os.RemoveAll(final) // an interrupted build's leftovers: done was missing
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); e.IsDir() && p != final && !strings.HasPrefix(e.Name(), ".") {
			_ = os.RemoveAll(p) // a stale build; a process still running it keeps its open file
		}
	}
	return nil
}

// lockFile takes an exclusive flock on path, waiting until ctx ends.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another build of the same release (%s): %w", path, ctx.Err())
		case <-time.After(lockPollWait):
		}
	}
}

// goCmd runs go in dir with the module fetched as needed (-mod=mod), combined output.
func goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOWORK=off")
	return cmd.CombinedOutput()
}

// adapterOf names the file the compiler's output out complains about first: locklab's
// adapter of the library, as a rule.
func adapterOf(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if file, _, ok := strings.Cut(sc.Text(), ".go:"); ok && !strings.HasPrefix(file, "#") {
			return "locklab's adapter " + file + ".go"
		}
	}
	return "locklab's " + lockserve
}

// firstLines is the first n lines of out, err when out is empty.
func firstLines(out []byte, n int, err error) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return err.Error()
	}
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

// goStamp is a digest of the source tree lockserve is built from: go.mod, go.sum and
// every non-test Go file outside testdata, node_modules, bin, out and hidden folders.
func goStamp(src string) (string, error) {
	h := sha256.New()
	var files []string
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != src && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "node_modules" || name == "bin" || name == "out") {
				return filepath.SkipDir
			}
			return nil
		}
		if name == "go.mod" && path != filepath.Join(src, "go.mod") {
			return nil // another module's: not part of lockserve
		}
		if (strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) || path == filepath.Join(src, "go.mod") || path == filepath.Join(src, "go.sum") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read the source tree %s: %w", src, err)
	}
	sort.Strings(files)
	for _, f := range files {
		rel, _ := filepath.Rel(src, f)
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)[:6]), nil
}

// SourceTree is the locklab checkout: $LOCKLAB_SRC, else the first folder upward from
// the executable or the working directory whose go.mod is locklab's module.
func SourceTree() (string, error) {
	if dir := os.Getenv(EnvSrc); dir != "" {
		if !isModule(dir) {
			return "", fmt.Errorf("$%s=%s: no go.mod of %s there", EnvSrc, dir, module)
		}
		return filepath.Abs(dir)
	}
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, start := range starts {
		for dir := start; ; dir = filepath.Dir(dir) {
			if isModule(dir) {
				return dir, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", fmt.Errorf("no locklab source tree above the executable or the working directory (looked from %s): a release is built from one; run locklab from its checkout or set %s to it",
		strings.Join(starts, " and "), EnvSrc)
}

// isModule reports whether dir holds locklab's go.mod.
func isModule(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "module ")), `"`) == module
		}
	}
	return false
}

// installedVersion is the version of the npm package in dir (its package.json).
func installedVersion(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	var p struct{ Version string }
	if err := json.Unmarshal(data, &p); err != nil {
		return "", fmt.Errorf("%s/package.json: %w", dir, err)
	}
	return p.Version, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
