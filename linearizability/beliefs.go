package linearizability

import (
	"cmp"
	"slices"

	"github.com/locklab/locklab/histories"
)

// A belief is one stretch of time during which a process believed it held a lock: from the
// return of its acquire ok to the call of the operation that ended it (release, extend
// fail, crash), or to the end of the history. An extend of unknown outcome ends nothing:
// its caller goes on believing until it releases. The believer is the lock process: the
// recorder keeps it across unknown store operations and extends (see histories.Stream).
type belief struct {
	key       string
	believer  int
	acquire   int   // index in History.Ops of the acquire ok that started it
	lastGrant int   // index of the last acquire or extend ok in it: its TTL bounds the lease
	start     int64 // the acquire's return
	end       int64 // the ending operation's call, or the end of the history
	ender     int   // index of the ending operation, -1 if it lasted to the end
}

// beliefs returns every belief in h, per key, ordered by start.
func beliefs(h histories.History) map[string][]belief {
	type slot struct {
		key      string
		believer int
	}
	open := make(map[slot]*belief)
	out := make(map[string][]belief)
	closeAt := func(s slot, at int64, ender int) {
		if b := open[s]; b != nil {
			b.end, b.ender = at, ender
			out[s.key] = append(out[s.key], *b)
			delete(open, s)
		}
	}
	for _, i := range histories.ByCall(h.Ops) {
		op := h.Ops[i]
		s := slot{op.Key, op.Process}
		switch {
		case !op.Kind.IsLock():
		case op.Kind == histories.Acquire && op.Outcome == histories.OK:
			if b := open[s]; b != nil {
				b.lastGrant = i // acquired again while believing: still one belief
			} else {
				open[s] = &belief{key: op.Key, believer: s.believer, acquire: i, lastGrant: i, start: op.Return}
			}
		case op.Kind == histories.Extend && op.Outcome == histories.OK:
			if b := open[s]; b != nil {
				b.lastGrant = i
			}
		case op.Kind == histories.Extend && op.Outcome == histories.Unknown:
		case op.Kind == histories.Release, op.Kind == histories.Extend, op.Kind == histories.Crash:
			closeAt(s, op.Call, i)
		}
	}
	end := historyEnd(h)
	for s := range open {
		closeAt(s, end, -1)
	}
	for _, bs := range out {
		slices.SortFunc(bs, func(a, b belief) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.acquire, b.acquire)) })
	}
	return out
}

// historyEnd is the last moment the history records: the latest call or recorded return.
func historyEnd(h histories.History) int64 {
	var end int64
	for _, op := range h.Ops {
		end = max(end, op.Call, op.Return)
	}
	return end
}

// Belief is one belief of a history (see belief): what a picture of the run draws.
type Belief struct {
	Key        string
	Process    int   // the believer: the lock process
	Acquire    int   // index in History.Ops of the acquire ok that started it
	Start, End int64 // the acquire's return; the call of what ended it, or the history's end
	Ender      int   // index of the operation that ended it, -1 if it lasted to the end
}

// Beliefs lists every belief of h, ordered by start: the stretches the checkers hold P1
// to.
func Beliefs(h histories.History) []Belief {
	var out []Belief
	for _, bs := range beliefs(h) {
		for _, b := range bs {
			out = append(out, Belief{Key: b.key, Process: b.believer, Acquire: b.acquire, Start: b.start, End: b.end, Ender: b.ender})
		}
	}
	slices.SortFunc(out, func(a, b Belief) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Acquire, b.Acquire))
	})
	return out
}
