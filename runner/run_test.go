package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/timeline"
)

// TestPicturesOnlyWhereWanted: Options.Pictures decides from the report whether the run
// directory gets history.html and timeline.svg; the plan, the history and the result are
// written either way, and the verdicts do not depend on it.
func TestPicturesOnlyWhereWanted(t *testing.T) {
	p := plan.Default()
	p.Name, p.Impl, p.Clients, p.Duration = "pictures", "fenced", 2, plan.D(300*time.Millisecond)
	for _, want := range []bool{false, true} {
		r, err := p.Resolve(locks.All())
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		asked := false
		rep, err := Run(context.Background(), r, Options{Backend: clustertest.Backend(t), Dir: dir, Pictures: func(rep Report) bool {
			asked = rep.Result.Verdict != ""
			return want
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !asked {
			t.Error("Pictures was asked before the verdicts were known")
		}
		for _, f := range []string{PlanFile, ResultFile, histories.HistoryFile} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("pictures %v: %s missing: %v", want, f, err)
			}
		}
		for _, f := range []string{HTMLFile, timeline.File} {
			if _, err := os.Stat(filepath.Join(dir, f)); (err == nil) != want {
				t.Errorf("pictures %v: %s exists: %v", want, f, err == nil)
			}
		}
		if (rep.Result.HTML != "") != want {
			t.Errorf("pictures %v: result names the page %q", want, rep.Result.HTML)
		}
	}
}
