package browsertest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// recorder is a test that keeps what the helper says of a page instead of failing: the
// helper's own failures are what these tests look at. Fatal and FailNow do not stop
// the test; the helper returns after them.
type recorder struct {
	testing.TB
	mu      sync.Mutex
	errs    []string
	fatal   bool
	skipped string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.mu.Lock()
	r.fatal = true
	r.mu.Unlock()
}

func (r *recorder) FailNow() {
	r.mu.Lock()
	r.fatal = true
	r.mu.Unlock()
}

func (r *recorder) Skip(args ...any) {
	r.mu.Lock()
	r.skipped = fmt.Sprint(args...)
	r.mu.Unlock()
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// page writes a file into a fresh directory and returns its path.
func page(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const okPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ok</title></head>
<body><h1 id="title">Verdicts</h1><table class="verdicts"></table>
<button id="more" onclick="document.body.insertAdjacentHTML('beforeend', '<p class=more>more</p>')">more</button>
<script>
for (const v of ["ok", "illegal"]) {
  const td = document.querySelector("table.verdicts").insertRow().insertCell();
  td.className = v; td.textContent = v;
}
console.log("a log line is no error"); console.warn("nor is a warning");
</script></body></html>
`

// TestPage: a page without script errors passes, its elements are found, a click runs
// its handler, screenshots land in the artifact directory, and the browser and its
// profile are gone when the test ends.
func TestPage(t *testing.T) {
	path := page(t, "ok.html", okPage)
	var pid int
	var home, shot string
	t.Run("open", func(t *testing.T) {
		p := Open(t, path)
		pid = p.pid
		home = browserHome(t, pid)
		p.MustHave("h1#title", "table.verdicts td.illegal", "#more")
		if n := p.Count("table.verdicts td"); n != 2 {
			t.Errorf("%d cells, want 2", n)
		}
		if got := p.Text("#title"); got != "Verdicts" {
			t.Errorf("title %q", got)
		}
		if got := strings.Join(p.Texts("td"), ","); got != "ok,illegal" {
			t.Errorf("cells %q", got)
		}
		p.Click("#more")
		p.MustHave("p.more")
		shot = p.Screenshot()
		if want := filepath.Join(t.ArtifactDir(), "TestPage_open-ok.html.png"); shot != want {
			t.Errorf("screenshot at %s, want %s", shot, want)
		}
		data, err := os.ReadFile(shot)
		if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("screenshot %s is no PNG (%v)", shot, err)
		}
		if again := p.Screenshot(); !strings.HasSuffix(again, "-ok.html-2.png") {
			t.Errorf("second screenshot at %s", again)
		}
	})
	assertGone(t, pid, home)
}

// browserHome is the directory the browser process pid writes in: its profile's parent.
func browserHome(t *testing.T, pid int) string {
	t.Helper()
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		t.Fatalf("browser process %d: %v", pid, err)
	}
	for arg := range strings.SplitSeq(string(cmdline), "\x00") {
		if dir, ok := strings.CutPrefix(arg, "--user-data-dir="); ok {
			if home := filepath.Dir(dir); strings.HasPrefix(filepath.Base(home), TempPrefix) {
				return home
			}
			t.Fatalf("profile %s is not in a %s* directory", dir, TempPrefix)
		}
	}
	t.Fatalf("browser process %d has no --user-data-dir: %q", pid, cmdline)
	return ""
}

// assertGone fails when the browser process, or any process using its directory, still
// runs, or its directory is still there.
func assertGone(t *testing.T, pid int, home string) {
	t.Helper()
	if pid == 0 || home == "" {
		t.Fatal("no browser was started")
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		cmdline, err := os.ReadFile(f)
		if err != nil || len(cmdline) == 0 { // gone, or a zombie: not running
			continue
		}
		if f == filepath.Join("/proc", strconv.Itoa(pid), "cmdline") || bytes.Contains(cmdline, []byte(home)) {
			t.Errorf("a browser process survived its test: %s: %q", f, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the browser's directory %s survived its test (%v)", home, err)
	}
}

// TestSVG: an SVG file loads as a document of its own, and selectors work on it.
func TestSVG(t *testing.T) {
	path := page(t, "timeline.svg", `<svg xmlns="http://www.w3.org/2000/svg" id="timeline" width="300" height="80">
<style>.lane rect { fill: #42d1f5; }</style>
<g class="lane" data-client="0"><rect x="10" y="10" width="100" height="20"/><text x="12" y="25">client 0</text></g>
<g class="lane" data-client="1"><rect x="60" y="40" width="100" height="20"/><text x="62" y="55">client 1</text></g>
</svg>
`)
	p := Open(t, path)
	p.MustHave("svg#timeline", "svg#timeline g.lane", `g.lane[data-client="1"] text`)
	if n := p.Count("svg#timeline g.lane"); n != 2 {
		t.Errorf("%d lanes, want 2", n)
	}
	if got := p.Text(`g.lane[data-client="1"] text`); got != "client 1" {
		t.Errorf("lane label %q", got)
	}
}

// TestScriptErrorsFail: each kind of script error fails the test, saying what and where.
func TestScriptErrorsFail(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       []string
	}{
		{"exception", `<script>const x = null; x.lanes.length;</script>`,
			[]string{"uncaught exception", "TypeError", "page.html:1:"}},
		{"after load", `<script>addEventListener("load", () => setTimeout(() => { throw new Error("late") }, 0));</script>`,
			[]string{"uncaught exception", "Error: late"}},
		{"rejection", `<script>Promise.reject(new Error("nobody waits"));</script>`,
			[]string{"uncaught exception", "nobody waits"}},
		{"console", `<script>console.error("drawing failed:", 3); console.assert(1 === 2, "lanes");</script>`,
			[]string{"console.error: drawing failed: 3", "page.html:1:", "console.assert: lanes"}},
		{"missing files", `<img src="lanes.png"><script src="missing.js"></script>`,
			[]string{"browser log (network)", "ERR_FILE_NOT_FOUND", "lanes.png", "missing.js"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			path := page(t, "page.html", `<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>`+tt.body+`</body></html>`)
			if p := Open(r, path); p == nil {
				t.Fatalf("Open gave up: %q", r.errors())
			}
			errs := r.errors()
			if len(errs) == 0 {
				t.Fatal("the page's script error did not fail the test")
			}
			all := strings.Join(errs, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("failure lacks %q:\n%s", w, all)
				}
			}
			if r.fatal {
				t.Errorf("a script error stopped the test, which should go on to its checks:\n%s", all)
			}
		})
	}
}

// TestMustHaveNamesEachMissingSelector: every missing element and bad selector is named,
// then the test stops.
func TestMustHaveNamesEachMissingSelector(t *testing.T) {
	r := &recorder{TB: t}
	p := Open(r, page(t, "ok.html", okPage))
	if p == nil {
		t.Fatalf("Open gave up: %q", r.errors())
	}
	p.MustHave("h1#title", "svg#timeline", "table.verdicts td.ok", "g.lane", "td[")
	errs := r.errors()
	want := []string{
		`browsertest: ok.html has no element "svg#timeline"`,
		`browsertest: ok.html has no element "g.lane"`,
		`browsertest: ok.html: selector "td[": invalid: `,
	}
	if len(errs) != len(want) {
		t.Fatalf("failures %q, want %d", errs, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i], w) {
			t.Errorf("failure %d = %q, want %q…", i, errs[i], w)
		}
	}
	if !r.fatal {
		t.Error("MustHave did not stop the test")
	}
}

func TestFind(t *testing.T) {
	onPath := func(have ...string) func(string) (string, error) {
		return func(name string) (string, error) {
			for _, h := range have {
				if filepath.Base(h) == filepath.Base(name) {
					return h, nil
				}
			}
			return "", errors.New("not found")
		}
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tt := range []struct {
		name    string
		getenv  func(string) string
		path    func(string) (string, error)
		want    string
		missing bool // a noBrowser error
		err     string
	}{
		{"chromium", env(), onPath("/usr/bin/chromium", "/usr/bin/chromium-browser"), "/usr/bin/chromium", false, ""},
		{"chromium-browser", env(), onPath("/usr/bin/chromium-browser"), "/usr/bin/chromium-browser", false, ""},
		{"override", env(EnvChromium, "/opt/c/chrome"), onPath("/usr/bin/chromium", "/opt/c/chrome"), "/opt/c/chrome", false, ""},
		{"broken override", env(EnvChromium, "/opt/c/chrome"), onPath("/usr/bin/chromium"), "", false, "LOCKLAB_CHROMIUM=/opt/c/chrome: not found"},
		{"none", env(), onPath(), "", true, "no chromium or chromium-browser on PATH"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := find(tt.getenv, tt.path)
			var nb noBrowser
			switch {
			case tt.err == "" && (err != nil || got != tt.want):
				t.Errorf("find = %q, %v; want %q", got, err, tt.want)
			case tt.err != "" && (err == nil || err.Error() != tt.err || errors.As(err, &nb) != tt.missing):
				t.Errorf("find error %v (no browser: %v); want %q (no browser: %v)", err, errors.As(err, &nb), tt.err, tt.missing)
			}
		})
	}
	for _, tt := range []struct {
		env  []string
		want bool
	}{
		{nil, false}, {[]string{"CI", "true"}, true}, {[]string{"CI", "false"}, false}, {[]string{"CI", "0"}, false},
		{[]string{EnvRequire, "1"}, true}, {[]string{EnvRequire, "0"}, false},
	} {
		if got := required(env(tt.env...)); got != tt.want {
			t.Errorf("required with %q = %v, want %v", tt.env, got, tt.want)
		}
	}
}

// TestMissingBrowser: without a browser a test skips, or fails where the browser is
// required; either way the message names the package to install.
func TestMissingBrowser(t *testing.T) {
	for _, req := range []bool{false, true} {
		r := &recorder{TB: t}
		missing(r, noBrowser{[]string{"chromium", "chromium-browser"}}, req)
		msg := r.skipped + strings.Join(r.errors(), "")
		if !strings.Contains(msg, "Debian's package chromium") || !strings.Contains(msg, "apt-get install -y chromium") {
			t.Errorf("message %q does not say what to install", msg)
		}
		if skipped, failed := r.skipped != "", r.fatal; skipped == req || failed != req {
			t.Errorf("required %v: skipped %v, failed %v", req, skipped, failed)
		}
	}
}
