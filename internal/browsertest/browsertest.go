// Package browsertest loads the pages locklab writes (HTML and SVG files) in a real
// browser for tests: Debian's Chromium, headless, driven over the DevTools protocol by
// chromedp. A page fails its test on any script error (an uncaught exception, a
// console.error or console.assert, a browser log entry of level error such as a resource
// that failed to load) and on a missing element; every page leaves a full-page
// screenshot in its test's artifact directory (t.ArtifactDir: kept under
// -outputdir with go test -artifacts, as make test does). It imports nothing of
// locklab's.
//
// Use it from a test:
//
//	p := browsertest.Open(t, path) // loads file://path, waits for it; fails on script errors
//	p.MustHave("svg#timeline", "svg#timeline g.lane")
//
// Without Chromium the test is skipped, or fails when CI or LOCKLAB_REQUIRE_BROWSER is
// set. LOCKLAB_CHROMIUM names the binary to use instead of chromium on PATH.
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const (
	// EnvChromium names the browser binary to use (else chromium, then chromium-browser
	// on PATH).
	EnvChromium = "LOCKLAB_CHROMIUM"
	// EnvRequire, set to 1, makes a missing browser fail the test rather than skip it,
	// as CI (any value of CI but "false" or "0") does.
	EnvRequire = "LOCKLAB_REQUIRE_BROWSER"
	// Package is Debian's package of the browser.
	Package = "chromium"
	// TempPrefix begins the name of the directory each browser writes in (under
	// os.TempDir), which every one of its processes has in its command line.
	TempPrefix = "locklab-chromium-"
)

const (
	// startTimeout bounds the browser's start; stepTimeout each step on the page
	// (loading it, a query, a screenshot); stopTimeout its orderly stop, after which
	// the process is killed.
	startTimeout = time.Minute
	stepTimeout  = 30 * time.Second
	stopTimeout  = 10 * time.Second
)

// Page is one file loaded in its own headless browser, stopped when the test ends.
type Page struct {
	t         testing.TB
	file      string // absolute path
	name      string // base name, for messages
	artifacts string // the test's artifact directory
	ctx       context.Context
	pid       int

	mu       sync.Mutex
	problems []string // script errors, as the browser reported them
	reported int      // how many of problems the test was told of
	shots    int      // screenshots taken
}

// Open starts a headless browser, loads file (an HTML or SVG file) and waits until it
// has loaded and drawn its first frames. Script errors so far fail the test (it goes
// on); more are reported when the test ends. The browser is stopped when the test ends,
// after a full-page screenshot unless the test took one. Without a browser the test is
// skipped, or fails in CI (see EnvRequire).
func Open(t testing.TB, file string) *Page {
	t.Helper()
	exe, err := find(os.Getenv, exec.LookPath)
	if err != nil {
		var nb noBrowser
		if !errors.As(err, &nb) {
			t.Fatalf("browsertest: %v", err)
			return nil
		}
		missing(t, err, required(os.Getenv))
		return nil
	}
	abs, err := filepath.Abs(file)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		t.Fatalf("browsertest: page to load: %v", err)
		return nil
	}
	p := &Page{t: t, file: abs, name: filepath.Base(abs), artifacts: t.ArtifactDir()}

	// Everything the browser writes goes into one fresh directory (profile, config, crash
	// reports, caches), whose name is in the command line of each of its processes:
	// that is how its leftovers are found, and how .ci/run finds survivors.
	home, err := os.MkdirTemp("", TempPrefix)
	if err != nil {
		t.Fatalf("browsertest: browser directory: %v", err)
		return nil
	}
	// The browser lives as long as root: not t.Context(), which ends before the
	// clean-ups that take the last screenshot.
	root, kill := context.WithCancel(context.Background())
	allocCtx, allocCancel := chromedp.NewExecAllocator(root, allocatorOptions(exe, home)...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(p.listen))
	p.ctx = ctx
	started := false
	t.Cleanup(func() {
		if started {
			p.finish()
		}
		sctx, scancel := context.WithTimeout(ctx, stopTimeout)
		err := chromedp.Cancel(sctx) // closes the browser, waits for it
		scancel()
		cancel()
		allocCancel() // kills the browser if it is still there, waits for it
		kill()
		if started && err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("browsertest: stop %s: %v", exe, err)
		}
		if err := removeHome(home); err != nil {
			t.Errorf("browsertest: %v", err)
		}
	})

	timer := time.AfterFunc(startTimeout, kill)
	_, err = chromedp.Run(ctx, chromedp.Steps())
	if !timer.Stop() {
		err = fmt.Errorf("no answer within %s (%v)", startTimeout, err)
	}
	if err != nil {
		t.Fatalf("browsertest: start %s: %v", exe, err)
		return nil
	}
	started = true
	if c := chromedp.FromContext(ctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		p.pid = c.Browser.Process().Pid
	}

	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	if err := p.do(chromedp.Navigate(u)); err != nil {
		t.Fatalf("browsertest: load %s: %v", u, err)
		return nil
	}
	if err := p.do(settle()); err != nil {
		t.Fatalf("browsertest: wait for %s to draw: %v", p.name, err)
		return nil
	}
	p.report()
	return p
}

