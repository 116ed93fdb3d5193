package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/locklab/locklab/histories"
)

// maxStory bounds a narration: enough to follow the scenario, short enough to read.
const maxStory = 24

// event is one line of a narration; client is -1 for faults.
type event struct {
	at     int64
	client int
	write  bool
	text   string
}

// Narrate tells what happened in a run, in plain words, from its history: the leases
// granted (and when they ran out by the server's clock, TTL after the request), the
// faults, the writes the store accepted or refused, crashes and releases. It tells the
// stretch around the faults (or the start of the run when there were none), in full for
// the protagonists — the client holding the lock when the first fault struck and the
// clients a fault targets — and in summary for the others.
func Narrate(w io.Writer, h histories.History) {
	from, to := storyWindow(h)
	heroes := protagonists(h, from)
	var evs []event
	for _, f := range h.Faults {
		if f.End < from || f.Start > to {
			continue
		}
		evs = append(evs, event{f.Start, -1, false, fmt.Sprintf("%s on %s begins (%s)", f.Kind, f.Target, f.Detail)})
		if f.End > f.Start {
			evs = append(evs, event{f.End, -1, false, fmt.Sprintf("%s on %s ends", f.Kind, f.Target)})
		}
	}
	for _, op := range h.Ops {
		at := op.Return
		if op.Outcome == histories.Unknown || op.Kind == histories.Release || op.Kind == histories.Write {
			at = op.Call // the moment the client acted; the result comes later or never
		}
		if at < from || at > to {
			continue
		}
		if text := describe(op); text != "" {
			evs = append(evs, event{at, op.Client, op.Kind == histories.Write, text})
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	lines := summarise(evs, heroes)
	if len(lines) > maxStory {
		lines = append(lines[:maxStory], event{to, -1, false, "…"})
	}
	for _, e := range lines {
		fmt.Fprintf(w, "  %8.3f s  %s\n", float64(e.at)/1e9, e.text)
	}
}

// summarise keeps faults and the protagonists' events; each stretch of other clients'
// events between two of those shrinks to its first event, a count, and its last write.
func summarise(evs []event, heroes map[int]bool) []event {
	var out, stretch []event
	flush := func() {
		if len(stretch) <= 3 {
			out = append(out, stretch...)
		} else {
			out = append(out, stretch[0])
			var lastWrite *event
			for i := range stretch[1:] {
				if stretch[1+i].write {
					lastWrite = &stretch[1+i]
				}
			}
			n := len(stretch) - 1
			if lastWrite != nil {
				n--
			}
			out = append(out, event{stretch[1].at, -1, false, fmt.Sprintf("(%d more steps of other clients)", n)})
			if lastWrite != nil {
				out = append(out, *lastWrite)
			}
		}
		stretch = stretch[:0]
	}
	for _, e := range evs {
		if e.client == -1 || heroes[e.client] {
			flush()
			out = append(out, e)
			continue
		}
		stretch = append(stretch, e)
	}
	flush()
	return out
}

// protagonists are the client holding a lock at the story's start (the last grant
// before the first fault) and the clients faults name as targets.
func protagonists(h histories.History, from int64) map[int]bool {
	heroes := map[int]bool{}
	for _, op := range h.Ops {
		if op.Kind == histories.Acquire && op.Outcome == histories.OK && op.Call == from && len(h.Faults) > 0 {
			heroes[op.Client] = true
		}
	}
	for _, f := range h.Faults {
		var c int
		if _, err := fmt.Sscanf(f.Target, "client:%d", &c); err == nil {
			heroes[c] = true
		}
	}
	return heroes
}

// storyWindow is the stretch worth telling: from the last grant before the first fault
// to shortly after the last fault ends; without faults, the first second.
func storyWindow(h histories.History) (from, to int64) {
	if len(h.Faults) == 0 {
		return 0, int64(time.Second)
	}
	first, last := h.Faults[0].Start, h.Faults[0].End
	for _, f := range h.Faults {
		first, last = min(first, f.Start), max(last, f.End)
	}
	from = 0
	for _, op := range h.Ops {
		// A grant in flight when the first fault struck counts: a trigger at the grant
		// starts the fault before the grant returns.
		if op.Kind == histories.Acquire && op.Outcome == histories.OK && op.Call <= first {
			from = max(from, op.Call)
		}
	}
	return from, last + int64(100*time.Millisecond) // the aftermath, not the next round
}

// describe is one operation in words, or "" for what a narration leaves out (refused
// acquires and reads: they are many and say little).
func describe(op histories.Op) string {
	who := fmt.Sprintf("client %d", op.Client)
	switch op.Kind {
	case histories.Acquire:
		switch op.Outcome {
		case histories.OK:
			fence := ""
			if op.Output.Fence > 0 {
				fence = fmt.Sprintf(" with fence %d", op.Output.Fence)
			}
			return fmt.Sprintf("%s acquired %s%s: lease %s, until about %.3f s if the server's clock keeps time",
				who, op.Key, fence, op.Input.TTL, float64(op.Call+int64(op.Input.TTL))/1e9)
		case histories.Unknown:
			return fmt.Sprintf("%s asked for %s and does not know whether it got it (%s)", who, op.Key, op.Output.Error)
		}
	case histories.Write:
		switch op.Outcome {
		case histories.OK:
			return fmt.Sprintf("%s writes %d over the %d it read%s: the store accepts", who, op.Input.Value, op.Input.Base, withFence(op.Input.Fence))
		case histories.Fail:
			return fmt.Sprintf("%s writes %d over the %d it read%s: the store refuses the stale fence", who, op.Input.Value, op.Input.Base, withFence(op.Input.Fence))
		default:
			return fmt.Sprintf("%s writes %d over the %d it read: outcome unknown (%s)", who, op.Input.Value, op.Input.Base, op.Output.Error)
		}
	case histories.Release:
		switch op.Outcome {
		case histories.OK:
			return fmt.Sprintf("%s releases %s", who, op.Key)
		case histories.Fail:
			return fmt.Sprintf("%s releases %s, but the lease was no longer its own", who, op.Key)
		}
		return fmt.Sprintf("%s releases %s: outcome unknown", who, op.Key)
	case histories.Extend:
		if op.Outcome == histories.OK {
			return fmt.Sprintf("%s extends its lease on %s by %s", who, op.Key, op.Input.TTL)
		}
		return fmt.Sprintf("%s fails to extend %s", who, op.Key)
	case histories.Crash:
		return fmt.Sprintf("%s crashes", who)
	case histories.Deliver:
		return fmt.Sprintf("%s takes job %s off the queue", who, op.Key)
	case histories.Redeliver:
		return fmt.Sprintf("the queue re-delivers job %s: client %d held it past the visibility timeout", op.Key, op.Output.Value)
	case histories.Skip:
		return fmt.Sprintf("%s skips job %s: %s", who, op.Key, op.Output.Error)
	case histories.Effect:
		switch op.Outcome {
		case histories.OK:
			return fmt.Sprintf("%s runs job %s: its side effect #%d in the ledger", who, op.Key, op.Output.Value)
		case histories.Fail:
			return fmt.Sprintf("%s runs job %s, with no side effect (%s)", who, op.Key, op.Output.Error) // refused by the ledger, or the run failed
		}
		return fmt.Sprintf("%s runs job %s: outcome unknown (%s)", who, op.Key, op.Output.Error)
	case histories.Ack:
		if op.Outcome == histories.OK {
			return fmt.Sprintf("%s acknowledges job %s", who, op.Key)
		}
		return fmt.Sprintf("%s acknowledges job %s too late: it was re-delivered", who, op.Key)
	}
	return ""
}

func withFence(f int64) string {
	if f == 0 {
		return ""
	}
	return fmt.Sprintf(" with fence %d", f)
}
