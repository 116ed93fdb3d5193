package matrix

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
)

// Recheck checks again the saved history of every run of m (whose run directories are
// relative to dir) with the checker as it is now, and replaces the runs' verdicts and
// the cells' counts: a matrix recorded before a property existed, or before a checker
// fix, is judged anew without running any server. A run that failed to run stays as it
// was, as does whether a run was perturbed (a fact of the run, not of the checker).
// Meta.Rechecked says when, and how many runs and (run, property) verdicts changed; a
// run whose history cannot be read is an error naming it.
func Recheck(dir string, m *Result, timeout time.Duration) error {
	runs, changed := 0, 0
	for ci := range m.Cells {
		c := &m.Cells[ci]
		for ri := range c.Runs {
			r := &c.Runs[ri]
			if r.Error != "" {
				continue
			}
			runDir := filepath.Join(dir, filepath.FromSlash(r.Dir))
			h, err := histories.Load(runDir)
			if err != nil {
				return fmt.Errorf("recheck %s/%s/%s run %d: %w", c.Scenario, c.Impl, c.Fencing, r.Index, err)
			}
			res, err := linearizability.Check(h, linearizability.Options{Timeout: timeout})
			if err != nil {
				return fmt.Errorf("recheck %s: %w", runDir, err)
			}
			verdicts := map[linearizability.Property]linearizability.Verdict{}
			for _, pr := range res.Properties {
				verdicts[pr.Property] = pr.Verdict
				if r.Verdicts[pr.Property] != pr.Verdict {
					changed++
				}
			}
			r.Verdict, r.Verdicts = res.Verdict, verdicts
			runs++
		}
		c.count()
	}
	m.Meta.Decided = m.Decided()
	m.Meta.Rechecked = fmt.Sprintf("The saved history of each of the %d runs was checked again on %s for %s: %d (run, property) verdicts changed",
		runs, time.Now().UTC().Format(time.DateOnly), linearizability.JoinProperties(linearizability.AllProperties(), ", "), changed)
	return nil
}
