package timeline

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
)

// The picture is computed in two steps: build turns a run into a model in time alone
// (lanes, beliefs, leases, danger zones, faults, violations, the window drawn), which the
// tests check directly; svg.go then lays it out in pixels.

// span is a stretch of time, in ns since the run's base.
type span struct{ from, to int64 }

// model is a run's picture before layout.
type model struct {
	title      string
	meta       histories.Meta
	result     linearizability.Result
	end        int64 // the last moment the run records
	view       span  // the stretch drawn
	before     *summary
	after      *summary
	clients    []clientLane
	servers    []serverLane
	store      storeLane
	global     []fault     // faults that belong to no single lane
	violations []violation // illegal properties, placed ones first by At
	multiKey   bool
	notes      []string // what the picture cannot know, for the legend
	// When the client lanes are bounded (bound.go): the keys drawn on the server and
	// store lanes (nil: every key) and what the bounds leave out of the view.
	keys    map[string]bool
	omitted *omitted
}

type clientLane struct {
	client  int
	beliefs []belief
	marks   []mark
	faults  []fault
}

type serverLane struct {
	name   string
	leases []lease
	marks  []mark // clock jumps
	faults []fault
}

type storeLane struct {
	marks  []mark
	faults []fault
}

// belief is a stretch in which a process believed it held a lock (as in
// linearizability/beliefs.go): from its acquire ok's Return to the Call of the release,
// failed extend or crash that ended it, or to the end of the history.
type belief struct {
	process, client int
	key             string
	fence           int64
	granted         int64 // the acquire's Call
	start, end      int64
	ender           histories.Kind // "" when it lasted to the end
	danger          []span         // believed, but the server(s) no longer held the lease
}

// lease is a lock as one server held it.
type lease struct {
	server          int // index into model.servers
	process, client int
	key             string
	fence           int64
	start           int64 // the grant's Call: the server set the key between call and return
	expiry          int64 // by the server's clock, after extends and clock jumps
	cut             int64 // ended early (release, a grant to another, the server killed); MaxInt64 if not
	why             string
	unsure          bool // drawn dashed: which servers hold it is not recorded, or the cluster holds it
	renewed         bool // the implementation renews it in the background, unrecorded
	superseded      bool // a later grant of its key on its server
}

// end is where the lease stops being drawn.
func (l lease) end() int64 { return min(l.expiry, l.cut) }

// mark is one operation (or a clock jump) drawn at a point or over a short span.
type mark struct {
	at, until int64
	kind      histories.Kind
	outcome   histories.Outcome
	label     string
	title     string
	class     string // ok, fail, unknown, minor
}

type fault struct {
	w         histories.FaultWindow
	from, to  int64 // to is the end of the run while still active
	label     string
	title     string
	everyLane bool
}

type violation struct {
	prop     linearizability.PropertyResult
	n        int  // its number in the picture, 1 for the first
	placed   bool // the result gives its span
	from, to int64
}

// build computes the model of run.
func build(run Run) *model {
	h := run.History
	m := &model{title: run.Title, meta: h.Meta, result: run.Result}
	if m.title == "" {
		m.title = fmt.Sprintf("%s · fencing %s", cmp.Or(h.Meta.Impl, "run"), cmp.Or(h.Meta.Fencing, run.Result.Fencing, "?"))
	}
	m.end = historyEnd(h)
	order := histories.ByCall(h.Ops)
	keys := map[string]bool{}
	for _, op := range h.Ops {
		if op.Kind.IsLock() || op.Kind.IsStore() {
			keys[op.Key] = true
		}
	}
	m.multiKey = len(keys) > 1
	m.clients = clientLanes(h)
	m.servers = serverLanes(h)
	bs := beliefsOf(h, m.end)
	leases, notes := leasesOf(h, order, m.servers, m.end)
	m.notes = notes
	quorum := quorumOf(h.Meta.Topology, len(m.servers))
	type holder struct {
		process int
		key     string
	}
	byHolder := map[holder]holderLeases{} // a belief's danger depends on its own process's leases alone
	for _, l := range leases {
		hl := byHolder[holder{l.process, l.key}]
		hl.leases, hl.longest = append(hl.leases, l), max(hl.longest, l.end()-l.start)
		byHolder[holder{l.process, l.key}] = hl
	}
	for i := range bs {
		bs[i].danger = danger(bs[i], byHolder[holder{bs[i].process, bs[i].key}], quorum)
	}
	for _, l := range leases {
		m.servers[l.server].leases = append(m.servers[l.server].leases, l)
	}
	for _, b := range bs {
		c := m.client(b.client)
		c.beliefs = append(c.beliefs, b)
	}
	m.violations = violations(run.Result)
	var narrowed string
	m.view, m.before, m.after, narrowed = crop(h, bs, m.violations, m.end)
	if narrowed != "" {
		m.notes = append(m.notes, fmt.Sprintf("a busy run: the view is narrowed around %s to hold at most %d operations", narrowed, maxOpsDrawn))
	}
	m.placeFaults(h.Faults)
	inView := m.opsInView(h, order) // the rest is not drawn: the crop's summary counts it
	m.boundLanes(h, inView, keys)
	for _, i := range inView {
		m.addMark(h.Ops[i])
	}
	return m
}

