package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/histories"
)

// jobTrail is what the history says about one job of the job-queue workload.
type jobTrail struct {
	name     string
	enqueued int   // index of its ok Enqueue, -1 when none
	ops      []int // every job operation on it, in history order
	effects  []int // its Effect operations that reported ok
	tally    int64 // its effects in the ledger read at the end
	tallied  bool  // a Tally op for it exists
	firstAt  int64 // call of its first operation, for ordering
}

// jobTrails gathers the job operations of h by job, and whether the ledger was read to
// the end (the closing Tally).
func jobTrails(h histories.History) (map[string]*jobTrail, bool) {
	trails := make(map[string]*jobTrail)
	ended := false
	for i, op := range h.Ops {
		if !op.Kind.IsJob() {
			continue
		}
		if op.Kind == histories.Tally && op.Key == histories.TallyEnd {
			ended = true
			continue
		}
		t := trails[op.Key]
		if t == nil {
			t = &jobTrail{name: op.Key, enqueued: -1, firstAt: op.Call}
			trails[op.Key] = t
		}
		t.ops = append(t.ops, i)
		switch {
		case op.Kind == histories.Enqueue && op.Outcome == histories.OK:
			t.enqueued = i
		case op.Kind == histories.Effect && op.Outcome == histories.OK:
			t.effects = append(t.effects, i)
		case op.Kind == histories.Tally:
			t.tally, t.tallied = op.Output.Value, true
		}
	}
	return trails, ended
}

// sortedTrails orders trails by their first operation, then name.
func sortedTrails(trails map[string]*jobTrail) []*jobTrail {
	out := make([]*jobTrail, 0, len(trails))
	for _, t := range trails {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *jobTrail) int {
		if c := cmp.Compare(a.firstAt, b.firstAt); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	return out
}

// checkAtMostOnce is P4: no job's side effect happened twice. The ledger counts each
// job's effects; an effect reported ok says how many there were by then, and the ledger
// read at the end says how many there were in all (effects whose outcome was unknown
// included).
func checkAtMostOnce(h histories.History) PropertyResult {
	start := time.Now()
	trails, _ := jobTrails(h)
	r := PropertyResult{Property: P4}
	if len(trails) == 0 {
		r.Verdict, r.Explanation = NA, "no job-queue operations"
		return r
	}
	var twice []*jobTrail
	for _, t := range sortedTrails(trails) {
		r.Ops += len(t.ops)
		most := t.tally
		for _, i := range t.effects {
			most = max(most, h.Ops[i].Output.Value)
		}
		if most > 1 || len(t.effects) > 1 {
			twice = append(twice, t)
		}
	}
	r.Verdict = OK
	if len(twice) > 0 {
		r.Verdict = Illegal
		r.Shape = "a job's side effect twice"
		r.Explanation = fmt.Sprintf("%d of %d jobs ran their side effect more than once; the first, %s",
			len(twice), len(trails), trailStory(h, twice[0]))
	}
	r.Elapsed = time.Since(start)
	return r
}

// checkAtLeastOnce is P5: every enqueued job's side effect happened by the end of the
// run. Decided only when the ledger was read to the end; a job whose enqueue outcome is
// unknown may never have been queued, and is not claimed.
func checkAtLeastOnce(h histories.History) PropertyResult {
	start := time.Now()
	trails, ended := jobTrails(h)
	r := PropertyResult{Property: P5}
	switch {
	case len(trails) == 0:
		r.Verdict, r.Explanation = NA, "no job-queue operations"
		return r
	case !ended:
		r.Verdict, r.Explanation = Unknown, "the ledger was not read back at the end of the run (the run was cut short): no job can be called lost"
		return r
	}
	var lost []*jobTrail
	enqueued := 0
	for _, t := range sortedTrails(trails) {
		if t.enqueued < 0 {
			continue
		}
		enqueued++
		r.Ops += len(t.ops)
		if t.tally == 0 && len(t.effects) == 0 {
			lost = append(lost, t)
		}
	}
	if enqueued == 0 {
		r.Verdict, r.Explanation = NA, "no job was enqueued for certain"
		return r
	}
	r.Verdict = OK
	if len(lost) > 0 {
		r.Verdict = Illegal
		r.Shape = "an enqueued job never ran"
		r.Explanation = fmt.Sprintf("%d of %d enqueued jobs never ran their side effect; the first, %s",
			len(lost), enqueued, trailStory(h, lost[0]))
	}
	r.Elapsed = time.Since(start)
	return r
}

// maxStorySteps bounds a job's story in an explanation.
const maxStorySteps = 12

// trailStory tells a job's life in the history, in the order things happened (returned):
// who took it, skipped it, ran it, when.
func trailStory(h histories.History, t *jobTrail) string {
	ops := slices.Clone(t.ops)
	slices.SortStableFunc(ops, func(a, b int) int { return cmp.Compare(h.Ops[a].Return, h.Ops[b].Return) })
	var steps []string
	for _, i := range ops {
		op := h.Ops[i]
		at := fmt.Sprintf("%.3f s", float64(op.Return)/1e9)
		who := fmt.Sprintf("client %d", op.Client)
		var s string
		switch op.Kind {
		case histories.Enqueue:
			s = "enqueued at " + at
		case histories.Deliver:
			s = fmt.Sprintf("delivered to %s at %s", who, at)
		case histories.Redeliver:
			s = fmt.Sprintf("re-delivered at %s (client %d had it past the visibility timeout)", at, op.Output.Value)
		case histories.Skip:
			s = fmt.Sprintf("skipped by %s at %s (%s)", who, at, op.Output.Error)
		case histories.Effect:
			switch op.Outcome {
			case histories.OK:
				s = fmt.Sprintf("run by %s at %s (effect #%d in the ledger)", who, at, op.Output.Value)
			case histories.Fail:
				s = fmt.Sprintf("no effect by %s at %s (%s)", who, at, op.Output.Error) // refused by the ledger, or the run failed
			default:
				s = fmt.Sprintf("run by %s from %.3f s with unknown outcome (%s)", who, float64(op.Call)/1e9, op.Output.Error)
			}
		case histories.Ack:
			if op.Outcome == histories.OK {
				s = fmt.Sprintf("acknowledged by %s at %s", who, at)
			} else {
				s = fmt.Sprintf("acknowledged too late by %s at %s (%s)", who, at, op.Output.Error)
			}
		case histories.Tally:
			s = fmt.Sprintf("%d effects in the ledger at the end", op.Output.Value)
		}
		if s != "" {
			steps = append(steps, s)
		}
	}
	if !t.tallied {
		steps = append(steps, "not in the ledger at the end")
	}
	if len(steps) > maxStorySteps {
		n := len(steps) - maxStorySteps
		steps = append(steps[:maxStorySteps-1:maxStorySteps-1], fmt.Sprintf("(%d steps more)", n), steps[len(steps)-1])
	}
	return t.name + ", was " + strings.Join(steps, "; ") + "."
}