// allocatorOptions are chromedp's defaults (headless, no first run, no background
// networking, sync, default apps, breakpad, …) and what keeps the browser off the
// network altogether: no component updates, no pings, no name resolution, and every
// request through a proxy on a closed loopback port. Pages are file:// URLs and must
// not need the network.
func allocatorOptions(exe, home string) []chromedp.ExecAllocatorOption {
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(filepath.Join(home, "profile")),
		// Debian's Chromium keeps its crash reports under XDG_CONFIG_HOME, its caches under
		// XDG_CACHE_HOME, its certificate store under HOME.
		chromedp.Env("HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_CACHE_HOME="+filepath.Join(home, "cache")),
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("proxy-server", "127.0.0.1:9"),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium's sandbox refuses root
	}
	return opts
}

// do runs one step on the page, bounded by stepTimeout.
func (p *Page) do(a chromedp.Action[chromedp.Void]) error {
	_, err := run(p, a)
	return err
}

func run[T any](p *Page, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// MustHave fails the test, naming each one, when a CSS selector matches no element of
// the page (document.querySelector: in an SVG document too), or is not a selector; the
// test stops after naming them all.
func (p *Page) MustHave(selectors ...string) {
	p.t.Helper()
	list, err := json.Marshal(selectors)
	if err != nil {
		p.t.Fatalf("browsertest: selectors %q: %v", selectors, err)
	}
	got, err := run(p, chromedp.Evaluate[[]string](`(`+string(list)+`).map(s => {
		try { return document.querySelector(s) ? "" : "missing"; } catch (e) { return "invalid: " + e.message; }
	})`))
	if err != nil {
		p.t.Fatalf("browsertest: query %s: %v", p.name, err)
	}
	failed := false
	for i, r := range got {
		switch {
		case r == "missing":
			p.t.Errorf("browsertest: %s has no element %q", p.name, selectors[i])
			failed = true
		case r != "":
			p.t.Errorf("browsertest: %s: selector %q: %s", p.name, selectors[i], r)
			failed = true
		}
	}
	p.report()
	if failed {
		p.t.FailNow()
	}
}

// Count is the number of elements of the page that match the CSS selector.
func (p *Page) Count(selector string) int {
	p.t.Helper()
	sel, _ := json.Marshal(selector) // a string always encodes
	n, err := run(p, chromedp.Evaluate[int](`document.querySelectorAll(`+string(sel)+`).length`))
	if err != nil {
		p.t.Fatalf("browsertest: count %q in %s: %v", selector, p.name, err)
	}
	return n
}

// Text is the text content of the first element that matches the CSS selector; the test
// fails when there is none.
func (p *Page) Text(selector string) string {
	p.t.Helper()
	texts := p.Texts(selector)
	if len(texts) == 0 {
		p.t.Fatalf("browsertest: %s has no element %q", p.name, selector)
		return ""
	}
	return texts[0]
}

// Texts are the text contents of the elements that match the CSS selector, in document
// order.
func (p *Page) Texts(selector string) []string {
	p.t.Helper()
	sel, _ := json.Marshal(selector)
	texts, err := run(p, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(`+string(sel)+`), e => e.textContent)`))
	if err != nil {
		p.t.Fatalf("browsertest: text of %q in %s: %v", selector, p.name, err)
	}
	return texts
}

// Click clicks the middle of the first element that matches the CSS selector with the
// mouse, as a person would (the page sees the mouse move there, then the click), and
// waits for the page to draw what follows; script errors fail the test.
func (p *Page) Click(selector string) {
	p.t.Helper()
	p.MustHave(selector)
	if err := p.do(chromedp.Click(chromedp.CSS(selector))); err != nil {
		p.t.Fatalf("browsertest: click %q in %s: %v", selector, p.name, err)
	}
	if err := p.do(settle()); err != nil {
		p.t.Fatalf("browsertest: wait for %s to draw: %v", p.name, err)
	}
	p.report()
}

// settle waits two animation frames and a task: what the page draws on load or after an
// event, and just after.
func settle() chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](
		`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))))`,
		chromedp.EvalAwaitPromise)
}

// Screenshot writes a PNG of the whole page (beyond the window) into the test's
// artifact directory, logs its path and returns it. The file is named after the test
// and the page (TestX-history.html.png), numbered from the second one on.
func (p *Page) Screenshot() string {
	p.t.Helper()
	path, err := p.screenshot()
	if err != nil {
		p.t.Errorf("browsertest: %v", err)
		return ""
	}
	p.t.Logf("browsertest: screenshot of %s: %s", p.name, path)
	return path
}

func (p *Page) screenshot() (string, error) {
	png, err := run(p, chromedp.FullScreenshot(100))
	if err != nil {
		return "", fmt.Errorf("screenshot of %s: %w", p.name, err)
	}
	p.mu.Lock()
	p.shots++
	n := p.shots
	p.mu.Unlock()
	name := fileName(p.t.Name()) + "-" + p.name
	if n > 1 {
		name += fmt.Sprintf("-%d", n)
	}
	path := filepath.Join(p.artifacts, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return "", fmt.Errorf("screenshot of %s: %w", p.name, err)
	}
	return path, nil
}

// fileName is a test's name as a file name: "/" and anything but letters, digits, '.',
// '-' and '_' become '_'.
func fileName(test string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') {
			return r
		}
		return '_'
	}, test)
}

// finish is the end of the test for the page: the screenshot every page keeps (unless
// the test took one, or was skipped), and the script errors not yet reported.
func (p *Page) finish() {
	p.mu.Lock()
	shots := p.shots
	p.mu.Unlock()
	if shots == 0 {
		p.Screenshot()
	}
	p.report()
}

// report fails the test with each script error it was not told of yet.
func (p *Page) report() {
	p.t.Helper()
	p.mu.Lock()
	fresh := p.problems[p.reported:]
	p.reported = len(p.problems)
	p.mu.Unlock()
	for _, msg := range fresh {
		p.t.Errorf("browsertest: %s: %s", p.name, msg)
	}
}

// listen keeps the script errors the browser reports. It runs on chromedp's reader of
// the tab's messages, before the next message is read: an answer to a step comes after
// the events that preceded it.
func (p *Page) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "uncaught exception: " + exceptionText(ev.ExceptionDetails)
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		msg = "console." + string(ev.Type) + ": " + argsText(ev.Args) + stackPlace(ev.StackTrace)
	case *log.EventEntryAdded:
		if ev.Entry == nil || ev.Entry.Level != log.EntryLevelError {
			return
		}
		msg = fmt.Sprintf("browser log (%s): %s", ev.Entry.Source, ev.Entry.Text)
		if ev.Entry.URL != "" {
			msg += " (" + ev.Entry.URL + ")"
		}
	default:
		return
	}
	p.mu.Lock()
	p.problems = append(p.problems, msg)
	p.mu.Unlock()
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "(no details)"
	}
	s := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		desc, _, _ := strings.Cut(d.Exception.Description, "\n")
		s += " " + desc
	}
	where := d.URL
	if where == "" && d.StackTrace != nil && len(d.StackTrace.CallFrames) > 0 {
		where = d.StackTrace.CallFrames[0].URL
	}
	return fmt.Sprintf("%s at %s:%d:%d", s, where, d.LineNumber+1, d.ColumnNumber+1)
}

func argsText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		var s string
		switch {
		case a == nil:
			s = "null"
		case a.Type == runtime.RemoteObjectTypeString && json.Unmarshal(a.Value, &s) == nil:
		case a.Description != "":
			s = a.Description
		case a.UnserializableValue != "":
			s = string(a.UnserializableValue)
		default:
			s = string(a.Value)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func stackPlace(st *runtime.StackTrace) string {
	if st == nil || len(st.CallFrames) == 0 {
		return ""
	}
	f := st.CallFrames[0]
	return fmt.Sprintf(" at %s:%d:%d", f.URL, f.LineNumber+1, f.ColumnNumber+1)
}

// removeHome kills what is left of a browser that wrote in home (its main process has
// exited: crash reporters and helpers can outlive it for a moment) and removes home.
func removeHome(home string) error {
	deadline := time.Now().Add(5 * time.Second)
	for quiet := 0; quiet < 3; time.Sleep(20 * time.Millisecond) {
		if killUsing(home) == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("browser processes using %s survive SIGKILL", home)
		}
	}
	var err error
	for time.Now().Before(deadline) {
		if err = os.RemoveAll(home); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove the browser's directory: %w", err)
}

// killUsing kills (SIGKILL) the processes whose command line names dir, and says how
// many it found. Zombies have no command line: they are not running.
func killUsing(dir string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	n := 0
	for _, f := range procs {
		cmdline, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if proc, err := os.FindProcess(pid); err == nil && proc.Signal(syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// noBrowser is the error of a machine without the browser.
type noBrowser struct{ tried []string }

func (e noBrowser) Error() string {
	return fmt.Sprintf("no %s on PATH", strings.Join(e.tried, " or "))
}

// find is the browser binary: $LOCKLAB_CHROMIUM (which must work when set), else the
// first of names on PATH.
func find(getenv func(string) string, lookPath func(string) (string, error)) (string, error) {
	if exe := getenv(EnvChromium); exe != "" {
		path, err := lookPath(exe)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvChromium, exe, err)
		}
		return path, nil
	}
	names := []string{"chromium", "chromium-browser"} // in order of preference
	for _, n := range names {
		if path, err := lookPath(n); err == nil {
			return path, nil
		}
	}
	return "", noBrowser{names}
}

// required says whether a missing browser fails the test: in CI, or when asked to.
func required(getenv func(string) string) bool {
	set := func(v string) bool { return v != "" && v != "0" && !strings.EqualFold(v, "false") }
	return set(getenv("CI")) || set(getenv(EnvRequire))
}

// missing skips the test for want of a browser, or fails it when the browser is required.
func missing(t testing.TB, err error, required bool) {
	t.Helper()
	msg := fmt.Sprintf("browsertest: %v: the browser tests need Debian's package %s (apt-get install -y %s; make test installs it with scripts/install-deps.sh --browser), or %s set to a Chromium binary",
		err, Package, Package, EnvChromium)
	if required {
		t.Fatalf("%s; they must run here (CI or %s=1)", msg, EnvRequire)
		return
	}
	t.Skip(msg)
}
