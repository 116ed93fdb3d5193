package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/model"
)

// Porcupine writes one LinearizationInfo per check, so one HTML file with every property
// needs one check of one model. combined is that model: its partitions are (property, key)
// and each input carries its property, so Step dispatches to that property's model. The
// verdicts do not come from this run (each property has its own check, which stops at the
// first illegal partition), so with HTMLPath set a history is searched twice; measured on
// 50,000 operations the second search is under a tenth of the cost of writing the HTML
// (Porcupine's JSON encoding dominates), so sharing the search is not worth its coupling.

// tagged is an input of the combined model: the property's own input and its property.
type tagged struct {
	prop Property
	in   any
}

// PartitionKey makes tagged work with model.PartitionByKey.
func (t tagged) PartitionKey() string { return t.in.(model.Keyed).PartitionKey() }

// taggedState is a state of the combined model. Init cannot know which property a
// partition belongs to, so the initial state has no property and the first Step picks
// the property's own initial state.
type taggedState struct {
	prop Property
	s    any
}

func combined(models map[Property]porcupine.Model) porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			var parts [][]porcupine.Operation
			for _, p := range [...]Property{P1, P2, P3} {
				var ops []porcupine.Operation
				for _, op := range history {
					if op.Input.(tagged).prop == p {
						ops = append(ops, op)
					}
				}
				parts = append(parts, model.PartitionByKey(ops)...)
			}
			return parts
		},
		Init: func() any { return taggedState{} },
		Step: func(state, input, output any) (bool, any) {
			s, in := state.(taggedState), input.(tagged)
			m := models[in.prop]
			if s.prop == "" {
				s = taggedState{in.prop, m.Init()}
			}
			ok, next := m.Step(s.s, in.in, output)
			return ok, taggedState{in.prop, next}
		},
		Equal: func(a, b any) bool {
			sa, sb := a.(taggedState), b.(taggedState)
			return sa.prop == sb.prop && (sa.prop == "" || models[sa.prop].Equal(sa.s, sb.s))
		},
		Hash: func(state any) uint64 {
			s := state.(taggedState)
			if s.prop == "" || models[s.prop].Hash == nil {
				return 0
			}
			return models[s.prop].Hash(s.s)
		},
		DescribeOperation: func(input, output any) string {
			in := input.(tagged)
			return fmt.Sprintf("%s %s: %s", in.prop, in.PartitionKey(), models[in.prop].DescribeOperation(in.in, output))
		},
		DescribeState: func(state any) string {
			s := state.(taggedState)
			if s.prop == "" {
				return "initial"
			}
			return fmt.Sprintf("%s: %s", s.prop, models[s.prop].DescribeState(s.s))
		},
		DescribeOperationMetadata: func(info any) string {
			if m, ok := info.(histories.OpMeta); ok {
				return m.String()
			}
			return ""
		},
	}
}

// htmlBudget is how many operations of legal keys the visualisation shows at most: a
// page of a million operations is hundreds of megabytes that no browser opens. Keys with
// a violation are always in it.
const htmlBudget = 100_000

// writeHTML checks the combined model verbosely (with the same timeout; a timeout still
// gives a file, with the partial linearizations found so far) and writes the visualisation.
// Keys whose search ran out of time are not in it (searching them again for the picture
// would spend the same time again for nothing), nor legal keys beyond htmlBudget
// operations, the largest keys first to go. It returns how many keys it left out.
func (c *checker) writeHTML(path string, res Result) (omitted int, err error) {
	searches := c.searches()
	models := map[Property]porcupine.Model{}
	for _, s := range searches {
		models[s.prop] = s.model
	}
	lanes := histories.Lanes(c.h.Ops)
	var ops []porcupine.Operation
	include := func(s search, idx []int) {
		for _, op := range s.sel.Convert(c.h, idx, lanes) {
			op.Input = tagged{s.prop, op.Input}
			ops = append(ops, op)
		}
	}
	type key struct {
		s search
		p partition
	}
	var legal []key
	for si, s := range searches {
		for _, p := range c.partitions(si, s, res) {
			switch {
			case p.checked && p.verdict == porcupine.Unknown:
				omitted++
			case p.checked && p.verdict == porcupine.Ok:
				legal = append(legal, key{s, p})
			default:
				include(s, p.Ops)
			}
		}
	}
	slices.SortStableFunc(legal, func(a, b key) int { return cmp.Compare(len(a.p.Ops), len(b.p.Ops)) })
	budget := htmlBudget
	for _, l := range legal {
		if len(l.p.Ops) > budget {
			omitted++
			continue
		}
		budget -= len(l.p.Ops)
		include(l.s, l.p.Ops)
	}
	m := combined(models)
	_, info := porcupine.CheckOperationsVerbose(m, ops, c.opts.Timeout)
	info.AddAnnotations(c.annotations(res))
	if err := porcupine.VisualizePath(m, info, path); err != nil {
		return omitted, fmt.Errorf("write visualisation %s: %w", path, err)
	}
	return omitted, nil
}