// opsInView are the operations the view overlaps, in call order.
func (m *model) opsInView(h histories.History, order []int) []int {
	var out []int
	for _, i := range order {
		if op := h.Ops[i]; m.view.overlaps(op.Call, op.Return) {
			out = append(out, i)
		}
	}
	return out
}

// addMark draws op on its client's lane, and a read or write on the store's, when they
// are drawn.
func (m *model) addMark(op histories.Op) {
	mk, ok := opMark(op, m.multiKey)
	if !ok {
		return
	}
	if c := m.client(op.Client); c != nil {
		c.marks = append(c.marks, mk)
	}
	if (op.Kind == histories.Write || op.Kind == histories.Read) && (m.keys == nil || m.keys[op.Key]) {
		mk.label = fmt.Sprintf("c%d %s", op.Client, mk.label)
		if op.Kind == histories.Read {
			mk.label = ""
		}
		m.store.marks = append(m.store.marks, mk)
	}
}

// overlaps reports whether the stretch from–to overlaps s.
func (s span) overlaps(from, to int64) bool { return to >= s.from && from <= s.to }

// contains reports whether the moment t is in s.
func (s span) contains(t int64) bool { return t >= s.from && t <= s.to }

// client returns the lane of client c, nil when it is not drawn.
func (m *model) client(c int) *clientLane {
	i, ok := slices.BinarySearchFunc(m.clients, c, func(l clientLane, c int) int { return cmp.Compare(l.client, c) })
	if !ok {
		return nil
	}
	return &m.clients[i]
}

// historyEnd is the last moment the run records: a call, a return, a fault's start or end.
func historyEnd(h histories.History) int64 {
	var end int64
	for _, op := range h.Ops {
		end = max(end, op.Call, op.Return)
	}
	for _, f := range h.Faults {
		end = max(end, f.Start, f.End)
	}
	return end
}

// clientLanes has one lane per client from 0 to the largest id in the ops or a
// client:N fault target (the job queue's producer is one more client).
func clientLanes(h histories.History) []clientLane {
	n := -1
	for _, op := range h.Ops {
		n = max(n, op.Client)
	}
	for _, f := range h.Faults {
		if c, ok := f.Client(); ok && c < 1000 {
			n = max(n, c)
		}
	}
	lanes := make([]clientLane, n+1)
	for i := range lanes {
		lanes[i].client = i
	}
	return lanes
}

// serverLanes are Meta.Servers in order; an older history without them has lock-0 and
// any lock-N a fault names.
func serverLanes(h histories.History) []serverLane {
	names := slices.Clone(h.Meta.Servers)
	if len(names) == 0 {
		names = []string{"lock-0"}
		for _, f := range h.Faults {
			for _, side := range strings.Split(f.Target, "->") {
				if n, ok := strings.CutPrefix(side, "lock-"); ok {
					if _, err := strconv.Atoi(n); err == nil && !slices.Contains(names, side) {
						names = append(names, side)
					}
				}
			}
		}
		slices.SortFunc(names[1:], func(a, b string) int {
			x, _ := strconv.Atoi(strings.TrimPrefix(a, "lock-"))
			y, _ := strconv.Atoi(strings.TrimPrefix(b, "lock-"))
			return cmp.Compare(x, y)
		})
	}
	lanes := make([]serverLane, len(names))
	for i, n := range names {
		lanes[i].name = n
	}
	return lanes
}

// beliefsOf is linearizability's beliefs, those the checkers hold P1 to, as drawn: one
// lasting to the end of the history lasts to the end of the picture.
func beliefsOf(h histories.History, end int64) []belief {
	lb := linearizability.Beliefs(h)
	out := make([]belief, 0, len(lb))
	for _, b := range lb {
		acq := h.Ops[b.Acquire]
		d := belief{process: b.Process, client: acq.Client, key: b.Key, fence: acq.Output.Fence, granted: acq.Call, start: b.Start, end: b.End}
		if b.Ender < 0 {
			d.end = max(end, b.Start)
		} else {
			d.ender = h.Ops[b.Ender].Kind
		}
		out = append(out, d)
	}
	return out
}

