package timeline

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/histories"
)

// Cropping: a long run is drawn around what matters — the first violation from the
// grant of a belief it involves, else the faults from the last grant before the first
// of them (as report/narrate.go's story), else the start of the run — and what is left
// out on either side is counted in a line under the axis. A view that still holds more
// operations than a browser draws comfortably is narrowed around the story (bound.go).
const (
	maxOpsUncropped = 150
	quietWindow     = int64(1500 * time.Millisecond) // a run without faults or violation
	minMargin       = int64(20 * time.Millisecond)
	aftermath       = int64(100 * time.Millisecond) // after the last fault: its effect, not the next round
)

// summary counts what a cropped picture leaves out on one side.
type summary struct {
	from, to                          int64
	ops, sections, violations, faults int
}

func (s summary) String() string {
	line := fmt.Sprintf("%.3f–%.3f s not drawn: %d operations, %d critical sections, %d violations",
		float64(s.from)/1e9, float64(s.to)/1e9, s.ops, s.sections, s.violations)
	if s.faults > 0 {
		line += fmt.Sprintf(", %d faults", s.faults)
	}
	return line
}

// crop chooses the stretch drawn and summarises the rest; when the budget of operations
// made it narrower than the story, narrowed names what it was narrowed around.
func crop(h histories.History, bs []belief, vs []violation, end int64) (view span, before, after *summary, narrowed string) {
	f := focusOf(h, bs, vs, end)
	full := span{0, max(end, 1)}
	if end == 0 {
		full.to = int64(time.Second)
	}
	view, ok := narrow(h.Ops, storyView(h, f, full), f)
	if ok {
		narrowed = f.what
	}
	if view == full {
		return full, nil, nil, ""
	}
	if view.from > 0 {
		before = &summary{from: 0, to: view.from}
	}
	if view.to < full.to {
		after = &summary{from: view.to, to: full.to}
	}
	count := func(s *summary, out func(from, to int64) bool) {
		if s == nil {
			return
		}
		for _, op := range h.Ops {
			if out(op.Call, op.Return) {
				s.ops++
			}
		}
		for _, b := range bs {
			if out(b.start, b.end) {
				s.sections++
			}
		}
		for _, v := range vs {
			if v.placed && out(v.from, v.to) {
				s.violations++
			}
		}
		for _, f := range h.Faults {
			to := f.End
			if to < 0 {
				to = end
			}
			if out(f.Start, to) {
				s.faults++
			}
		}
	}
	count(before, func(_, to int64) bool { return to < view.from })
	count(after, func(from, _ int64) bool { return from > view.to })
	return view, before, after, narrowed
}

// storyView is the stretch that tells the story: the focus, or the whole run when that
// is short or the focus covers it.
func storyView(h histories.History, f focus, full span) span {
	long := full.to-full.from > (f.to-f.from)*5/4
	if !long && len(h.Ops) <= maxOpsUncropped || f.from <= 0 && f.to >= full.to {
		return full
	}
	view := span{max(0, f.from), min(f.to, full.to)}
	if view.to <= view.from {
		return full
	}
	return view
}

// focus is what a picture is drawn around.
type focus struct {
	span        // the stretch that tells the story, with a margin
	core span   // the same without the margin
	at   int64  // the moment the story turns on
	what string // that moment in words, for the legend
}

// focusOf is the stretch that tells the run's story, with a margin.
func focusOf(h histories.History, bs []belief, vs []violation, end int64) focus {
	var from, to, at int64
	what := "the first violation"
	switch {
	case len(vs) > 0 && vs[0].placed:
		first := vs[0]
		from, to, at = first.from, first.to, first.from
		for _, b := range bs {
			if b.start <= first.from && b.end >= first.from {
				from = min(from, b.granted) // the belief the violation involves, from its grant
			}
		}
		for _, v := range vs[1:] {
			if v.placed && v.from <= first.to+(first.to-from) {
				to = max(to, v.to) // the same episode: a lost update right after two beliefs
			}
		}
	case len(h.Faults) > 0:
		first, last := h.Faults[0].Start, int64(0)
		for _, f := range h.Faults {
			first = min(first, f.Start)
			if f.End < 0 {
				last = end
			}
			last = max(last, f.End)
		}
		for _, op := range h.Ops {
			// A grant in flight when the first fault struck counts (narrate.go's rule).
			if op.Kind == histories.Acquire && op.Outcome == histories.OK && op.Call <= first {
				from = max(from, op.Call)
			}
		}
		to, at, what = last+aftermath, first, "the first fault"
	default:
		return focus{span: span{0, quietWindow}, what: "the start of the run"}
	}
	margin := max((to-from)/10, minMargin)
	return focus{span: span{from - margin, to + margin}, core: span{from, to}, at: at, what: what}
}
