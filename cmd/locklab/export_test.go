package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// corpusRun is a saved real run (history.jsonl and faults.jsonl) of the regression corpus:
// pause-past-ttl with fencing off.
var corpusRun = filepath.Join("..", "..", "linearizability", "testdata", "corpus", "pause-past-ttl-off")

// ednLine is the shape of every line of an export: the Jepsen fields in Jepsen's order.
var ednLine = regexp.MustCompile(`^\{:index (\d+), :time (\d+), :type :(invoke|ok|fail|info), :process (\d+), :f :(acquire|release|extend|read|write|crash), :value \["[^"]*" [^\]]*\](, :fence \d+)?(, :locklab/base \d+)?(, :error "(?:[^"\\]|\\.)*")?, :locklab/client \d+\}$`)

func TestExportEDN(t *testing.T) {
	code, stdout, stderr := locklab(t, "export", "--format", "edn", corpusRun)
	if code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) < 100 {
		t.Fatalf("export wrote %d lines", len(lines))
	}
	invoked := map[string]bool{}
	for i, line := range lines {
		m := ednLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %d is not a Jepsen operation map: %s", i+1, line)
		}
		if m[1] != strconv.Itoa(i) {
			t.Fatalf("line %d has :index %s", i+1, m[1])
		}
		proc := m[4]
		if m[3] == "invoke" {
			if invoked[proc] {
				t.Fatalf("line %d: process %s invokes twice", i+1, proc)
			}
			invoked[proc] = true
		} else {
			if !invoked[proc] {
				t.Fatalf("line %d: process %s completes without invoking", i+1, proc)
			}
			delete(invoked, proc)
		}
	}

	// The same export into a file, from the history file rather than the directory.
	out := filepath.Join(t.TempDir(), "history.edn")
	code, stdout2, stderr := locklab(t, "export", filepath.Join(corpusRun, "history.jsonl"), "--out", out)
	if code != exitOK || stdout2 != "" || !strings.Contains(stderr, out) {
		t.Fatalf("export --out: exit %d, stdout %d bytes, stderr %q", code, len(stdout2), stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != stdout {
		t.Error("export --out wrote something else than export to stdout")
	}
}

func TestExportBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(bad, []byte("{\"locklab\":\"history\",\"version\":1,\"meta\":{\"fencing\":\"off\",\"ttl\":1}}\n{\"process\":0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"export", "--format", "xml", corpusRun}, `flag --format: unknown format "xml" (known: edn)`},
		{[]string{"export", filepath.Join(dir, "missing")}, "load history"},
		{[]string{"export", bad}, bad + ":2: invalid operation: empty key"},
		{[]string{"export", corpusRun, "--out", filepath.Join(dir, "no", "such", "dir", "h.edn")}, "flag --out: write " + filepath.Join(dir, "no", "such", "dir", "h.edn")},
		{[]string{"export"}, "accepts 1 arg(s), received 0"},
	}
	for _, c := range cases {
		code, stdout, stderr := locklab(t, c.args...)
		if code != exitError || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("locklab %s: exit %d, stdout %d bytes, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, len(stdout), stderr, exitError, c.want)
		}
	}
}
