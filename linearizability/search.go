package linearizability

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/histories"
)

// search is one property that Porcupine decides: its model and the operations it is
// about. Keys are independent, so each key's partition is searched on its own.
type search struct {
	prop    Property
	model   porcupine.Model
	sel     histories.Selection
	none    string                                       // the explanation when no operation is selected
	explain func(suspects []porcupine.Operation) finding // given the partitions not shown legal
}

// partition is one key of one search, and what searching it found.
type partition struct {
	histories.Partition
	checked bool // false: skipped, its property was already illegal
	verdict porcupine.CheckResult
	elapsed time.Duration
}

// Undecided names a partition whose search ran out of time: the key and how big it was.
type Undecided struct {
	Key     string `json:"key"`
	Ops     int    `json:"ops"`
	Unknown int    `json:"unknown_outcomes"` // operations of unknown outcome: each may take effect anywhere after its call
}

// searchAll searches every partition of every search on all cores, the largest first.
// Each search (property) has a deadline of its own, Options.Timeout after the first of
// its partitions starts: one property's large partitions, searched first, would otherwise
// spend the time of the properties queued behind them. A partition that runs out of
// time is undecided (its property unknown unless another partition is illegal), never
// legal. Once a property is illegal its other partitions are skipped: the explanation
// looks at every partition not shown legal.
func (c *checker) searchAll(searches []search) []PropertyResult {
	parts := make([][]partition, len(searches))
	type task struct{ s, p int }
	var tasks []task
	for si, s := range searches {
		for _, p := range s.sel.Partitions(c.h) {
			parts[si] = append(parts[si], partition{Partition: p})
			tasks = append(tasks, task{si, len(parts[si]) - 1})
		}
	}
	slices.SortStableFunc(tasks, func(a, b task) int {
		return cmp.Compare(len(parts[b.s][b.p].Ops), len(parts[a.s][a.p].Ops))
	})
	illegal := make([]atomic.Bool, len(searches))
	deadlines := make([]time.Time, len(searches))
	started := make([]sync.Once, len(searches))
	deadline := func(si int) time.Time {
		started[si].Do(func() { deadlines[si] = time.Now().Add(c.opts.Timeout) })
		return deadlines[si]
	}
	work := make(chan task)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(tasks)) {
		wg.Go(func() {
			for t := range work {
				if illegal[t.s].Load() {
					continue
				}
				p := &parts[t.s][t.p]
				p.checked = true
				p.verdict, p.elapsed = c.searchOne(searches[t.s], p.Ops, deadline(t.s))
				if p.verdict == porcupine.Illegal {
					illegal[t.s].Store(true)
				}
			}
		})
	}
	for _, t := range tasks {
		work <- t
	}
	close(work)
	wg.Wait()
	c.parts = parts
	out := make([]PropertyResult, len(searches))
	for si, s := range searches {
		out[si] = c.verdict(s, parts[si])
	}
	return out
}

// searchOne converts one partition and searches it until deadline.
func (c *checker) searchOne(s search, idx []int, deadline time.Time) (porcupine.CheckResult, time.Duration) {
	start := time.Now()
	left := time.Until(deadline)
	if left <= 0 {
		return porcupine.Unknown, 0 // CheckOperationsTimeout would read 0 as no limit at all
	}
	m := s.model
	m.Partition = nil // one key already
	return porcupine.CheckOperationsTimeout(m, s.sel.Convert(c.h, idx, nil), left), time.Since(start)
}

// verdict combines a search's partitions into the property's result.
func (c *checker) verdict(s search, parts []partition) PropertyResult {
	r := PropertyResult{Property: s.prop}
	if len(parts) == 0 {
		r.Verdict, r.Explanation = NA, s.none
		return r
	}
	var suspects []int
	for _, p := range parts {
		r.Ops += len(p.Ops)
		r.Elapsed += p.elapsed
		switch {
		case p.checked && p.verdict == porcupine.Ok:
		case p.checked && p.verdict == porcupine.Unknown:
			r.Undecided = append(r.Undecided, c.undecided(p))
			suspects = append(suspects, p.Ops...)
		default:
			suspects = append(suspects, p.Ops...)
		}
	}
	switch {
	case slices.ContainsFunc(parts, func(p partition) bool { return p.checked && p.verdict == porcupine.Illegal }):
		start := time.Now()
		slices.Sort(suspects)
		f := s.explain(s.sel.Convert(c.h, suspects, histories.Lanes(c.h.Ops)))
		r.Elapsed += time.Since(start)
		r.Verdict, r.Explanation, r.Shape, r.At, r.Until = Illegal, f.text, f.shape, f.at, max(f.until, f.at)
	case len(r.Undecided) > 0:
		r.Verdict, r.Explanation = Unknown, undecidedText(c.opts.Timeout, r.Undecided, len(parts))
	default:
		r.Verdict = OK
	}
	return r
}

func (c *checker) undecided(p partition) Undecided {
	u := Undecided{Key: p.Key, Ops: len(p.Ops)}
	for _, i := range p.Ops {
		if c.h.Ops[i].Outcome == histories.Unknown {
			u.Unknown++
		}
	}
	return u
}

// undecidedText says which keys Porcupine could not decide, the largest first.
func undecidedText(timeout time.Duration, us []Undecided, keys int) string {
	us = slices.Clone(us)
	slices.SortStableFunc(us, func(a, b Undecided) int { return cmp.Compare(b.Ops, a.Ops) })
	const shown = 3
	var names []string
	for _, u := range us[:min(len(us), shown)] {
		names = append(names, fmt.Sprintf("key %q (%d ops, %d of unknown outcome)", u.Key, u.Ops, u.Unknown))
	}
	s := fmt.Sprintf("Porcupine did not decide within %s on %s", timeout, strings.Join(names, ", "))
	if len(us) > shown {
		s += fmt.Sprintf(" and %d more keys", len(us)-shown)
	}
	if rest := keys - len(us); rest > 0 {
		s += fmt.Sprintf("; the other %d keys are linearizable", rest)
	}
	return s
}
