package matrix_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
)

// TestMatrix runs a small matrix on real Redis: the textbook lock and its fenced variant,
// on the fault-free baseline and Kleppmann's pause, with fencing off and full.
func TestMatrix(t *testing.T) {
	var (
		mu     sync.Mutex
		events []matrix.Event
		out    string
		res    matrix.Result
		err    error
	)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// The files are checked against the result, so a matrix with a cell a loaded machine
	// perturbed is run again whole (settle's cell-by-cell re-runs would write elsewhere).
	for try := 0; ; try++ {
		out, events = t.TempDir(), nil
		res, err = matrix.Run(ctx, matrix.Options{
			Impls: []string{"setnx", "fenced"}, Scenarios: []string{"baseline", "pause-past-ttl"}, Fencings: []string{"off", "full"},
			Repeat: 1, Parallel: 3, Out: out, Command: "locklab matrix --test",
			Progress: func(e matrix.Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
		})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(res.Cells, allPerturbed)
		if i < 0 {
			break
		}
		c := res.Cells[i]
		if try == settleTries {
			t.Fatalf("%s × %s × %s: every run perturbed in %d matrices (%s): the machine is too loaded to decide it", c.Scenario, c.Impl, c.Fencing, try+1, c.Runs[0].Perturbed)
		}
		t.Logf("%s × %s × %s: every run perturbed (%s); running the matrix again", c.Scenario, c.Impl, c.Fencing, c.Runs[0].Perturbed)
	}
	if !res.Meta.Complete || res.Meta.Runs != 6 || res.Meta.Planned != 6 || res.Meta.Errors != 0 || len(events) != 6 {
		t.Fatalf("meta %+v, %d progress events; want 6 runs, complete, no error", res.Meta, len(events))
	}
	if _, err := time.Parse(time.RFC3339, res.Meta.Date); err != nil || !strings.HasSuffix(res.Meta.Date, "Z") {
		t.Errorf("date %q: want RFC 3339 in UTC (%v)", res.Meta.Date, err)
	}
	if res.Meta.RedisVersion == "" || strings.HasPrefix(res.Meta.RedisVersion, "unknown") || res.Meta.GoVersion == "" {
		t.Errorf("versions: redis %q, go %q", res.Meta.RedisVersion, res.Meta.GoVersion)
	}

	verdict := func(scenario, impl, fencing string, p lin.Property) matrix.VerdictCounts {
		t.Helper()
		c, ok := res.Cell(scenario, impl, fencing)
		if !ok {
			t.Fatalf("no cell %s × %s × %s", scenario, impl, fencing)
		}
		return c.Counts[p]
	}
	summary := func(scenario, impl, fencing string) string {
		c, _ := res.Cell(scenario, impl, fencing)
		return c.Summary()
	}
	// Without fencing the pause breaks both the beliefs and the data.
	if p1, p2 := verdict("pause-past-ttl", "setnx", "off", lin.P1), verdict("pause-past-ttl", "setnx", "off", lin.P2); p1.Illegal != 1 || p2.Illegal != 1 {
		t.Errorf("setnx × pause-past-ttl × off: P1 %+v, P2 %+v; want both illegal in 1 of 1", p1, p2)
	}
	if got := summary("pause-past-ttl", "setnx", "off"); got != "P1 1/1 · P2 1/1" {
		t.Errorf("setnx × pause-past-ttl × off shows %q", got)
	}
	// Fencing saves the data, not the beliefs.
	if p1, p2 := verdict("pause-past-ttl", "fenced", "full", lin.P1), verdict("pause-past-ttl", "fenced", "full", lin.P2); p1.Illegal != 1 || p2.OK != 1 {
		t.Errorf("fenced × pause-past-ttl × full: P1 %+v, P2 %+v; want P1 illegal, P2 ok", p1, p2)
	}
	for _, c := range []struct{ impl, fencing string }{{"setnx", "off"}, {"fenced", "off"}, {"fenced", "full"}} {
		if got := summary("baseline", c.impl, c.fencing); got != "✓" {
			t.Errorf("baseline × %s × %s shows %q, want ✓", c.impl, c.fencing, got)
		}
	}
	for _, s := range []string{"baseline", "pause-past-ttl"} {
		if c, _ := res.Cell(s, "setnx", "full"); c.Status != matrix.CellNoFencing || c.Summary() != "none" || len(c.Runs) != 0 {
			t.Errorf("setnx × %s × full: %+v, want none and not run", s, c)
		}
	}
	if res.Impls[0].FenceSource != matrix.FenceSourceNone || res.Impls[1].FenceSource != matrix.FenceSourceLock {
		t.Errorf("fence sources %+v", res.Impls)
	}

	// matrix.json holds exactly the result.
	loaded, err := matrix.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	// Compared as JSON: a cell whose runs were all perturbed has no counts, nil in
	// memory, and an empty map once read back, which say the same.
	a, _ := json.Marshal(loaded)
	b, _ := json.Marshal(res)
	if string(a) != string(b) {
		t.Errorf("matrix.json does not round-trip:\n%s\n%s", a, b)
	}

	if err := report.WriteMatrix(out, res); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, matrix.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`locklab matrix --test`", res.Meta.Date, "**Fencing off**", "**Fencing full**", "| *fence source* | none | lock |",
		"| pause-past-ttl | [P1 1/1 · P2 1/1](runs/pause-past-ttl/setnx/off/0/history.html) |", "| baseline | none |"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("matrix.md lacks %q:\n%s", want, md)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, matrix.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	mdLinks := assertLinks(t, out, md, `\]\(([^)]+)\)`)
	htmlLinks := assertLinks(t, out, page, `href="([^"]+)"`)
	if mdLinks != 6 || htmlLinks != 6 {
		t.Errorf("%d distinct links in matrix.md, %d in matrix.html; want one per run, 6", mdLinks, htmlLinks)
	}
	for _, f := range []string{runner.PlanFile, runner.ResultFile, runner.HTMLFile} {
		if _, err := os.Stat(filepath.Join(out, matrix.RunsDir, "pause-past-ttl", "fenced", "full", "0", f)); err != nil {
			t.Errorf("run directory: %v", err)
		}
	}
}

// assertLinks checks that every link the pattern finds in doc leads to a file under dir,
// and returns how many distinct links there are.
func assertLinks(t *testing.T, dir string, doc []byte, pattern string) int {
	t.Helper()
	distinct := map[string]bool{}
	for _, l := range regexp.MustCompile(pattern).FindAllSubmatch(doc, -1) {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(string(l[1])))); err != nil {
			t.Errorf("broken link %s: %v", l[1], err)
		}
		distinct[string(l[1])] = true
	}
	return len(distinct)
}

