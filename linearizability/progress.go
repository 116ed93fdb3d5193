package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/histories"
)

// letGo is a moment after which a lease may still live for up to ttl: the end of a belief
// (the lease was granted by then), or the recorded return of an acquire or extend with an
// unknown outcome (it may have taken or renewed the lease at any moment before).
type letGo struct {
	at  int64
	ttl time.Duration
	op  int // the op that ended the belief or was unknown; -1 for the end of history
	why string
}

// deadline is when the lease is gone at the latest.
func (g letGo) deadline() int64 { return g.at + int64(g.ttl) }

// checkProgress checks L1 on the history itself, without Porcupine: an acquire that fails
// at a time when nobody believes it holds the lock, later than TTL plus slack after the
// last moment anyone may have held it, shows a lock that stays taken without an owner.
// The slack grows by Meta.ExpiryLag (servers that free expired leases on a timer). TTL is
// the larger of the failing acquire's and the lost lease's (each the lease granted when
// the client reported it, else Input.TTL, else Meta.TTL), so that mixed TTLs never cause
// a false alarm.
// A window's check (CheckFrom) also counts what the key's earlier windows left: from.
func checkProgress(h histories.History, bs map[string][]belief, slack time.Duration, from Carry) (Verdict, finding, int) {
	slack += h.Meta.ExpiryLag // servers that free expired leases on a timer (etcd) free them that late
	acquires := 0
	fails := make(map[string][]int)
	for i, op := range h.Ops {
		if op.Kind == histories.Acquire {
			acquires++
		}
		if op.Kind == histories.Acquire && op.Outcome == histories.Fail {
			fails[op.Key] = append(fails[op.Key], i)
		}
	}
	unknowns := unknownLetGos(h)
	if acquires == 0 {
		return NA, finding{text: "no acquires"}, 0
	}
	var first *finding
	var firstCall int64
	for key, fs := range fails {
		slices.SortFunc(fs, func(a, b int) int { return cmp.Or(cmp.Compare(h.Ops[a].Call, h.Ops[b].Call), cmp.Compare(a, b)) })
		f, call, ok := firstStuck(h, key, bs[key], unknowns[key], fs, slack, from)
		if ok && (first == nil || call < firstCall) {
			first, firstCall = &f, call
		}
	}
	if first == nil {
		return OK, finding{}, acquires
	}
	return Illegal, *first, acquires
}

