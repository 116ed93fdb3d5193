package timeline

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/histories"
)

// Bounds: a picture's size and the time to draw it must not grow with the history. A
// real run has a handful of clients and a few hundred operations in its view (the
// tutorial's pictures hold at most 250 marks) and stays within them; a synthetic
// history of a million operations by thousands of clients is narrowed around its story
// instead, and what is left out is counted under the axis.
const (
	// maxOpsDrawn bounds the operations drawn in the view. The plot is about 1,100 px
	// wide: at 2,000 operations, two to a pixel column, marks already merge; with the
	// store's copy of each read and write and a tooltip each, that is some 3,000 SVG
	// elements and under a megabyte, which a browser opens at once and hovers without
	// lag.
	maxOpsDrawn = 2000
	// minView is the narrowest view: the axis' finest tick step.
	minView = int64(time.Microsecond)
	// maxClientLanes is as many clients as a plan may have (plan.MaxClients, 64) and a
	// job queue's producer: every run locklab records keeps a lane per client.
	maxClientLanes = 65
	// maxKeysDrawn bounds the keys whose leases and store operations are drawn once the
	// client lanes are bounded: as many as a plan may have (plan.MaxKeys).
	maxKeysDrawn = 64
)

// narrow shrinks view around the focus until at most maxOpsDrawn operations are drawn in
// it: it keeps the story's core and widens it evenly while that fits, else it keeps as
// much as fits evenly around the moment the story turns on. It counts the marks that
// stand in the view: operations in flight across its edges add a few per client lane,
// and the lanes are bounded too. Reports whether it narrowed.
func narrow(ops []histories.Op, view span, f focus) (span, bool) {
	if len(ops) <= maxOpsDrawn || marksIn(ops, view) <= maxOpsDrawn {
		return view, false
	}
	c := newMarkCounter(ops)
	fits := func(s span) bool { return c.in(s) <= maxOpsDrawn }
	at := min(max(f.at, view.from), view.to)
	core := span{min(max(f.core.from, view.from), at), max(min(f.core.to, view.to), at)}
	inner, least := core, int64(0)
	if !fits(core) {
		inner, least = span{at, at}, minView/2 // the moment itself is drawn, however busy
	}
	w := widest(least, max(inner.from-view.from, view.to-inner.to), func(w int64) bool { return fits(around(inner, view, w)) })
	if s := around(inner, view, w); s.to-s.from >= minView {
		return s, true
	}
	return around(span{at, at}, view, minView/2), true
}

// around is inner widened by w on either side, within outer.
func around(inner, outer span, w int64) span {
	return span{max(outer.from, inner.from-w), min(outer.to, inner.to+w)}
}