// quorumOf is how many servers must hold a lease for the lock to be held: a majority of
// Redlock's independent nodes, else one (a single server, the primary, or the cluster).
func quorumOf(topology string, servers int) int {
	if strings.HasPrefix(topology, "nodes:") && servers > 0 {
		return servers/2 + 1
	}
	return 1
}

// holderLeases are one process's leases of one key, in grant order, with the longest.
type holderLeases struct {
	leases  []lease
	longest int64
}

// danger is the part of b in which fewer than quorum of its process's leases on b's key
// are held: the client believes but the servers gave the lock up. Leases whose servers
// are not recorded are all alike, so one of them is enough.
func danger(b belief, hl holderLeases, quorum int) []span {
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	granted := 0
	// The leases are in grant order: those that overlap the belief started before its end
	// and no longer than the longest lease before its start.
	hi := sort.Search(len(hl.leases), func(i int) bool { return hl.leases[i].start >= b.end })
	for i := hi - 1; i >= 0 && hl.leases[i].start >= b.start-hl.longest; i-- {
		l := hl.leases[i]
		if l.process != b.process || l.key != b.key || l.end() <= b.start {
			continue
		}
		if l.unsure {
			quorum = 1
		}
		granted++
		edges = append(edges, edge{l.start, 1}, edge{l.end(), -1})
	}
	quorum = max(1, min(quorum, granted))
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	var out []span
	held, from := 0, b.start
	add := func(to int64) {
		if to > from {
			out = append(out, span{from, to})
		}
	}
	for _, e := range edges {
		was := held >= quorum
		held += e.delta
		at := min(max(e.at, b.start), b.end)
		switch now := held >= quorum; {
		case !was && now:
			add(at)
		case was && !now:
			from = at
		}
	}
	if held < quorum {
		add(b.end)
	}
	return out
}

// opMark is op drawn on its client's lane; false for what is not drawn there.
func opMark(op histories.Op, multiKey bool) (mark, bool) {
	mk := mark{at: markAt(op), until: op.Return, kind: op.Kind, outcome: op.Outcome, class: string(op.Outcome)}
	key := ""
	if multiKey {
		key = " " + op.Key
	}
	q := map[histories.Outcome]string{histories.OK: "✓", histories.Fail: "✗", histories.Unknown: "?"}[op.Outcome]
	switch op.Kind {
	case histories.Acquire:
		switch op.Outcome {
		case histories.OK:
			mk.label = strings.TrimSpace(key) // the belief bar starts here
			if op.Output.Fence > 0 {
				mk.label = fmt.Sprintf("f %d%s", op.Output.Fence, key)
			}
		case histories.Fail:
			mk.class = "minor"
		default:
			mk.label = "acq ?" + key
		}
	case histories.Release:
		mk.label = "rel" + key
		if op.Outcome != histories.OK {
			mk.label += " " + q
		}
	case histories.Extend:
		mk.label = "ext " + q + key
	case histories.Read:
		mk.class = "minor"
		if op.Outcome == histories.Fail {
			mk.class = "fail"
		}
	case histories.Write:
		mk.label = fmt.Sprintf("w %d", op.Input.Value)
		if op.Input.Fence > 0 {
			mk.label += fmt.Sprintf(" f%d", op.Input.Fence)
		}
		mk.label += " " + q
		if op.Outcome == histories.Fail {
			mk.label += " refused"
		}
	case histories.Crash:
		mk.label = "✕ crash"
	case histories.Effect:
		mk.label = fmt.Sprintf("effect %s %s", op.Key, q)
		if op.Outcome == histories.OK {
			mk.label = fmt.Sprintf("effect %s #%d ✓", op.Key, op.Output.Value)
		}
	default: // the job queue's other steps: small, told in the tooltip
		mk.class = "minor"
	}
	mk.title = opTitle(op)
	return mk, true
}

// opTitle is an operation's tooltip: what, when, with what.
func opTitle(op histories.Op) string {
	var b strings.Builder
	fmt.Fprintf(&b, "client %d (process %d) %s %s: %s, %s–%s", op.Client, op.Process, op.Kind, op.Key, op.Outcome, secs(op.Call), secs(op.Return))
	if op.Input.TTL > 0 {
		fmt.Fprintf(&b, ", ttl %s", op.Input.TTL)
	}
	if op.Kind == histories.Write {
		fmt.Fprintf(&b, ", value %d over %d", op.Input.Value, op.Input.Base)
	}
	if op.Input.Fence > 0 {
		fmt.Fprintf(&b, ", fence %d", op.Input.Fence)
	}
	if op.Output.Fence > 0 {
		fmt.Fprintf(&b, ", granted fence %d", op.Output.Fence)
	}
	if op.Kind == histories.Read && op.Outcome == histories.OK {
		fmt.Fprintf(&b, ", read %d", op.Output.Value)
	}
	if len(op.Output.Nodes) > 0 {
		fmt.Fprintf(&b, ", nodes %v", op.Output.Nodes)
	}
	if op.Output.Error != "" {
		fmt.Fprintf(&b, " (%s)", op.Output.Error)
	}
	return b.String()
}

