package bridge

import (
	"fmt"
	"strconv"

	"github.com/locklab/locklab/workload"
)

// MapError is a trace event the bridge cannot turn into a plan, and why.
type MapError struct {
	File   string
	Event  Event
	Reason string
}

func (e *MapError) Error() string {
	return fmt.Sprintf("%s:%d: cannot map event %s: %s", e.File, e.Event.Line, e.Event, e.Reason)
}

// phase is how far a LeaseLock client is in its critical section, read from its events.
// The real client (workload) takes the same steps in the same order — acquire, validity
// check, read, work, validity check, write, release — with its fault points
// after-acquire (before the first check) and before-write (after the second check).
type phase int

const (
	idle     phase = iota
	acquired       // granted, nothing checked yet (TLA+ pc "chkR")
	checked        // checked before the read (pc "read")
	haveRead       // read, not yet checked again (pc "chkW")
	ready          // checked before the write (pc "write")
	leaving        // wrote or gave up, release pending (pc "rel")
)

func (p phase) inCS() bool { return p >= acquired && p <= ready }

// leaseLockEvents are the event names LeaseLock.tla records; the value says whether the
// first argument is a client.
var leaseLockEvents = map[string]bool{
	"init": false, "tick": false, "server-clock-jump": false,
	"acquire": true, "check-ok": true, "check-expired": true, "read": true, "read-rejected": true,
	"write": true, "write-rejected": true, "release": true, "pause": true, "resume": true,
}

// stallKind is how the holder keeps acting on a lease that has run out.
type stallKind int

const (
	pauseStall stallKind = iota + 1 // it is paused (a client-pause fault)
	slowWork                        // it is careless and its work outlasts the lease
)

// succStep is a step of the successor's first critical section and where a real client
// takes it: slot 0 at its start (acquire, check and read run back to back), slot 1 after
// its work (check, write, release).
type succStep struct {
	ev   Event
	slot int
}

// story is the schedule of a LeaseLock counterexample in terms a plan can express: the
// holder stalls while its lease runs out, the successor acquires, and the holder's next
// step, when the trace gets to it, falls at some place in the successor's critical section.
type story struct {
	clients   []string // model values in the order of the Clients constant: client i is clients[i]
	lease     leaseConfig
	holder    int
	successor int
	stall     stallKind
	stallAt   Event  // the pause, or the tick at which the careless holder's lease ran out
	point     string // pauseStall: the workload point the pause strikes at
	next      *Event // the holder's first step after the stall; nil when the trace ends first
	nextPhase phase  // the holder's phase just before next
	succ      []succStep
	nextPos   int // how many of succ come before next (len(succ) when next is nil)
}

// after and before are the successor's steps right before and right after the holder's
// next step (nil: none).
func (s *story) after() *succStep {
	if s.nextPos == 0 {
		return nil
	}
	return &s.succ[s.nextPos-1]
}

func (s *story) before() *succStep {
	if s.next == nil || s.nextPos >= len(s.succ) {
		return nil
	}
	return &s.succ[s.nextPos]
}