// firstStuck finds the earliest failing acquire of one key that violates L1. Each question
// ("is anyone holding it during the attempt?", "when did the last one let go?") is a
// prefix maximum over sorted intervals, so a key costs O(n log n).
func firstStuck(h histories.History, key string, bs []belief, unknowns []letGo, fails []int, slack time.Duration, from Carry) (finding, int64, bool) {
	// Holding runs from the acquire's call (it may take effect then) to the belief's end.
	holds := slices.Clone(bs)
	slices.SortFunc(holds, func(a, b belief) int { return cmp.Compare(h.Ops[a.acquire].Call, h.Ops[b.acquire].Call) })
	holdEnd := prefixMax(len(holds), func(i int) int64 { return holds[i].end })

	ended := endedLetGos(h, bs)
	slices.SortFunc(ended, func(a, b letGo) int { return cmp.Compare(a.at, b.at) })
	slices.SortFunc(unknowns, func(a, b letGo) int { return cmp.Compare(h.Ops[a.op].Call, h.Ops[b.op].Call) })
	endedFront, unknownFront := newFrontier(ended), newFrontier(unknowns)

	for _, i := range fails {
		c := h.Ops[i]
		// Anyone whose holding overlaps the attempt explains the refusal.
		n := countWhile(len(holds), func(j int) bool { return h.Ops[holds[j].acquire].Call <= c.Return })
		if n > 0 && holdEnd[n-1] >= c.Call {
			continue
		}
		ttl := ttlOf(h, c)
		// Nobody can hold a lock before anyone tried to take it: it is free from the first
		// attempt on (clients may start long after the history's base: subprocess clients
		// take a while, and Redlock's first attempts can all split the vote).
		last := letGo{at: h.Ops[fails[0]].Call, ttl: ttl, op: -1, why: "the first attempt to take it"}
		if len(holds) > 0 {
			last.at = min(last.at, h.Ops[holds[0].acquire].Call)
		}
		if len(unknowns) > 0 {
			last.at = min(last.at, h.Ops[unknowns[0].op].Call)
		}
		if from.attempted {
			last.at = min(last.at, from.firstTry)
		}
		// Earlier windows' holders let go before this window began: each may excuse it.
		if g, ok := from.carriedBest(ttl); ok && g.deadline() > last.deadline() {
			last = g
		}
		// Beliefs that ended before the attempt, and unknown operations called before it
		// returned (they may have taken the lease while it ran).
		if g, ok := endedFront.best(ended, countWhile(len(ended), func(j int) bool { return ended[j].at < c.Call }), ttl); ok && g.deadline() > last.deadline() {
			last = g
		}
		if g, ok := unknownFront.best(unknowns, countWhile(len(unknowns), func(j int) bool { return h.Ops[unknowns[j].op].Call <= c.Return }), ttl); ok && g.deadline() > last.deadline() {
			last = g
		}
		if c.Call <= last.deadline()+int64(slack) {
			continue
		}
		text := fmt.Sprintf("lock %q stayed taken for %.3f s after %s at %s with ttl %s: process %d (client %d)'s acquire at %s failed with nobody holding it",
			key, float64(c.Call-last.at)/1e9, last.why, seconds(last.at), last.ttl, c.Process, c.Client, seconds(c.Call))
		shape := "acquire refused past the ttl"
		if r, ok := releaseInFlight(h, key, c.Call); ok {
			shape += " during a stuck release"
			text += fmt.Sprintf("; process %d (client %d) was stuck inside its release, called at %s and not returned by then: a holder that has let go but whose lock still renews the lease keeps it taken",
				r.Process, r.Client, seconds(r.Call))
		}
		if faults := activeFaults(h, c.Call); faults != "" {
			text += " (active faults: " + faults + ")"
		}
		return finding{text: text, shape: shape, at: last.at, until: c.Return}, c.Call, true
	}
	return finding{}, 0, false
}

// endedLetGos are the moments the beliefs bs (of one key) ended, each with the ttl of
// its last grant.
func endedLetGos(h histories.History, bs []belief) []letGo {
	ended := make([]letGo, len(bs))
	for i, b := range bs {
		ended[i] = letGo{at: b.end, ttl: ttlOf(h, h.Ops[b.lastGrant]), op: b.ender}
		if b.ender >= 0 {
			end := h.Ops[b.ender]
			ended[i].why = fmt.Sprintf("its last holder, process %d (client %d), let go (%s)", end.Process, end.Client, end.Kind)
		} else {
			ended[i].why = "its holder's belief" // lasts to the end: never before a failing acquire
		}
	}
	return ended
}

// unknownLetGos are, per key, the acquires and extends of unknown outcome as moments a
// lease may have been taken or renewed last: at its return, or when a fault that held
// its command back ended. op is the operation's index (firstStuck sorts them by call).
func unknownLetGos(h histories.History) map[string][]letGo {
	unknowns := make(map[string][]letGo)
	for i, op := range h.Ops {
		if (op.Kind != histories.Acquire && op.Kind != histories.Extend) || op.Outcome != histories.Unknown {
			continue
		}
		g := letGo{at: op.Return, ttl: ttlOf(h, op), op: i,
			why: fmt.Sprintf("process %d (client %d)'s %s with unknown outcome gave up", op.Process, op.Client, op.Kind)}
		if until, w, ok := heldBack(h, op); ok && until > g.at {
			g.at = until
			g.why = fmt.Sprintf("process %d (client %d)'s %s with unknown outcome may have taken effect only when %s on %s ended",
				op.Process, op.Client, op.Kind, w.Kind, w.Target)
		}
		unknowns[op.Key] = append(unknowns[op.Key], g)
	}
	return unknowns
}

// releaseInFlight is a release of key called before t that had not returned by t (or
// never did): a holder stuck inside its release.
func releaseInFlight(h histories.History, key string, t int64) (histories.Op, bool) {
	for _, op := range h.Ops {
		if op.Key == key && op.Kind == histories.Release && op.Call <= t && (op.Outcome == histories.Unknown || op.Return > t) {
			return op, true
		}
	}
	return histories.Op{}, false
}

