package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// TestDocPlansParse: every plan docs/ gives to replay (docs/plans/*.json) is a valid plan
// of the shipped implementations, named after its file, so the commands the docs print
// for them run as printed.
func TestDocPlansParse(t *testing.T) {
	files, err := filepath.Glob("../../docs/plans/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no plan in docs/plans")
	}
	reg := locks.All()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Parse(data, f, reg)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(f), ".json"); p.Name != want {
			t.Errorf("%s: name %q differs from the file name", f, p.Name)
		}
	}
}