// partitions are search si's partitions as Check left them, or, for a page drawn after
// the check (WriteHTML), as res tells them: the keys it names undecided out of time, every
// key legal when the property is ok, and unknown (drawn in full) when it is illegal.
func (c *checker) partitions(si int, s search, res Result) []partition {
	if c.parts != nil {
		return c.parts[si]
	}
	pr, _ := res.Property(s.prop)
	var out []partition
	for _, p := range s.sel.Partitions(c.h) {
		part := partition{Partition: p}
		switch {
		case slices.ContainsFunc(pr.Undecided, func(u Undecided) bool { return u.Key == p.Key }):
			part.checked, part.verdict = true, porcupine.Unknown
		case pr.Verdict == OK:
			part.checked, part.verdict = true, porcupine.Ok
		}
		out = append(out, part)
	}
	return out
}

// annotations are the fault windows (on a "faults" lane, and client-targeted ones also on
// the lanes of that client's processes they overlap) and the first violation of each
// illegal property (on a "violations" lane).
func (c *checker) annotations(res Result) []porcupine.Annotation {
	end := historyEnd(c.h)
	lanes := histories.Lanes(c.h.Ops)
	type span struct {
		client, lane int
		first, last  int64
	}
	var spans []span
	seen := make(map[int]int)
	for _, op := range c.h.Ops {
		i, ok := seen[op.Process]
		if !ok {
			i = len(spans)
			seen[op.Process] = i
			spans = append(spans, span{op.Client, lanes[op.Process], op.Call, op.Return})
		}
		spans[i].first, spans[i].last = min(spans[i].first, op.Call), max(spans[i].last, op.Return)
	}
	var out []porcupine.Annotation
	for _, w := range c.h.Faults {
		wEnd := w.End
		if wEnd < 0 {
			wEnd = max(end, w.Start)
		}
		desc := strings.TrimSpace(w.Kind + " " + w.Target)
		details := fmt.Sprintf("%s from %s to %s", desc, seconds(w.Start), seconds(wEnd))
		if w.Detail != "" {
			details += ": " + w.Detail
		}
		a := porcupine.Annotation{Tag: "faults", Start: w.Start, End: wEnd, Description: desc, Details: details, BackgroundColor: "#ffe0b2"}
		out = append(out, a)
		if client, ok := w.Client(); ok {
			for _, s := range spans {
				if s.client == client && s.first <= wEnd && w.Start <= s.last {
					a.Tag, a.ClientId, a.Description = "", s.lane, w.Kind
					out = append(out, a)
				}
			}
		}
	}
	for _, pr := range res.Properties {
		if pr.Verdict != Illegal || !located(pr.Property) {
			continue
		}
		out = append(out, porcupine.Annotation{
			Tag: "violations", Start: pr.At, End: max(pr.Until, pr.At),
			Description: fmt.Sprintf("%s illegal", pr.Property), Details: pr.Explanation, BackgroundColor: "#ffcdd2",
		})
	}
	return out
}

// located reports whether the checker places the first violation of p in time (At,
// Until), which the page shows on its "violations" lane: the properties of the lock and
// the store, not the job queue's.
func located(p Property) bool { return p == P1 || p == P2 || p == P3 || p == L1 }