// placeFaults puts each fault window on the lane it targets; links on the lane of the
// side they name, the rest across every lane.
func (m *model) placeFaults(ws []histories.FaultWindow) {
	server := func(name string) int {
		return slices.IndexFunc(m.servers, func(s serverLane) bool { return s.name == name })
	}
	for _, w := range ws {
		f := fault{w: w, from: w.Start, to: w.End, title: faultTitle(w)}
		if f.to < 0 {
			f.to = m.end
		}
		from, to, link := strings.Cut(w.Target, "->")
		f.label = faultLabel(w, from, to, link)
		c, isClient := w.Client()
		switch {
		case isClient && m.client(c) != nil:
			m.client(c).faults = append(m.client(c).faults, f)
		case isClient: // a client id past clientLanes' limit has no lane
			f.everyLane = true
			m.global = append(m.global, f)
		case from == "store" || (!link && to == "store"):
			m.store.faults = append(m.store.faults, f)
		case server(from) >= 0:
			m.servers[server(from)].faults = append(m.servers[server(from)].faults, f)
		case link && to == "store":
			m.store.faults = append(m.store.faults, f)
		case link && server(to) >= 0:
			m.servers[server(to)].faults = append(m.servers[server(to)].faults, f)
		default:
			f.everyLane = true
			m.global = append(m.global, f)
		}
		if w.Kind == "server-clock" && w.Offset != 0 && server(w.Target) >= 0 {
			s := &m.servers[server(w.Target)]
			s.marks = append(s.marks, mark{at: w.Start, until: w.Start, title: f.title, class: "jump"}) // the band says "clock +2s"
		}
	}
}

// faultLabel is a short name for a fault, from its kind (and its link).
func faultLabel(w histories.FaultWindow, from, to string, link bool) string {
	d := ""
	if w.End > w.Start {
		d = " " + dur(w.End-w.Start)
	}
	if link {
		what := map[string]string{"net-latency": "slowed", "net-blackhole": "cut", "net-reset": "reset", "reply-delay": "replies delayed"}[w.Kind]
		what = cmp.Or(what, w.Kind)
		switch {
		case strings.HasPrefix(from, "client:"):
			return fmt.Sprintf("link to %s %s%s", to, what, d)
		case from == "peers":
			return fmt.Sprintf("link to peers %s%s", what, d)
		}
		return fmt.Sprintf("link %s→%s %s%s", from, to, what, d)
	}
	switch w.Kind {
	case "client-pause":
		return "pause" + d
	case "client-crash":
		return "crash"
	case "client-clock", "server-clock":
		if w.Offset != 0 {
			return "clock " + signed(w.Offset)
		}
		return "clock"
	case "server-pause":
		return "frozen" + d
	case "server-crash":
		return "killed" + d
	case "failover":
		if w.Promoted != "" {
			return "failover → " + w.Promoted
		}
		return "failover"
	}
	return w.Kind + d
}

func faultTitle(w histories.FaultWindow) string {
	end := "still active at the end"
	if w.End >= 0 {
		end = "until " + secs(w.End)
	}
	s := fmt.Sprintf("%s on %s from %s %s", w.Kind, w.Target, secs(w.Start), end)
	if w.Detail != "" {
		s += ": " + w.Detail
	}
	return s
}

// violations are the illegal properties; those with a span first, by At.
func violations(r linearizability.Result) []violation {
	var vs []violation
	for _, p := range r.Properties {
		if p.Verdict != linearizability.Illegal {
			continue
		}
		vs = append(vs, violation{prop: p, placed: p.At > 0 || p.Until > 0, from: p.At, to: max(p.Until, p.At)})
	}
	slices.SortStableFunc(vs, func(a, b violation) int {
		if a.placed != b.placed {
			if a.placed {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.from, b.from)
	})
	for i := range vs {
		vs[i].n = i + 1
	}
	return vs
}

// secs is ns since the base as seconds, to the millisecond.
func secs(ns int64) string { return fmt.Sprintf("%.3f s", float64(ns)/1e9) }

// dur is a duration rounded for a label: 1.5s, 800ms.
func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}

func signed(d time.Duration) string {
	if d < 0 {
		return "−" + dur(int64(-d))
	}
	return "+" + dur(int64(d))
}

// never is a lease not cut early.
const never = math.MaxInt64
