package bridge

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"
)

// Translation is a counterexample turned into a plan, with what its run must show.
type Translation struct {
	Plan   plan.Plan
	Breaks linearizability.Property // the property TLC found violated: the run must find it illegal

	Holder    int // the client that stalls while its lease runs out
	Successor int // the client that acquires after it
	// The order the trace puts the holder's first recorded operation after its stall in:
	// after the successor's operation After and before its operation Before, both of the
	// successor's first critical section after the holder's acquire. An empty Next: the
	// trace ends during the stall; an empty After or Before: no bound on that side.
	Next, After, Before histories.Kind

	Redlock *RedlockReplay // a Redlock counterexample's servers and fault; nil for the other specs
}

// Timings of every translated plan. The model's TTL of a few ticks becomes planTTL; the
// trace's order of steps is kept by aiming each of the holder's steps at the middle of the
// gap the trace puts it in, so that scheduling noise of tens of milliseconds cannot
// reorder it.
const (
	planTTL   = 400 * time.Millisecond
	planRetry = 10 * time.Millisecond // the successor acquires within 1.5 retries of the expiry
	planThink = 50 * time.Millisecond // longer than retry, or a client that just released wins its lock straight back and starves the other
	maxRun    = 3 * time.Second
)

// properties maps the specs' invariants to the properties of docs/design.md.
var properties = map[string]linearizability.Property{
	"MutualExclusion": linearizability.P1,
	"StoreSafety":     linearizability.P2,
	"FenceMonotonic":  linearizability.P3,
}

// Translate turns a LeaseLock counterexample into a plan for the fenced implementation
// (it grants fences, so every fencing mode of the config runs) on a single server, whose
// run must break the same property. Everything is read from the trace and its config:
// which client stalls and at which step, how long, the fencing mode, whether clients check
// their validity. A Failover counterexample becomes failover-loss fitted to it
// (translateFailover); a Redlock one a plan on N independent servers whose fault strikes
// at the holder's grant (translateRedlock).
func Translate(cx *Counterexample) (*Translation, error) {
	switch cx.Trace.Spec {
	case "Failover":
		return translateFailover(cx)
	case "Redlock":
		return translateRedlock(cx)
	}
	if hasJump(cx.Trace) {
		return translateJump(cx)
	}
	if drift, err := cx.Config.Int("MaxDrift"); err == nil && drift > 0 {
		return translateDrift(cx)
	}
	tr := cx.Trace
	prop, ok := properties[tr.Invariant]
	if !ok {
		return nil, fmt.Errorf("%s: invariant %s has no locklab property (known: MutualExclusion, StoreSafety, FenceMonotonic)", tr.File, tr.Invariant)
	}
	s, err := readStory(cx)
	if err != nil {
		return nil, err
	}
	t, err := s.timing(tr.File)
	if err != nil {
		return nil, err
	}

	p := plan.Default()
	p.Name = tr.Config
	p.Impl, p.Topology, p.Clients, p.Keys = "fenced", "single", len(s.clients), 1
	p.TTL, p.Work, p.Think, p.Retry = plan.D(planTTL), plan.D(t.work), plan.D(planThink), plan.D(planRetry)
	p.Duration, p.Fencing, p.Careless, p.Seed = plan.D(t.duration), s.lease.fencing, !s.lease.careful, 1
	holder := fmt.Sprintf("client:%d", s.holder)
	if s.stall == pauseStall {
		// The trigger arms the pause at the holder's first grant, so it strikes that
		// critical section whichever client wins the first race for the lock.
		p.Faults = []plan.FaultSpec{{
			Kind: "client-pause", Target: holder, Trigger: holder + "@" + lockimpl.StepGranted,
			Point: s.point, Duration: plan.D(t.pause),
		}}
	}
	p.Description = s.describe(tr, t)

	out := &Translation{Plan: p, Breaks: prop, Holder: s.holder, Successor: s.successor}
	if s.next != nil {
		out.Next = recorded(*s.next)
		for i := s.nextPos - 1; i >= 0 && out.After == ""; i-- {
			out.After = recorded(s.succ[i].ev)
		}
		for i := s.nextPos; i < len(s.succ) && out.Before == ""; i++ {
			out.Before = recorded(s.succ[i].ev)
		}
	}
	if err := p.Validate(locks.All()); err != nil {
		return nil, fmt.Errorf("%s: translated plan: %w", tr.File, err)
	}
	return out, nil
}

