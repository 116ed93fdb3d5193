package linearizability

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/model"
)

// finding is the first violation of a property: a sentence for people and the time span
// it is about, for the visualisation.
type finding struct {
	text      string
	shape     string // PropertyResult.Shape
	at, until int64
}

// explainExclusion finds the first violation of P1 once Porcupine has found the lock
// history illegal. It replays the lock model with every operation placed at its belief
// time: an acquire ok at its return, every other lock operation at its call. That is one
// valid linearization candidate, so if Porcupine found none this replay must fail too, and
// where it fails is where beliefs first collide.
func explainExclusion(h histories.History, bs map[string][]belief) finding {
	type event struct {
		op   int
		t    int64
		rank int // order at equal times, see below
	}
	type start struct {
		key      string
		believer int
		t        int64
	}
	starts := make(map[start]bool)
	var evs []event
	for i, op := range h.Ops {
		switch {
		case !op.Kind.IsLock():
		case op.Kind == histories.Acquire && op.Outcome == histories.OK:
			evs = append(evs, event{i, op.Return, 1})
			starts[start{op.Key, op.Process, op.Return}] = true
		case op.Kind == histories.Acquire: // refusals and unknown acquires change no belief
		default:
			evs = append(evs, event{i, op.Call, 0})
		}
	}
	// Intervals are closed, so operations at the same instant may go in any order: beliefs
	// end before others start, except that a believer's own acquire comes before the
	// operation that ends it at that same instant.
	for j, e := range evs {
		op := h.Ops[e.op]
		if e.rank == 0 && starts[start{op.Key, op.Process, e.t}] {
			evs[j].rank = 2
		}
	}
	slices.SortFunc(evs, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.rank, b.rank), cmp.Compare(a.op, b.op))
	})
	type holding struct{ believer, acquire int }
	holders := make(map[string]holding)
	for _, e := range evs {
		op := h.Ops[e.op]
		b := op.Process
		cur, held := holders[op.Key]
		s := model.InitialLock()
		if held {
			s.Holder = cur.believer
		}
		in := model.LockInput{Key: op.Key, Kind: model.Kind(op.Kind), Process: b}
		next, ok := model.StepLock(model.LockOptions{Exclusion: true}, s, in, model.LockOutput{Outcome: model.Outcome(op.Outcome)})
		if !ok {
			return describeCollision(h, bs, e.op, e.t, cur.acquire, held && cur.believer == b, held)
		}
		switch {
		case next.Holder == model.NoHolder:
			delete(holders, op.Key)
		case !held:
			holders[op.Key] = holding{b, e.op}
		}
	}
	return finding{text: "Porcupine found no order of the lock operations that keeps beliefs exclusive; see the visualisation", shape: "no exclusive order"}
}

// describeCollision words the failed replay step: operation i at time t, with the lock
// held (if held) since the acquire at index holderAcq, by the same believer if self.
func describeCollision(h histories.History, bs map[string][]belief, i int, t int64, holderAcq int, self, held bool) finding {
	op := h.Ops[i]
	who := fmt.Sprintf("process %d (client %d)", op.Process, op.Client)
	if op.Kind == histories.Acquire {
		holder := h.Ops[holderAcq]
		if self {
			return finding{text: fmt.Sprintf("%s acquired lock %q at %s although it already held it since %s",
				who, op.Key, seconds(t), seconds(holder.Return)), shape: "acquire ok while its holder", at: holder.Return, until: t}
		}
		f := finding{at: t, until: t, shape: "acquire ok while another believed"}
		still := ""
		if b, ok := beliefOf(bs, op.Key, holderAcq); ok {
			f.until = b.end
			if b.ender < 0 {
				still = fmt.Sprintf(" (and still did at the end of the history, %s)", seconds(b.end))
			} else {
				still = fmt.Sprintf(" (and still did until %s)", seconds(b.end))
			}
		}
		f.text = fmt.Sprintf("%s acquired lock %q at %s while process %d (client %d) had believed it held %q since %s%s",
			who, op.Key, seconds(t), holder.Process, holder.Client, op.Key, seconds(holder.Return), still)
		return f
	}
	verb := map[histories.Kind]string{histories.Release: "released", histories.Extend: "extended"}[op.Kind]
	f := finding{at: t, until: t, shape: fmt.Sprintf("%s ok not held", op.Kind)}
	if held {
		f.shape = fmt.Sprintf("%s ok while another held", op.Kind)
		holder := h.Ops[holderAcq]
		f.text = fmt.Sprintf("%s %s lock %q successfully at %s although process %d (client %d) held it since %s: it %s a lock it did not hold",
			who, verb, op.Key, seconds(t), holder.Process, holder.Client, seconds(holder.Return), verb)
		return f
	}
	f.text = fmt.Sprintf("%s %s lock %q successfully at %s although it did not hold it", who, verb, op.Key, seconds(t))
	if end, ok := lastBeliefEnd(bs, op.Process, op.Key, op.Call); ok {
		f.text += fmt.Sprintf(" (its belief had ended at %s)", seconds(end))
	} else {
		f.text += " (it had not acquired it)"
	}
	return f
}

