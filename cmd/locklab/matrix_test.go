package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report"
)

func TestMatrixBadFlags(t *testing.T) {
	dir := t.TempDir()
	noMarkers := filepath.Join(dir, "README.md")
	if err := os.WriteFile(noMarkers, []byte("# no table here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--impl", "setnx,nope"}, `flag --impl: unknown lock implementation "nope" (known: `},
		{[]string{"--scenario", "nope"}, `flag --scenario: unknown scenario "nope" (known: baseline, `},
		{[]string{"--fencing", "off,sideways"}, `flag --fencing: unknown fencing mode "sideways"`},
		{[]string{"--repeat", "0"}, "flag --repeat: want at least 1 run per cell, got 0"},
		{[]string{"--parallel", "-2"}, "flag --parallel: want at least 1 run at a time, got -2"},
		{[]string{"--nodes", "0"}, "flag --nodes: want at least 1 node, got 0"},
		{[]string{"--out", ""}, "flag --out:"},
		// Checked before any run: a matrix of hours must not fail at its last step.
		{[]string{"--readme", noMarkers}, "flag --readme: " + noMarkers + ": no markers"},
		{[]string{"--readme", filepath.Join(dir, "missing.md")}, "flag --readme: open " + filepath.Join(dir, "missing.md")},
	} {
		// A flag error that slipped through would run only this one small cell.
		args := append([]string{"matrix"}, c.args...)
		for _, d := range [][2]string{{"--out", out}, {"--impl", "setnx"}, {"--scenario", "baseline"}, {"--fencing", "off"}} {
			if !slices.Contains(c.args, d[0]) {
				args = append(args, d[0], d[1])
			}
		}
		code, _, stderr := locklab(t, args...)
		if code != exitError || !strings.Contains(stderr, c.want) {
			t.Errorf("locklab %s: exit %d, stderr %q; want exit %d and %q", strings.Join(args, " "), code, stderr, exitError, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused matrix wrote its directory")
	}
}

// TestMatrixUpdatesReadme runs a one-cell matrix into a directory beside the README's and
// checks that the README's table links resolve from the README's directory.
func TestMatrixUpdatesReadme(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "docs", "README.md")
	out := filepath.Join(dir, "out", "m")
	if err := os.MkdirAll(filepath.Dir(readme), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readme, []byte("# Doc\n\n<!-- matrix:begin -->\n<!-- matrix:end -->\n\nEnd.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := locklab(t, "matrix", "--impl", "setnx", "--scenario", "baseline", "--fencing", "off", "--out", out, "--readme", readme)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "[1/1] baseline × setnx × fencing off, run 1/1: ✓") {
		t.Errorf("progress on stderr: %q", stderr)
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	if !strings.HasPrefix(text, "# Doc\n\n<!-- matrix:begin -->\n") || !strings.HasSuffix(text, "<!-- matrix:end -->\n\nEnd.\n") {
		t.Errorf("text outside the markers changed:\n%s", text)
	}
	for _, want := range []string{"Produced by `locklab matrix --fencing off --impl setnx --out " + out, "| baseline | ✓ |", "matrix.html in the matrix's output directory links every run"} {
		if !strings.Contains(text, want) {
			t.Errorf("README lacks %q:\n%s", want, text)
		}
	}
	// The matrix's own page links the run's picture and Porcupine page.
	page, err := os.ReadFile(filepath.Join(out, report.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, href := range []string{"runs/baseline/setnx/off/0/timeline.svg", "runs/baseline/setnx/off/0/history.html"} {
		if !strings.Contains(string(page), `href="`+href+`"`) {
			t.Errorf("index.html does not link %s:\n%s", href, page)
		}
	}
	// Nothing in the document links to the runs, which are not part of it.
	if l := regexp.MustCompile(`\]\(([^)]+)\)`).FindString(text); l != "" {
		t.Errorf("the table links outside the document: %s\n%s", l, text)
	}
}

// TestMatrixThatDecidesTooLittleIsInconclusive: one run of one cell cannot decide more
// (run, property) pairs than there are properties; asked for one more, the matrix is
// written, exits 3 and leaves the README alone.
func TestMatrixThatDecidesTooLittleIsInconclusive(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	before := "# Doc\n\n<!-- matrix:begin -->\n<!-- matrix:end -->\n"
	if err := os.WriteFile(readme, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	tooMany := fmt.Sprint(len(linearizability.AllProperties()) + 1)
	out := filepath.Join(dir, "m")
	code, stdout, stderr := locklab(t, "matrix", "--impl", "setnx", "--scenario", "baseline", "--fencing", "off", "--min-decided", tooMany, "--out", out, "--readme", readme)
	if code != exitUnknown || !strings.Contains(stderr, "fewer than --min-decided "+tooMany) || !strings.Contains(stderr, readme+" left alone") {
		t.Fatalf("exit %d, want %d (inconclusive)\n%s\n%s", code, exitUnknown, stdout, stderr)
	}
	if doc, err := os.ReadFile(readme); err != nil || string(doc) != before {
		t.Errorf("README changed (%v):\n%s", err, doc)
	}
	m, err := matrix.Load(out)
	if err != nil || m.Meta.Decided.Runs != 1 {
		t.Errorf("matrix.json (%v) does not count the run: %+v", err, m.Meta.Decided)
	}
}

// TestMatrixMerge runs two one-row matrices and merges them into one table: each row
// from its own matrix, the runs linked where they are, and the README replaced; matrices
// with other columns are refused.
func TestMatrixMerge(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("<!-- matrix:begin -->\n<!-- matrix:end -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b, out := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "merged")
	for _, part := range []struct{ out, scenario string }{{a, "baseline"}, {b, "ttl-too-short"}} {
		if code, stdout, stderr := locklab(t, "matrix", "--impl", "setnx", "--scenario", part.scenario, "--fencing", "off", "--out", part.out); code != exitOK {
			t.Fatalf("matrix %s: exit %d\n%s\n%s", part.scenario, code, stdout, stderr)
		}
	}
	code, stdout, stderr := locklab(t, "matrix", "merge", "--out", out, "--readme", readme, a, b)
	if code != exitOK || !strings.Contains(stdout, "matrix: 2 matrices merged, 2 of 2 runs, 0 failed to run") {
		t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, stderr)
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Merged by `locklab matrix merge", "from 2 matrices, each cell from the last with its row and column:", "1 run per cell (seed: the scenario's), rows baseline;",
		"| baseline | ✓ |", "| ttl-too-short | P1 1/1 · P2 1/1 |"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("README lacks %q:\n%s", want, doc)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, report.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if href := "../b/runs/ttl-too-short/setnx/off/0/history.html"; !strings.Contains(string(page), `href="`+href+`"`) {
		t.Errorf("index.html does not link %s where it is:\n%s", href, page)
	}
	m, err := matrix.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	m.Fencings = []string{"full"}
	c := filepath.Join(dir, "c")
	if err := matrix.Write(c, m); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = locklab(t, "matrix", "merge", "--out", out, a, c)
	if code != exitError || !strings.Contains(stderr, "fencing modes off against full; run every part with the same --fencing") {
		t.Errorf("merge of other fencing modes: exit %d, stderr %q", code, stderr)
	}
}

// TestMatrixMergeRecheck: a matrix recorded by an older checker (here: one whose stored
// verdicts say the short TTL broke nothing, and know no P6) is judged anew from its
// runs' saved histories by merge --recheck, without running a server.
func TestMatrixMergeRecheck(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("<!-- matrix:begin -->\n<!-- matrix:end -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, out := filepath.Join(dir, "b"), filepath.Join(dir, "merged")
	// A perturbed run is as good as any here: only its saved history is read again.
	lenient := []string{"--min-decided", "0", "--max-perturbed", "1"}
	if code, stdout, stderr := locklab(t, append([]string{"matrix", "--impl", "setnx", "--scenario", "ttl-too-short", "--fencing", "off", "--out", b}, lenient...)...); code != exitOK {
		t.Fatalf("matrix: exit %d\n%s\n%s", code, stdout, stderr)
	}
	m, err := matrix.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Cells {
		c := &m.Cells[i]
		c.Counts = nil
		for k := range c.Runs {
			c.Runs[k].Verdict = linearizability.OK
			c.Runs[k].Verdicts = map[linearizability.Property]linearizability.Verdict{linearizability.P1: linearizability.OK, linearizability.P2: linearizability.OK}
		}
	}
	if err := matrix.Write(b, m); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := locklab(t, append([]string{"matrix", "merge", "--recheck", "--out", out, "--readme", readme, b}, lenient...)...)
	if code != exitOK {
		t.Fatalf("merge --recheck: exit %d\n%s\n%s", code, stdout, stderr)
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"The saved history of each of the 1 runs was checked again on ", " for P1, P2, P3, L1, P4, P5, P6: 7 (run, property) verdicts changed"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("README lacks %q:\n%s", want, doc)
		}
	}
	merged, err := matrix.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := merged.Cell("ttl-too-short", "setnx", "off")
	if !ok || c.Runs[0].Verdicts[linearizability.P6] == "" || c.Runs[0].Verdicts[linearizability.P1] != linearizability.Illegal {
		t.Fatalf("merged cell %+v: want P6 judged and P1 illegal", c)
	}
	if c.Runs[0].Perturbed == "" && (c.Counts[linearizability.P1].Illegal != 1 || !strings.Contains(string(doc), "| ttl-too-short | P1 1/1 · P2 1/1 |")) {
		t.Errorf("merged cell counts %+v, want P1 counted illegal in the table:\n%s", c.Counts, doc)
	}
}