// begin reads what every translation needs: the property the trace breaks, the config's
// clients, and how to refuse one of the trace's events.
func begin(cx *Counterexample) (linearizability.Property, []string, func(Event, string, ...any) error, error) {
	tr := cx.Trace
	unmappable := func(ev Event, format string, args ...any) error {
		return &MapError{File: tr.File, Event: ev, Reason: fmt.Sprintf(format, args...)}
	}
	prop, ok := properties[tr.Invariant]
	if !ok {
		return "", nil, nil, fmt.Errorf("%s: invariant %s has no locklab property (known: MutualExclusion, StoreSafety, FenceMonotonic)", tr.File, tr.Invariant)
	}
	clients, err := cx.Config.Set("Clients")
	if err != nil {
		return "", nil, nil, err
	}
	return prop, clients, unmappable, nil
}

// recorded is the kind of operation a real client records for a step ("" for the
// validity checks, which leave no record).
func recorded(ev Event) histories.Kind {
	switch ev.Name {
	case "acquire":
		return histories.Acquire
	case "read", "read-rejected":
		return histories.Read
	case "write", "write-rejected":
		return histories.Write
	case "release":
		return histories.Release
	}
	return ""
}

// timing is how long things take in the plan; times are relative to the holder's acquire.
type timing struct {
	work     time.Duration // every client's work between read and write
	pause    time.Duration // pauseStall: the pause
	target   time.Duration // when the holder's next step is aimed at
	duration time.Duration // the plan's duration
}

// timing places the holder's next step where the trace puts it. A real successor
// acquires at about planTTL+planRetry, reads at once (slot 0) and writes one work period
// later (slot 1). A gap between two of its steps is aimed at in its middle; a step with
// no later successor step (or none at all: the trace ends) half a TTL after the last one.
func (s *story) timing(file string) (timing, error) {
	t := timing{work: planTTL / 2} // a careful client's checks pass well inside its lease
	at := func(slot int) time.Duration { return planTTL + planRetry + time.Duration(slot)*t.work }
	after, before := s.after(), s.before()
	switch {
	case before == nil:
		t.target = at(after.slot) + planTTL/2
	case before.slot == after.slot:
		return t, &MapError{File: file, Event: *s.next, Reason: fmt.Sprintf(
			"the trace puts this step of %s between %s and %s of %s, which a real client takes back to back: no pause can aim at that gap",
			s.clients[s.holder], after.ev, before.ev, s.clients[s.successor])}
	default:
		t.target = (at(after.slot) + at(before.slot)) / 2
	}
	switch s.stall {
	case pauseStall:
		t.pause = t.target
		if s.point == workload.BeforeWrite {
			t.pause -= t.work // the holder reaches before-write one work period after its acquire
		}
	case slowWork:
		// A careless holder reads at once; its work is the stall, and its write (or the
		// check before it) is its next step.
		if before != nil || after.slot != 0 || (s.next != nil && s.nextPhase < haveRead) {
			return t, &MapError{File: file, Event: s.stallAt, Reason: fmt.Sprintf(
				"%s outlives its lease by slow work; a real careless client reads at once and its next step is its write, which the trace must put after %s's read with nothing after it",
				s.clients[s.holder], s.clients[s.successor])}
		}
		t.work = t.target
	}
	// Clients start no critical section after the plan's duration but finish the one they
	// are in, so the run must last until the successor has acquired. It may win the first
	// race for the lock and run a whole critical section before the holder's, which delays
	// the story by a work period and a retry; half a TTL of slack on top.
	last := at(0) + t.work + planRetry + planTTL/2
	t.duration = (last + 99*time.Millisecond).Truncate(100 * time.Millisecond)
	if t.duration > maxRun {
		return t, fmt.Errorf("%s: the schedule needs a %s run, more than %s", file, t.duration, maxRun)
	}
	return t, nil
}

// describe says in words what the plan replays.
func (s *story) describe(tr *Trace, t timing) string {
	h, o := s.clients[s.holder], s.clients[s.successor]
	var b strings.Builder
	fmt.Fprintf(&b, "Replays the TLC counterexample %s (%s violated, trace %s). Client %d is %s, client %d is %s. ",
		tr.Config, tr.Invariant, filepath.Base(tr.File), s.holder, h, s.successor, o)
	switch s.stall {
	case pauseStall:
		fmt.Fprintf(&b, "%s pauses for %s at %s in its first critical section; its %s lease runs out and %s acquires. ",
			h, t.pause, s.point, planTTL, o)
	case slowWork:
		fmt.Fprintf(&b, "%s never checks its validity and works %s, longer than its %s lease; %s acquires meanwhile. ",
			h, t.work, planTTL, o)
	}
	if after, before := s.after(), s.before(); s.next == nil {
		fmt.Fprintf(&b, "The trace ends after %s, with %s still stalled.", after.ev, h)
	} else if before == nil {
		fmt.Fprintf(&b, "%s then does %s after %s's %s.", h, s.next, o, after.ev)
	} else {
		fmt.Fprintf(&b, "%s then does %s between %s's %s and %s.", h, s.next, o, after.ev, before.ev)
	}
	return b.String()
}
