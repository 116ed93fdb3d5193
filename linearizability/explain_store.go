package linearizability

import (
	"cmp"
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/model"
)

// explainStore finds the first violation of P2 once Porcupine has found the store history
// illegal. There is no obvious witness order for a register, so it asks Porcupine again,
// verbosely, for the longest partial linearization of each illegal key, and explains the
// operation that could not be placed after it: the one with the earliest return among
// those left out. Only illegal histories pay for this second run.
func explainStore(h histories.History, mode model.Fencing, start model.RegisterState, ops []porcupine.Operation, timeout time.Duration) finding {
	m := model.RegisterModelFrom(mode, start)
	res, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
	parts := m.Partition(ops) // the same deterministic partitions Porcupine used
	partials := info.PartialLinearizationsOperations()
	if res != porcupine.Illegal || len(partials) != len(parts) {
		return finding{text: fmt.Sprintf("Porcupine could not pinpoint the violation within %s; see the visualisation", timeout), shape: "not pinpointed"}
	}
	var first *finding
	var firstRet int64
	for p, part := range parts {
		var longest []porcupine.Operation
		for _, l := range partials[p] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(part) {
			continue // this key is linearizable
		}
		f, ret := explainStuckKey(h, mode, start, part, longest)
		if first == nil || ret < firstRet {
			first, firstRet = &f, ret
		}
	}
	if first == nil {
		return finding{text: "Porcupine found no order of the store operations that the locked register allows; see the visualisation", shape: "no order"}
	}
	return *first
}

// explainStuckKey explains why the store operations part of one key cannot all be ordered,
// given the longest order Porcupine found for a prefix of them. It returns the finding and
// the recorded return time of the operation it blames.
func explainStuckKey(h histories.History, mode model.Fencing, start model.RegisterState, part, longest []porcupine.Operation) (finding, int64) {
	placed := make(map[int]bool, len(longest))
	states := []model.RegisterState{start}
	for _, op := range longest {
		placed[meta(op).Index] = true
		states = stepAll(mode, states, op)
	}
	var stuck porcupine.Operation
	found := false
	for _, op := range part {
		if placed[meta(op).Index] {
			continue
		}
		if !found || cmp.Or(cmp.Compare(op.Return, stuck.Return), cmp.Compare(op.Call, stuck.Call)) < 0 {
			stuck, found = op, true
		}
	}
	sm := meta(stuck)
	rec := h.Ops[sm.Index]
	in, out := stuck.Input.(model.RegisterInput), stuck.Output.(model.RegisterOutput)
	f := finding{at: rec.Call, until: rec.Return, shape: storeShape(rec)}
	what := describeStoreOp(rec)
	for _, s := range states {
		why := model.WhyIllegal(mode, s, in, out)
		if why == "" {
			continue
		}
		f.text = what + ": " + why + provenance(h, mode, longest, s, in, out)
		return f, rec.Return
	}
	f.text = fmt.Sprintf("no order of the %d store operations on %q satisfies the locked register: the longest that does (%d operations) cannot be extended by %s",
		len(part), in.Key, len(longest), what)
	return f, rec.Return
}

// stepAll applies op to every state the store may be in, without duplicates.
func stepAll(mode model.Fencing, states []model.RegisterState, op porcupine.Operation) []model.RegisterState {
	var next []model.RegisterState
	seen := make(map[model.RegisterState]bool)
	for _, s := range states {
		for _, n := range model.StepRegister(mode, s, op.Input.(model.RegisterInput), op.Output.(model.RegisterOutput)) {
			if !seen[n] {
				seen[n] = true
				next = append(next, n)
			}
		}
	}
	return next
}

// provenance says which earlier operation put the store in the state the explanation
// mentions: the writer of the value, or the operation that presented the largest fence.
func provenance(h histories.History, mode model.Fencing, longest []porcupine.Operation, s model.RegisterState, in model.RegisterInput, out model.RegisterOutput) string {
	// WhyIllegal blames the value only for an accepted operation that the fence rule
	// accepts too; otherwise it blames the fence.
	accepted, _ := model.FenceRule(mode, s, in)
	valueMatters := out.Outcome == model.OK && accepted
	// The value's writer is the last write of it before the blocked operation; the fence
	// was raised by the first operation that presented it.
	if valueMatters {
		for i := len(longest) - 1; i >= 0; i-- {
			rec := h.Ops[meta(longest[i]).Index]
			if pin := longest[i].Input.(model.RegisterInput); pin.Kind == model.Write && pin.Value == s.Value && rec.Outcome != histories.Fail {
				return fmt.Sprintf("; the %d had been written by process %d (client %d) at %s", s.Value, rec.Process, rec.Client, span(rec.Call, rec.Return))
			}
		}
		return ""
	}
	for _, prev := range longest {
		rec := h.Ops[meta(prev).Index]
		if s.MaxFence > 0 && prev.Input.(model.RegisterInput).Fence == s.MaxFence && rec.Outcome != histories.Fail {
			return fmt.Sprintf("; fence %d had first been presented by process %d (client %d) at %s", s.MaxFence, rec.Process, rec.Client, span(rec.Call, rec.Return))
		}
	}
	return ""
}

// describeStoreOp names a store operation with its times, e.g. "process 1 (client 0)'s
// write of 1 over 0 to "k" with fence 1 (called at 0.200 s, ok at 0.210 s)".
func describeStoreOp(op histories.Op) string {
	what := fmt.Sprintf("read of %q", op.Key)
	if op.Kind == histories.Write {
		what = fmt.Sprintf("write of %d over %d to %q", op.Input.Value, op.Input.Base, op.Key)
	}
	if op.Input.Fence > 0 {
		what += fmt.Sprintf(" with fence %d", op.Input.Fence)
	}
	result := string(op.Outcome)
	switch {
	case op.Outcome == histories.Fail:
		result = "rejected"
	case op.Kind == histories.Read && op.Outcome == histories.OK:
		result = fmt.Sprintf("got %d", op.Output.Value)
	}
	return fmt.Sprintf("process %d (client %d)'s %s (called at %s, %s at %s)",
		op.Process, op.Client, what, seconds(op.Call), result, seconds(op.Return))
}

// storeShape is the kind of store operation a P2 violation blames: "read ok", "write
// ok", "fenced write rejected".
func storeShape(op histories.Op) string {
	s := fmt.Sprintf("%s %s", op.Kind, op.Outcome)
	if op.Outcome == histories.Fail {
		s = fmt.Sprintf("%s rejected", op.Kind)
	}
	if op.Input.Fence > 0 {
		s = "fenced " + s
	}
	return s
}

// meta is the conversion's metadata of op.
func meta(op porcupine.Operation) histories.OpMeta { return op.Metadata.(histories.OpMeta) }
