package releases

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/locklab/locklab/lockimpl/subprocess"
)

// debianRedisPy is the redis-py of Debian's python3-redis that locklab's redis-py client
// was written against: the version served when the installed one cannot be read.
const debianRedisPy = "4.3.4"

// Versions are the versions of impl's library that its registry serves, oldest first.
// The Go module proxy lists only the versions it has been asked for: one it does not
// list may still be served (Prepare says). Debian's redis-py serves its installed one.
func Versions(ctx context.Context, impl string) ([]string, error) {
	lib, err := Of(impl)
	if err != nil {
		return nil, err
	}
	switch lib.Ecosystem {
	case Go:
		cmd := exec.CommandContext(ctx, "go", "list", "-m", "-versions", lib.Package)
		cmd.Dir = os.TempDir() // outside any module: the proxy's list, not a go.mod's
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GO111MODULE=on")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("go list -m -versions %s: %s", lib.Package, firstLines(out, 4, err))
		}
		return strings.Fields(string(out))[1:], nil
	case NPM:
		out, err := exec.CommandContext(ctx, "npm", "view", lib.Package, "versions", "--json").Output()
		if err != nil {
			return nil, fmt.Errorf("npm view %s versions: %w", lib.Package, err)
		}
		var vs []string
		if err := json.Unmarshal(out, &vs); err != nil {
			var one string // npm prints a single version as a string
			if json.Unmarshal(out, &one) != nil {
				return nil, fmt.Errorf("npm view %s versions: %q: %w", lib.Package, out, err)
			}
			vs = []string{one}
		}
		return vs, nil
	default:
		return []string{debianVersion(ctx)}, nil
	}
}

// Pinned is the version of impl's library that locklab runs under impl's plain name:
// the source tree's go.mod or Node.js clients' package.json, Debian's installed one.
func Pinned(ctx context.Context, impl string) (string, error) {
	lib, err := Of(impl)
	if err != nil {
		return "", err
	}
	if lib.Ecosystem == Debian {
		return debianVersion(ctx), nil
	}
	src, err := SourceTree()
	if err != nil {
		return "", err
	}
	if lib.Ecosystem == NPM {
		data, err := os.ReadFile(filepath.Join(src, nodeClients, "package.json"))
		if err != nil {
			return "", err
		}
		var p struct{ Dependencies map[string]string }
		if err := json.Unmarshal(data, &p); err != nil || p.Dependencies[lib.Package] == "" {
			return "", fmt.Errorf("%s/package.json: no dependency %s (%v)", nodeClients, lib.Package, err)
		}
		return p.Dependencies[lib.Package], nil
	}
	f, err := os.Open(filepath.Join(src, "go.mod"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require ")); len(fields) >= 2 && fields[0] == lib.Package {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("%s/go.mod requires no %s", src, lib.Package)
}

// debianVersion is the installed redis-py's version (redis.__version__ of the Python
// the redis-py client runs), debianRedisPy when it cannot be read.
func debianVersion(ctx context.Context) string {
	python := os.Getenv(subprocess.EnvPython)
	if python == "" {
		python = "/usr/bin/python3"
	}
	out, err := exec.CommandContext(ctx, python, "-c", "import redis; print(redis.__version__)").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return debianRedisPy
}

// checkDebian accepts the installed version of a Debian package only: no registry
// serves another.
func checkDebian(ctx context.Context, lib Library, version string) error {
	if have := debianVersion(ctx); version != have {
		return fmt.Errorf("%s@%s: redis-py comes from Debian's %s, which installs %s only; no PyPI is reachable to install another (use %s@%s, or %s)",
			lib.Impl, version, lib.Package, have, lib.Impl, have, lib.Impl)
	}
	return nil
}

// List is `locklab list --versions IMPL` (the versions served, and the pinned one) and
// `locklab list --prepare NAME@VERSION,...` (each built or installed into the cache, and
// where), written to w; its errors name the flag.
func List(ctx context.Context, w io.Writer, versions string, prepare []string) error {
	if versions != "" {
		lib, err := Of(versions)
		if err == nil {
			var vs []string
			if vs, err = Versions(ctx, versions); err == nil {
				pinned, perr := Pinned(ctx, versions)
				if perr != nil {
					pinned = "unknown: " + perr.Error()
				}
				fmt.Fprintf(w, "%s runs %s %s (pinned: %s)\n%s\n", versions, lib.Ecosystem, lib.Package, pinned, strings.Join(vs, " "))
				if lib.Ecosystem == Go {
					fmt.Fprintf(w, "(the Go module proxy lists only the versions it was asked for: one missing here may still be served; locklab list --prepare %s@VERSION tells)\n", versions)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("flag --versions %q: %w", versions, err)
		}
	}
	cache, err := DefaultCache()
	for _, name := range prepare {
		var r Release
		if err == nil {
			r, err = cache.Prepare(ctx, name)
		}
		if err != nil {
			return fmt.Errorf("flag --prepare %q: %w", name, err)
		}
		fmt.Fprintf(w, "%s\t%s %s %s\t%s\n", name, r.Ecosystem, r.Package, r.Version, cmpOr(r.Path, "installed by Debian"))
		if r.Note != "" {
			fmt.Fprintf(w, "\t(%s)\n", r.Note)
		}
	}
	return nil
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}