// TestMatrixInterrupted: cancelling stops the matrix after the run under way; what
// finished is written, marked incomplete, and the runs not made show as such.
func TestMatrixInterrupted(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := matrix.Run(ctx, matrix.Options{
		Impls: []string{"setnx"}, Scenarios: []string{"baseline", "pause-past-ttl"}, Fencings: []string{"off"}, Repeat: 1, Out: out,
		Progress: func(matrix.Event) { cancel() }, // after the first run
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if res.Meta.Complete || res.Meta.Runs != 1 || res.Meta.Planned != 2 {
		t.Fatalf("meta %+v: want 1 of 2 runs, incomplete", res.Meta)
	}
	if c, _ := res.Cell("pause-past-ttl", "setnx", "off"); c.Summary() != "…" || c.Errors != 0 {
		t.Errorf("the run not made shows %q with %d errors", c.Summary(), c.Errors)
	}
	loaded, err := matrix.Load(out)
	if err != nil || loaded.Meta.Complete {
		t.Fatalf("written matrix: complete %v, err %v", loaded.Meta.Complete, err)
	}
	if err := report.WriteMatrix(out, loaded); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, matrix.MarkdownFile))
	if !bytes.Contains(md, []byte("**Incomplete:** interrupted after 1 of 2 runs")) {
		t.Errorf("matrix.md does not say it is incomplete:\n%s", md)
	}
}