// heldBack is how long a fault could have held back op, a command to the lock servers
// whose outcome is unknown: a paused lock server runs what it received when it continues,
// and a slowed or black-holed link to one delivers or drops it no earlier than the fault
// ends. So an unknown command may take effect until the latest end of such a fault active
// while it was in flight (the end of the history for one still active), never only by
// its return. Faults on the store, on other clients' links, and on replies are no such
// fault.
func heldBack(h histories.History, op histories.Op) (int64, histories.FaultWindow, bool) {
	var until int64
	var which histories.FaultWindow
	found := false
	for _, w := range h.Faults {
		if w.Start > op.Return || (w.End != -1 && w.End < op.Call) || !HoldsCommands(w, op.Client) {
			continue
		}
		end := w.End
		if end == -1 {
			end = historyEnd(h)
		}
		if !found || end > until {
			until, which, found = end, w, true
		}
	}
	return until, which, found
}

// HoldsCommands reports whether fault window w can hold back client's commands to a lock
// server: a server pause of one, or latency or a black hole on a link that may be one of
// the client's links to one. While one is active, an acquire or extend of unknown
// outcome it overlapped may still take effect (online.Cutter ends no window after it).
func HoldsCommands(w histories.FaultWindow, client int) bool {
	switch w.Kind {
	case "server-pause":
		return w.Target != "store"
	case "net-latency", "net-blackhole":
		from, to, ok := strings.Cut(w.Target, "->")
		if !ok || to == "store" || strings.Contains(w.Detail, " down on ") {
			return false
		}
		if n, isClient := strings.CutPrefix(from, "client:"); isClient && n != "*" && n != strconv.Itoa(client) {
			return false
		}
		return true
	}
	return false
}

// frontier answers "which of the first n let-go moments allows the lease to live longest,
// given the failing acquire's ttl" in O(1): at + max(g.ttl, ttl) is maximal either where
// at + g.ttl is or where at is, so it keeps the index of both maxima for every prefix.
type frontier struct{ byDeadline, byAt []int }

func newFrontier(gs []letGo) frontier {
	f := frontier{make([]int, len(gs)), make([]int, len(gs))}
	for i, g := range gs {
		f.byDeadline[i], f.byAt[i] = i, i
		if i == 0 {
			continue
		}
		if gs[f.byDeadline[i-1]].deadline() >= g.deadline() {
			f.byDeadline[i] = f.byDeadline[i-1]
		}
		if gs[f.byAt[i-1]].at >= g.at {
			f.byAt[i] = f.byAt[i-1]
		}
	}
	return f
}

// best returns the entry of gs[:n] whose lease may live longest, its ttl raised to ttl;
// false when n is 0.
func (f frontier) best(gs []letGo, n int, ttl time.Duration) (letGo, bool) {
	if n == 0 {
		return letGo{}, false
	}
	a, b := gs[f.byDeadline[n-1]], gs[f.byAt[n-1]]
	a.ttl, b.ttl = max(a.ttl, ttl), max(b.ttl, ttl)
	if b.deadline() > a.deadline() {
		return b, true
	}
	return a, true
}

// ttlOf is how long a lease op may have granted lives: the lease the servers granted when
// the client reported it (etcd rounds a TTL up to whole seconds), else the TTL op asked
// for, else the run's TTL.
func ttlOf(h histories.History, op histories.Op) time.Duration {
	if op.Output.Granted > 0 {
		return op.Output.Granted
	}
	if op.Input.TTL > 0 {
		return op.Input.TTL
	}
	return h.Meta.TTL
}

// prefixMax returns m with m[i] = max(v(0..i)).
func prefixMax(n int, v func(int) int64) []int64 {
	m := make([]int64, n)
	for i := range m {
		m[i] = v(i)
		if i > 0 {
			m[i] = max(m[i], m[i-1])
		}
	}
	return m
}

// countWhile is the length of the prefix of a sorted sequence for which in holds.
func countWhile(n int, in func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		mid := (lo + hi) / 2
		if in(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// activeFaults lists the fault windows of h active at t, e.g. "pause client 0".
func activeFaults(h histories.History, t int64) string {
	var names []string
	for _, w := range h.Faults {
		if w.Start <= t && (w.End == -1 || t <= w.End) {
			names = append(names, strings.TrimSpace(w.Kind+" "+w.Target))
		}
	}
	return strings.Join(names, ", ")
}