// readStory follows the clients of a LeaseLock counterexample through its events.
func readStory(cx *Counterexample) (*story, error) {
	tr, cfg := cx.Trace, cx.Config
	unmappable := func(ev Event, format string, args ...any) error {
		return &MapError{File: tr.File, Event: ev, Reason: fmt.Sprintf(format, args...)}
	}
	if tr.Spec != "LeaseLock" {
		for _, st := range tr.States {
			if _, ok := leaseLockEvents[st.Event.Name]; !ok {
				return nil, unmappable(st.Event, "spec %s: the bridge maps LeaseLock, Failover and Redlock counterexamples only", tr.Spec)
			}
		}
		return nil, fmt.Errorf("%s: spec %s: the bridge maps LeaseLock, Failover and Redlock counterexamples only", tr.File, tr.Spec)
	}
	clients, err := cfg.Set("Clients")
	if err != nil {
		return nil, err
	}
	lc, err := readLeaseConfig(cfg)
	if err != nil {
		return nil, err
	}
	ttl, careful := lc.ttl, lc.careful
	index := map[string]int{}
	for i, c := range clients {
		index[c] = i
	}
	phases := make([]phase, len(clients))
	paused := make([]bool, len(clients))
	expiry := make([]int, len(clients)) // model time at which each client's lease runs out
	now := 0
	s := &story{clients: clients, lease: lc, holder: -1, successor: -1}
	for i, st := range tr.States {
		ev := st.Event
		isClient, known := leaseLockEvents[ev.Name]
		switch {
		case !known:
			return nil, unmappable(ev, "not an event of LeaseLock.tla")
		case i == 0 && ev.Name != "init", i > 0 && ev.Name == "init":
			return nil, unmappable(ev, "state %d: <<\"init\">> is the event of state 1 only", st.N)
		}
		c := -1
		if isClient {
			var ok bool
			if c, ok = index[ev.Arg(0)]; !ok {
				return nil, unmappable(ev, "%q is not one of the clients %v of %s", ev.Arg(0), clients, cfg.File)
			}
		}
		var from phase
		if c >= 0 {
			from = phases[c]
		}
		to, ok := from, true
		switch ev.Name {
		case "tick":
			if now, err = strconv.Atoi(ev.Arg(0)); err != nil {
				return nil, unmappable(ev, "the time %q is not a number", ev.Arg(0))
			}
			if s.holder >= 0 {
				break
			}
			for k, p := range phases {
				if !p.inCS() || paused[k] || now < expiry[k] {
					continue
				}
				// Still in its critical section with its lease gone, and not paused.
				if careful {
					return nil, unmappable(ev, "%s is careful, not paused and still in its critical section when its lease runs out at time %d: "+
						"only a slow client clock (MaxDrift %s, Margin %s) lets it get there, and the bridge maps no clock drift",
						clients[k], now, cfg.Constants["MaxDrift"], cfg.Constants["Margin"])
				}
				s.holder, s.stall, s.stallAt = k, slowWork, ev
				break
			}
		case "server-clock-jump":
			return nil, unmappable(ev, "a jump of the lock server's wall clock needs a server-clock fault on a server run under libfaketime, which the bridge does not map")
		case "acquire":
			to, ok, expiry[c] = acquired, from == idle, now+ttl
		case "check-ok":
			switch from {
			case acquired:
				to = checked
			case haveRead:
				to = ready
			default:
				ok = false
			}
		case "check-expired":
			to, ok = leaving, from == acquired || from == haveRead
		case "read":
			to, ok = haveRead, from == checked
		case "read-rejected":
			to, ok = leaving, from == checked
		case "write", "write-rejected":
			to, ok = leaving, from == ready
		case "release":
			to, ok = idle, from == leaving
		case "pause":
			if s.holder >= 0 {
				return nil, unmappable(ev, "a second stall (the first: %s at line %d); the bridge maps one", s.stallAt, s.stallAt.Line)
			}
			if s.point, err = pausePoint(clients[c], from); err != nil {
				return nil, unmappable(ev, "%v", err)
			}
			s.holder, s.stall, s.stallAt, paused[c] = c, pauseStall, ev, true
		case "resume":
			ok, paused[c] = paused[c], false
		}
		if !ok {
			return nil, unmappable(ev, "%s cannot take this step in its state (%s): the trace does not follow LeaseLock.tla", clients[c], from)
		}
		if c >= 0 {
			phases[c] = to
		}
		if err := s.note(ev, c, from, unmappable); err != nil {
			return nil, err
		}
	}
	if s.holder < 0 {
		return nil, fmt.Errorf("%s: no client pauses or outlives its lease: nothing for the bridge to stall", tr.File)
	}
	if s.successor < 0 {
		return nil, unmappable(tr.States[len(tr.States)-1].Event, "no other client acquires after %s stalls (%s)", clients[s.holder], s.stallAt)
	}
	if s.next == nil {
		s.nextPos = len(s.succ)
	}
	return s, nil
}

// note records ev, a step of client c taken from phase from, in the story once the stall
// has begun: the successor's steps, and where the holder's next step falls among them.
func (s *story) note(ev Event, c int, from phase, unmappable func(Event, string, ...any) error) error {
	if s.holder < 0 || c < 0 || ev.Line == s.stallAt.Line || ev.Name == "pause" || ev.Name == "resume" {
		return nil
	}
	if c == s.holder {
		if s.next != nil {
			return nil
		}
		if s.successor < 0 {
			return unmappable(ev, "%s takes this step after its stall and before any other client acquires: their critical sections never overlap",
				s.clients[c])
		}
		e := ev
		s.next, s.nextPhase, s.nextPos = &e, from, len(s.succ)
		return nil
	}
	if s.successor < 0 {
		if ev.Name != "acquire" {
			return nil // a step of an earlier critical section of another client
		}
		s.successor = c
	}
	if c != s.successor || (len(s.succ) > 0 && s.succ[len(s.succ)-1].ev.Name == "release") {
		return nil // the story is about the successor's first critical section
	}
	slot := 0
	if from >= haveRead {
		slot = 1
	}
	s.succ = append(s.succ, succStep{ev: ev, slot: slot})
	return nil
}

// pausePoint is the workload point where a real client is in the same place as a client
// that the model pauses in phase p.
func pausePoint(client string, p phase) (string, error) {
	switch p {
	case acquired:
		return workload.AfterAcquire, nil
	case ready:
		return workload.BeforeWrite, nil
	case checked:
		return "", fmt.Errorf("%s pauses between its validity check and its read; a real client has no pause point there (%s comes before the check, %s after the check before the write)",
			client, workload.AfterAcquire, workload.BeforeWrite)
	case haveRead:
		return "", fmt.Errorf("%s pauses between its read and the validity check before its write; a real client has no pause point there (its %s point follows that check)",
			client, workload.BeforeWrite)
	}
	return "", fmt.Errorf("%s pauses outside its critical section (%s)", client, p)
}

func (p phase) String() string {
	switch p {
	case idle:
		return "idle"
	case acquired:
		return "acquired, before its first check"
	case checked:
		return "checked, before its read"
	case haveRead:
		return "read, before its second check"
	case ready:
		return "checked, before its write"
	case leaving:
		return "before its release"
	}
	return "phase " + strconv.Itoa(int(p))
}
