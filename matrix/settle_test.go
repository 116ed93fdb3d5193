package matrix_test

import (
	"context"
	"testing"

	"github.com/locklab/locklab/matrix"
)

// settleTries is how many times a cell whose runs a loaded machine perturbed is run again
// before a test gives up on it.
const settleTries = 3

// settle runs again, up to settleTries times each, every cell of res whose runs were all
// perturbed (the harness stalled: the verdicts say nothing of the lock), and puts the
// first one that decided in its place: the test then asserts on verdicts, not on the
// machine's load. A cell still perturbed after that fails the test, saying so.
func settle(t *testing.T, ctx context.Context, o matrix.Options, res *matrix.Result) {
	t.Helper()
	for i, c := range res.Cells {
		for try := 1; allPerturbed(c) && try <= settleTries; try++ {
			t.Logf("%s × %s × %s: every run perturbed (%s); running it again (%d of %d)", c.Scenario, c.Impl, c.Fencing, c.Runs[0].Perturbed, try, settleTries)
			one := o
			one.Impls, one.Scenarios, one.Fencings, one.Out, one.Progress = []string{c.Impl}, []string{c.Scenario}, []string{c.Fencing}, t.TempDir(), nil
			again, err := matrix.Run(ctx, one)
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := again.Cell(c.Scenario, c.Impl, c.Fencing); ok {
				c = got
			}
		}
		if allPerturbed(c) {
			t.Fatalf("%s × %s × %s: every run perturbed %d times more (%s): the machine is too loaded to decide this cell", c.Scenario, c.Impl, c.Fencing, settleTries, c.Runs[0].Perturbed)
		}
		res.Cells[i] = c
	}
}

// allPerturbed reports whether cell was run and every one of its runs was perturbed.
func allPerturbed(c matrix.Cell) bool {
	return c.Status == matrix.CellPlanned && len(c.Runs) > 0 && c.Perturbed == len(c.Runs)
}
