package linearizability

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/locklab/locklab/histories"
)

// checkAnswers is P6, honest answers: no extend or release of a lease is answered ok once
// another process was granted the same lock after that lease was last granted. The
// lock's own answers then contradict each other: the grant said the lock was free, the
// later ok says the lease lasted (extend) or was still there to give back (release).
//
// P1 cannot see this. It looks at beliefs, which a paused holder keeps past its lease
// whatever the lock answers later, so a pause past the TTL breaks P1 for a lock that
// refuses the late extend as for one that grants it. P6 tells them apart: a correct
// lock refuses a late extend or release (its token is gone); a lock that answers ok
// tells its holder "still yours" when it cannot be, and a holder that extends goes on
// writing.
//
// Only certain orders count: the other grant is an acquire ok called after the lease's
// last grant returned and returned before the extend or release was called. An extend
// ok found impossible is not taken as a grant; one of unknown outcome keeps the lease
// as it was (the caller goes on with it); any other end of the lease (a refusal, an
// unknown release, a crash) closes it. Checked on the history directly, not by
// Porcupine.
func checkAnswers(h histories.History) PropertyResult {
	start := time.Now()
	r := PropertyResult{Property: P6}
	// Every acquire ok, per key, in call order: the grants an answer is held against.
	grants := map[string][]int{}
	for i, op := range h.Ops {
		if op.Kind == histories.Acquire && op.Outcome == histories.OK {
			grants[op.Key] = append(grants[op.Key], i)
		}
	}
	for _, idx := range grants {
		slices.SortFunc(idx, func(a, b int) int { return cmp.Or(cmp.Compare(h.Ops[a].Call, h.Ops[b].Call), cmp.Compare(a, b)) })
	}
	type slot struct {
		key     string
		process int
	}
	last := map[slot]int{} // the lease's last grant (acquire or extend ok) per lock process
	var bad []impossible
	for _, i := range histories.ByCall(h.Ops) {
		op := h.Ops[i]
		if !op.Kind.IsLock() {
			continue
		}
		s := slot{op.Key, op.Process}
		switch {
		case op.Kind == histories.Acquire && op.Outcome == histories.OK:
			last[s] = i
		case op.Kind == histories.Extend && op.Outcome == histories.Unknown:
		case (op.Kind == histories.Extend || op.Kind == histories.Release) && op.Outcome == histories.OK:
			g, open := last[s]
			if !open {
				// An answer for a lease this process was never granted: P1's model judges
				// it (release or extend ok by a non-holder).
				continue
			}
			r.Ops++
			if other, ok := grantBetween(h, grants[op.Key], op.Process, h.Ops[g].Return, op.Call); ok {
				bad = append(bad, impossible{answer: i, grant: g, other: other})
				if op.Kind == histories.Release {
					delete(last, s)
				}
				continue
			}
			if op.Kind == histories.Extend {
				last[s] = i
			} else {
				delete(last, s)
			}
		default:
			delete(last, s) // refused, unknown release, crash: the lease is over
		}
	}
	r.Elapsed = time.Since(start)
	switch {
	case len(bad) > 0:
		r.Verdict = Illegal
		f := describeImpossible(h, bad)
		r.Explanation, r.Shape, r.At, r.Until = f.text, f.shape, f.at, f.until
	case r.Ops == 0:
		r.Verdict, r.Explanation = NA, "no extend or release of a granted lease was answered ok"
	default:
		r.Verdict = OK
	}
	return r
}

// impossible is one answer P6 refuses: the extend or release ok at index answer, of the
// lease last granted at index grant, after the acquire ok at index other.
type impossible struct{ answer, grant, other int }

// grantBetween finds the first acquire ok among idx (one key's, in call order) of a
// process other than p that was called after from and returned before to.
func grantBetween(h histories.History, idx []int, p int, from, to int64) (int, bool) {
	k, _ := slices.BinarySearchFunc(idx, from+1, func(i int, t int64) int { return cmp.Compare(h.Ops[i].Call, t) })
	best, found := 0, false
	for ; k < len(idx) && h.Ops[idx[k]].Call < to; k++ {
		op := h.Ops[idx[k]]
		if op.Process != p && op.Return < to && (!found || op.Return < h.Ops[best].Return) {
			best, found = idx[k], true
		}
	}
	return best, found
}

// describeImpossible words the first impossible answer, and how many there were.
func describeImpossible(h histories.History, bad []impossible) finding {
	first := slices.MinFunc(bad, func(a, b impossible) int {
		return cmp.Or(cmp.Compare(h.Ops[a.answer].Call, h.Ops[b.answer].Call), cmp.Compare(a.answer, b.answer))
	})
	ans, grant, other := h.Ops[first.answer], h.Ops[first.grant], h.Ops[first.other]
	what := map[histories.Kind]string{histories.Release: "release", histories.Extend: "extend"}[ans.Kind]
	claim := map[histories.Kind]string{
		histories.Release: "that the lease was still there to give back",
		histories.Extend:  "that the lease had lasted",
	}[ans.Kind]
	text := fmt.Sprintf("process %d (client %d)'s %s of lock %q, called at %s, was answered ok (%s), "+
		"but process %d (client %d) had been granted the lock (acquire ok %s) after process %d's lease was last granted (%s ok at %s)",
		ans.Process, ans.Client, what, ans.Key, seconds(ans.Call), claim,
		other.Process, other.Client, span(other.Call, other.Return), ans.Process, grant.Kind, seconds(grant.Return))
	var extends, releases int
	for _, b := range bad {
		if h.Ops[b.answer].Kind == histories.Extend {
			extends++
		} else {
			releases++
		}
	}
	if len(bad) > 1 {
		text += fmt.Sprintf("; %d impossible answers in all (%d extends, %d releases)", len(bad), extends, releases)
	}
	return finding{text: text, shape: what + " ok after another's grant", at: other.Return, until: max(ans.Return, ans.Call)}
}