// widest is the largest w in [lo, hi] for which fits holds, fits(lo) taken for granted;
// fits must hold for every w below one for which it holds.
func widest(lo, hi int64, fits func(int64) bool) int64 {
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// markAt is the moment an operation's mark stands at: an acquire's return, where its
// belief starts, unless its outcome is unknown; any other operation's call.
func markAt(op histories.Op) int64 {
	if op.Kind == histories.Acquire && op.Outcome != histories.Unknown {
		return op.Return
	}
	return op.Call
}

// marksIn counts the operations whose marks stand in s.
func marksIn(ops []histories.Op, s span) int {
	n := 0
	for _, op := range ops {
		if s.contains(markAt(op)) {
			n++
		}
	}
	return n
}

// markCounter counts the marks in a stretch in O(log n), from their moments in order.
type markCounter []int64

func newMarkCounter(ops []histories.Op) markCounter {
	c := make(markCounter, len(ops))
	for i, op := range ops {
		c[i] = markAt(op)
	}
	slices.Sort(c)
	return c
}

func (c markCounter) in(s span) int {
	from, _ := slices.BinarySearch(c, s.from)
	after, _ := slices.BinarySearch(c, s.to+1)
	return after - from
}

// omitted counts what the bounds on lanes leave out of the view.
type omitted struct {
	clients, allClients   int
	ops, sections, faults int // of the clients not drawn: operations whose marks stand in the view, beliefs and faults overlapping it
	keys, allKeys         int
	leases, storeOps      int // of the keys not drawn: leases overlapping the view, reads and writes whose marks stand in it
}

// lines are what o says under the axis, none when nothing is left out.
func (o *omitted) lines() []string {
	if o == nil {
		return nil
	}
	var out []string
	if o.clients > 0 {
		faults := ""
		if o.faults > 0 {
			faults = fmt.Sprintf(", %d faults", o.faults)
		}
		out = append(out, fmt.Sprintf("not drawn: %d of %d clients, with %d operations, %d critical sections%s in the view",
			o.clients, o.allClients, o.ops, o.sections, faults))
	}
	if o.keys > 0 {
		out = append(out, fmt.Sprintf("not drawn on the server and store lanes: %d of %d keys, with %d leases and %d store operations in the view",
			o.keys, o.allKeys, o.leases, o.storeOps))
	}
	return out
}

// boundLanes keeps at most maxClientLanes client lanes, and with them only the keys of
// the clients drawn on the server and store lanes (whose rows grow with the keys held at
// once); it counts what it leaves out of the view. keys are the history's lock and store
// keys.
func (m *model) boundLanes(h histories.History, inView []int, keys map[string]bool) {
	if len(m.clients) <= maxClientLanes {
		return
	}
	drawn := m.chooseClients(h, inView)
	o := &omitted{clients: len(m.clients) - len(drawn), allClients: len(m.clients)}
	for _, i := range inView {
		if op := h.Ops[i]; !drawn[op.Client] && m.view.contains(markAt(op)) {
			o.ops++
		}
	}
	var kept []clientLane
	for _, l := range m.clients {
		if drawn[l.client] {
			kept = append(kept, l)
			continue
		}
		for _, b := range l.beliefs {
			if m.view.overlaps(b.start, b.end) {
				o.sections++
			}
		}
		for _, f := range l.faults {
			if m.view.overlaps(f.from, f.to) {
				o.faults++
			}
		}
	}
	m.clients = kept
	m.keys = m.chooseKeys(h, inView, keys)
	o.keys, o.allKeys = len(keys)-len(m.keys), len(keys)
	for s := range m.servers {
		m.servers[s].leases = slices.DeleteFunc(m.servers[s].leases, func(l lease) bool {
			if m.keys[l.key] {
				return false
			}
			if m.view.overlaps(l.start, l.end()) {
				o.leases++
			}
			return true
		})
	}
	for _, i := range inView {
		if op := h.Ops[i]; op.Kind.IsStore() && !m.keys[op.Key] && m.view.contains(op.Call) {
			o.storeOps++
		}
	}
	m.omitted = o
}

// chooseClients picks the client lanes drawn, in this order until there are
// maxClientLanes: the clients the first violation names, those that believed they held
// its lock (a key it names, else any) when it started, those with a fault in the view,
// those with operations (whose marks stand in it) or beliefs in it; each group by id.
func (m *model) chooseClients(h histories.History, inView []int) map[int]bool {
	var named, believers, faulted, busy []int
	if len(m.violations) > 0 {
		v := m.violations[0]
		named = namedClients(v.prop.Explanation)
		keys := quoted(v.prop.Explanation)
		involved := func(b belief) bool {
			return b.start <= v.from && b.end >= v.from && (len(keys) == 0 || slices.Contains(keys, b.key))
		}
		for _, l := range m.clients {
			if v.placed && slices.ContainsFunc(l.beliefs, involved) {
				believers = append(believers, l.client)
			}
		}
	}
	for _, l := range m.clients {
		switch {
		case slices.ContainsFunc(l.faults, func(f fault) bool { return m.view.overlaps(f.from, f.to) }):
			faulted = append(faulted, l.client)
		case slices.ContainsFunc(l.beliefs, func(b belief) bool { return m.view.overlaps(b.start, b.end) }):
			busy = append(busy, l.client)
		}
	}
	for _, i := range inView {
		if op := h.Ops[i]; m.view.contains(markAt(op)) {
			busy = append(busy, op.Client)
		}
	}
	drawn := map[int]bool{}
	for _, group := range [][]int{named, believers, faulted, busy} {
		slices.Sort(group)
		for _, c := range group {
			if len(drawn) == maxClientLanes {
				return drawn
			}
			if m.client(c) != nil {
				drawn[c] = true
			}
		}
	}
	return drawn
}

// chooseKeys picks the keys drawn on the server and store lanes, at most maxKeysDrawn:
// those the first violation names, then those of the drawn clients' beliefs and
// operations in the view, lane by lane.
func (m *model) chooseKeys(h histories.History, inView []int, keys map[string]bool) map[string]bool {
	drawn := map[string]bool{}
	add := func(k string) {
		if len(drawn) < maxKeysDrawn && keys[k] {
			drawn[k] = true
		}
	}
	if len(m.violations) > 0 {
		for _, k := range quoted(m.violations[0].prop.Explanation) {
			add(k)
		}
	}
	used := map[int][]string{} // keys of each client's operations in the view, in call order
	for _, i := range inView {
		if op := h.Ops[i]; op.Kind.IsLock() || op.Kind.IsStore() {
			used[op.Client] = append(used[op.Client], op.Key)
		}
	}
	for _, l := range m.clients {
		for _, b := range l.beliefs {
			if m.view.overlaps(b.start, b.end) {
				add(b.key)
			}
		}
		for _, k := range used[l.client] {
			add(k)
		}
	}
	return drawn
}

// namedClients are the clients a violation's explanation names ("process 2 (client 1)"):
// the result says whom a violation involves only in words.
func namedClients(text string) []int {
	var out []int
	for {
		_, rest, ok := strings.Cut(text, "client ")
		if !ok {
			return out
		}
		digits := rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789"))]
		if n, err := strconv.Atoi(digits); err == nil {
			out = append(out, n)
		}
		text = rest
	}
}

// quoted are the Go-quoted strings in text: the keys an explanation names (lock "k0").
func quoted(text string) []string {
	var out []string
	for {
		i := strings.IndexByte(text, '"')
		if i < 0 {
			return out
		}
		q, err := strconv.QuotedPrefix(text[i:])
		if err != nil {
			text = text[i+1:]
			continue
		}
		s, _ := strconv.Unquote(q) // a quoted prefix unquotes
		out = append(out, s)
		text = text[i+len(q):]
	}
}
