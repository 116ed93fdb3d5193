package wording

import (
	"fmt"
	"slices"
	"time"

	"github.com/locklab/locklab/campaign/detection"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
)

// DetectionCells is a class's row of the detection table as text, for Markdown and HTML.
type DetectionCells struct {
	Detect, Found, MedianTime, WorstTime, MedianPlans, WorstPlans, Shrunk string
}

// DetectionCellsOf is the cells of row of r.
func DetectionCellsOf(r detection.Result, row detection.Row) DetectionCells {
	mt, wt := medianWorst(row.Times, func(a, b plan.Duration) bool { return a.D() < b.D() })
	mp, wp := medianWorst(row.Plans, func(a, b int) bool { return a < b })
	c := DetectionCells{Detect: lin.JoinProperties(row.Detect, ", "), Found: fmt.Sprintf("%d/%d", row.Found, row.Seeds), Shrunk: "—"}
	if f := row.Shrunk; f != nil && f.Shrunk != nil {
		c.Shrunk = fmt.Sprintf("%d faults, %d clients, %d ops (from %d faults, %d clients, %d ops)", f.Shrunk.Faults, f.Shrunk.Clients, f.Shrunk.Ops, f.Original.Faults, f.Original.Clients, f.Original.Ops)
	}
	if row.Found == 0 {
		c.MedianTime, c.WorstTime, c.MedianPlans, c.WorstPlans = "—", "—", "—", "—"
		return c
	}
	c.MedianTime, c.MedianPlans = mt.D().Round(100*time.Millisecond).String(), fmt.Sprint(mp)
	c.WorstTime, c.WorstPlans = wt.D().Round(100*time.Millisecond).String(), fmt.Sprint(wp)
	if row.Found < row.Seeds {
		c.WorstTime, c.WorstPlans = "> "+c.WorstTime+" (missed)", fmt.Sprintf("> %d (missed)", r.MaxRuns)
	}
	return c
}

// median and worst of a sample (zero for none).
func medianWorst[T int | plan.Duration](xs []T, less func(a, b T) bool) (T, T) {
	var zero T
	if len(xs) == 0 {
		return zero, zero
	}
	s := slices.Clone(xs)
	slices.SortFunc(s, func(a, b T) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2], s[len(s)-1]
}
