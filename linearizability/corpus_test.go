package linearizability_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
)

// corpusDir holds real counterexamples (and one clean run) saved from locklab runs, one
// folder per case: history.jsonl, faults.jsonl, expect.json. README.md there says what
// each case shows and which command recorded it.
const corpusDir = "testdata/corpus"

// TestCorpus re-checks every saved run and asserts the verdict of each property the
// checker gave when the run was saved, so that a change to a model, the checker or the
// history format that turns a known violation into a pass (or a pass into a violation)
// fails here.
func TestCorpus(t *testing.T) {
	entries, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	cases := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		cases++
		dir := filepath.Join(corpusDir, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			want := readExpect(t, filepath.Join(dir, "expect.json"))
			h, err := histories.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			res, err := linearizability.Check(h, linearizability.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range linearizability.AllProperties() {
				got, ok := res.Property(p)
				if !ok {
					t.Errorf("%s: not checked", p)
					continue
				}
				if got.Verdict != want[p] {
					t.Errorf("%s %s: verdict %s, want %s (%s)", p, p.Name(), got.Verdict, want[p], got.Explanation)
				}
				if got.Verdict == linearizability.Illegal && got.Explanation == "" {
					t.Errorf("%s: illegal without an explanation", p)
				}
			}
		})
	}
	if cases == 0 {
		t.Fatalf("no cases in %s", corpusDir)
	}
}

// readExpect reads a case's expected verdicts: every property, each a known verdict,
// nothing else.
func readExpect(t *testing.T, path string) map[linearizability.Property]linearizability.Verdict {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("every case needs its expected verdicts: %v", err)
	}
	var want map[linearizability.Property]linearizability.Verdict
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	props := linearizability.AllProperties()
	if len(want) != len(props) {
		t.Fatalf("%s: %d properties, want exactly %v", path, len(want), props)
	}
	for _, p := range props {
		switch v, ok := want[p]; {
		case !ok:
			t.Fatalf("%s: no verdict for %s", path, p)
		case v != linearizability.OK && v != linearizability.Illegal && v != linearizability.NA:
			// unknown is a timeout, not a verdict worth keeping in a regression corpus
			t.Fatalf("%s: %s: verdict %q, want ok, illegal or n/a", path, p, v)
		}
	}
	return want
}