// beliefOf finds the belief that the acquire at index acq started.
func beliefOf(bs map[string][]belief, key string, acq int) (belief, bool) {
	for _, b := range bs[key] {
		if b.acquire == acq {
			return b, true
		}
	}
	return belief{}, false
}

// lastBeliefEnd is the end of believer's latest belief on key that ended by time t.
func lastBeliefEnd(bs map[string][]belief, believer int, key string, t int64) (int64, bool) {
	var end int64
	found := false
	for _, b := range bs[key] {
		if b.believer == believer && b.end <= t && (!found || b.end > end) {
			end, found = b.end, true
		}
	}
	return end, found
}

// explainFences finds the first violation of P3 directly: fences granted by acquire ok must
// be distinct, and none may be granted after (in real time) an equal or larger one. These
// two conditions are exactly when no strictly increasing order respects real time. before
// is the largest fence granted before the history (a window's earlier windows), 0 if none.
func explainFences(h histories.History, before int64) finding {
	byKey := make(map[string][]int)
	for i, op := range h.Ops {
		if op.Kind == histories.Acquire && op.Outcome == histories.OK && op.Output.Fence > 0 {
			byKey[op.Key] = append(byKey[op.Key], i)
		}
	}
	var first *finding
	firstCall := int64(0)
	for key, idx := range byKey {
		f, call, ok := firstFenceViolation(h, key, idx, before)
		if ok && (first == nil || call < firstCall) {
			first, firstCall = &f, call
		}
	}
	if first == nil {
		return finding{text: "Porcupine found no order in which the granted fences increase; see the visualisation", shape: "no increasing order"}
	}
	return *first
}

// firstFenceViolation checks the fenced acquires idx of one key, sweeping them in call
// order while keeping the largest fence among those that returned before the current call.
func firstFenceViolation(h histories.History, key string, idx []int, before int64) (finding, int64, bool) {
	ops := h.Ops
	calls := slices.Clone(idx)
	slices.SortFunc(calls, func(a, b int) int { return cmp.Or(cmp.Compare(ops[a].Call, ops[b].Call), cmp.Compare(a, b)) })
	rets := slices.Clone(idx)
	slices.SortFunc(rets, func(a, b int) int { return cmp.Or(cmp.Compare(ops[a].Return, ops[b].Return), cmp.Compare(a, b)) })
	seen := make(map[int64]int) // fence -> first acquire granted it, among those called so far
	best, r := -1, 0            // best: the largest fence returned before the current call
	for _, i := range calls {
		op := ops[i]
		for ; r < len(rets) && ops[rets[r]].Return < op.Call; r++ {
			if best < 0 || ops[rets[r]].Output.Fence > ops[best].Output.Fence {
				best = rets[r]
			}
		}
		f := op.Output.Fence
		if f <= before {
			return finding{
				text: fmt.Sprintf("process %d (client %d) was granted fence %d for lock %q at %s after fence %d had already been granted before this window of the history",
					op.Process, op.Client, f, key, seconds(op.Return), before),
				shape: "fence not above an earlier grant", at: op.Call, until: op.Return,
			}, op.Call, true
		}
		if best >= 0 && ops[best].Output.Fence >= f {
			prev := ops[best]
			return finding{
				text: fmt.Sprintf("process %d (client %d) was granted fence %d for lock %q at %s after process %d (client %d) had already been granted fence %d at %s",
					op.Process, op.Client, f, key, seconds(op.Return), prev.Process, prev.Client, prev.Output.Fence, seconds(prev.Return)),
				shape: "fence not above an earlier grant", at: prev.Return, until: op.Return,
			}, op.Call, true
		}
		if j, dup := seen[f]; dup {
			prev := ops[j]
			return finding{
				text: fmt.Sprintf("processes %d (client %d) and %d (client %d) were both granted fence %d for lock %q (at %s and %s)",
					prev.Process, prev.Client, op.Process, op.Client, f, key, seconds(prev.Return), seconds(op.Return)),
				shape: "fence granted twice", at: min(prev.Return, op.Return), until: max(prev.Return, op.Return),
			}, op.Call, true
		}
		seen[f] = i
	}
	return finding{}, 0, false
}
