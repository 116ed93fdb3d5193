package faketime

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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

// Setup is what a server needs to run under libfaketime: the redis-server built without
// jemalloc (Server) and the libfaketime to preload (Lib).
type Setup struct{ Server, Lib string }

// Find finds the libc redis-server (same version as ordinary) and libfaketime.
func Find(ordinary string) (Setup, error) {
	server, err := FindFaketimeServer(ordinary)
	if err != nil {
		return Setup{}, err
	}
	lib, err := FindLibfaketime()
	if err != nil {
		return Setup{}, err
	}
	return Setup{Server: server, Lib: lib}, nil
}

// Environ is the environment of a server under s: the process environment without any
// inherited libfaketime setting, plus libfaketime preloaded and reading its clock from
// clockFile (a Clock's Path). Only the wall clock is faked (DONT_FAKE_MONOTONIC).
func (s Setup) Environ(clockFile string) []string {
	return Preload(os.Environ(), s.Lib, clockFile)
}

// Preload is env without any inherited libfaketime setting, plus lib (libfaketime)
// preloaded and reading the wall clock from clockFile (a Clock's Path): the environment
// of any process whose clock a Clock moves (a server, a lock client that reads the time
// through libc). Only the wall clock is faked (DONT_FAKE_MONOTONIC).
func Preload(env []string, lib, clockFile string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name != "LD_PRELOAD" && !strings.HasPrefix(name, "FAKETIME") && name != "DONT_FAKE_MONOTONIC" {
			out = append(out, kv)
		}
	}
	return append(out,
		"LD_PRELOAD="+lib,
		"FAKETIME_TIMESTAMP_FILE="+clockFile,
		// Read the file at every clock reading: with libfaketime's default cache a change
		// would take up to 10 s to be seen. The file is tiny and in the page cache.
		"FAKETIME_NO_CACHE=1",
		"DONT_FAKE_MONOTONIC=1",
	)
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
