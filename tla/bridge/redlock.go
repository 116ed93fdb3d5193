package bridge

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"
)

// RedlockReplay is what the run of a translated Redlock counterexample must show besides
// the broken property: who is granted by which servers, and which fault is the trace's.
type RedlockReplay struct {
	HolderNodes    []int         // servers (lock-i, 0-based) that grant the holder, as in the trace
	SuccessorNodes []int         // servers that grant the successor after the fault
	Fault          int           // index in Plan.Faults of the node fault (server-crash or server-clock)
	Pause          int           // index in Plan.Faults of the holder's pause until the successor's grant; -1: none
	Tick           time.Duration // one tick of the model in the plan
}

// redlockEvents are the events of Redlock.tla; the value says whether the first argument
// is a client.
var redlockEvents = map[string]bool{
	"init": false, "tick": false, "clock-jump": false, "crash": false, "restart": false,
	"start-attempt": true, "set-ok": true, "set-fail": true, "acquired": true, "acquire-failed": true, "release": true,
}

// Timings of a translated Redlock plan. A tick of a second leaves the successor half a
// tick at least between the fault and the holder's release, and the holder as much
// between its release and the expiry of its keys.
const (
	redlockTick    = time.Second
	redlockTimeout = 250 * time.Millisecond      // per command (a lost request fails at once, see translateRedlock)
	redlockSlack   = 500 * time.Millisecond      // for the successor's grant after the fault, and for the race before it
	redlockRoom    = redlockTick/2 - 2*planRetry // the least time the holder's release may come before its keys expire
)

// rlAttempt is a client's attempt as the trace tells it.
type rlAttempt struct {
	phase    string // idle, acq, cs
	t0, next int
	got      []int       // nodes that granted, in order
	grantAt  map[int]int // node → time of the set-ok
	setOK    map[int]Event
	quorumAt int // index of the state in which got reached a majority; -1 before
	doneAt   int // time of its acquired event
}

// rlFault is the trace's one node fault.
type rlFault struct {
	ev      Event // the crash or clock-jump
	node    int
	at      int // model time of the crash or jump
	jump    int // ticks (clock-jump)
	restart *Event
	upAt    int // model time of the restart (crash)
}

// translateRedlock turns a Redlock counterexample into a plan for the redlock
// implementation on N independent servers (topology nodes:N). The model asks the nodes one
// after the other, so another client can be granted by a node before the holder's request
// gets there; the real client asks all at once, so the plan loses the holder's requests to
// those nodes (net-reset of its links upward: the request never arrives and fails at once,
// no grant and the node left free, as in the trace; a blackhole would make every attempt of
// the holder wait for its timeout, and the successor win every race for the lock). The
// node fault strikes at the holder's grant (trigger acquire:granted, after the same ticks
// as in the trace): a kill without persistence, restarted after the trace's delay, or a
// jump of that server's clock (libfaketime). The other nodes' refusals of the successor
// are real: the holder's keys are there. The holder works past the successor's grant and
// releases before its deadline, aimed at the middle of that gap as LeaseLock's steps are.
func translateRedlock(cx *Counterexample) (*Translation, error) {
	tr, cfg := cx.Trace, cx.Config
	prop, clients, unmappable, err := begin(cx)
	if err != nil {
		return nil, err
	}
	consts := map[string]int{}
	for _, name := range []string{"N", "TTL", "Drift"} {
		if consts[name], err = cfg.Int(name); err != nil {
			return nil, err
		}
	}
	persist, err := cfg.Bool("Persist")
	if err != nil {
		return nil, err
	}
	n, ttl, drift := consts["N"], consts["TTL"], consts["Drift"]
	quorum := n/2 + 1
	type node struct {
		owner, exp, off int // owner -1: no key
		up              bool
	}
	nodes := make([]node, n+1) // 1..N
	for i := range nodes {
		nodes[i] = node{owner: -1, up: true}
	}
	att := make([]rlAttempt, len(clients))
	for i := range att {
		att[i] = rlAttempt{phase: "idle", quorumAt: -1}
	}
	// refusedBy[c][m]: the client whose key made node m refuse c (-1: the node was down),
	// refusal[c][m] that set-fail and refusedAt[c][m] its time.
	refusedBy := make([]map[int]int, len(clients))
	refusal := make([]map[int]Event, len(clients))
	refusedAt := make([]map[int]int, len(clients))
	for i := range refusedBy {
		refusedBy[i], refusal[i], refusedAt[i] = map[int]int{}, map[int]Event{}, map[int]int{}
	}
	var fault *rlFault
	now := 0
	num := func(ev Event, i int, what string) (int, error) {
		v, err := strconv.Atoi(ev.Arg(i))
		if err != nil {
			return 0, unmappable(ev, "%s %q is not a number", what, ev.Arg(i))
		}
		return v, nil
	}
	nodeArg := func(ev Event, i int) (int, error) {
		m, err := num(ev, i, "node")
		if err == nil && (m < 1 || m > n) {
			err = unmappable(ev, "node %d is not one of 1..%d (N = %d in %s)", m, n, n, cfg.File)
		}
		return m, err
	}
	for i, st := range tr.States {
		ev := st.Event
		isClient, known := redlockEvents[ev.Name]
		switch {
		case !known:
			return nil, unmappable(ev, "not an event of Redlock.tla")
		case (i == 0) != (ev.Name == "init"):
			return nil, unmappable(ev, "state %d: <<\"init\">> is the event of state 1 only", st.N)
		}
		c := -1
		if isClient {
			if c = slices.Index(clients, ev.Arg(0)); c < 0 {
				return nil, unmappable(ev, "%q is not one of the clients %v of %s", ev.Arg(0), clients, cfg.File)
			}
		}
		var a *rlAttempt
		if c >= 0 {
			a = &att[c]
		}
		bad := func() error {
			return unmappable(ev, "%s cannot take this step in its state (%s): the trace does not follow Redlock.tla", clients[c], a.phase)
		}
		switch ev.Name {
		case "tick":
			if now, err = num(ev, 0, "the time"); err != nil {
				return nil, err
			}
		case "start-attempt":
			if a.phase != "idle" {
				return nil, bad()
			}
			*a = rlAttempt{phase: "acq", t0: now, next: 1, grantAt: map[int]int{}, setOK: map[int]Event{}, quorumAt: -1}
		case "set-ok", "set-fail":
			m, err := nodeArg(ev, 1)
			if err != nil {
				return nil, err
			}
			if a.phase != "acq" || m != a.next {
				return nil, unmappable(ev, "%s asks node %d out of turn: the trace does not follow Redlock.tla", clients[c], m)
			}
			a.next++
			nd := &nodes[m]
			free := nd.owner < 0 || now+nd.off >= nd.exp
			if ev.Name == "set-ok" {
				if !nd.up || !free {
					return nil, unmappable(ev, "node %d cannot grant here (down, or its key is live): the trace does not follow Redlock.tla", m)
				}
				nd.owner, nd.exp = c, now+nd.off+ttl
				a.got, a.grantAt[m], a.setOK[m] = append(a.got, m), now, ev
				if len(a.got) == quorum {
					a.quorumAt = i
				}
				break
			}
			switch {
			case !nd.up:
				refusedBy[c][m] = -1
			case !free:
				refusedBy[c][m] = nd.owner
			default:
				return nil, unmappable(ev, "node %d is up and free: it would grant", m)
			}
			refusal[c][m], refusedAt[c][m] = ev, now
		case "acquired":
			if a.phase != "acq" || a.next != n+1 || len(a.got) < quorum {
				return nil, bad()
			}
			a.phase, a.doneAt = "cs", now
		case "acquire-failed", "release":
			return nil, unmappable(ev, "%s gives up an attempt or a lease before the two beliefs overlap; the bridge replays one attempt per client, each granted", clients[c])
		case "clock-jump", "crash", "restart":
			m, err := nodeArg(ev, 0)
			if err != nil {
				return nil, err
			}
			if ev.Name == "restart" {
				if fault == nil || fault.ev.Name != "crash" || fault.node != m || fault.restart != nil {
					return nil, unmappable(ev, "node %d restarts without having crashed", m)
				}
				want := `"empty"`
				if persist {
					want = `"with-keys"`
				}
				if ev.Arg(1) != want {
					return nil, unmappable(ev, "restart %s, but Persist = %v in %s", ev.Arg(1), persist, cfg.File)
				}
				e := ev
				fault.restart, fault.upAt, nodes[m].up = &e, now, true
				break
			}
			if fault != nil {
				return nil, unmappable(ev, "a second node fault (the first: %s at line %d); the bridge maps one", fault.ev, fault.ev.Line)
			}
			fault = &rlFault{ev: ev, node: m, at: now}
			if ev.Name == "clock-jump" {
				if fault.jump, err = num(ev, 1, "the jump"); err != nil {
					return nil, err
				}
				nodes[m].off += fault.jump
			} else {
				nodes[m].up = false
				if !persist {
					nodes[m].owner = -1
				}
			}
		}
	}

	last := tr.States[len(tr.States)-1].Event
	var holding []int
	for c := range att {
		if att[c].phase == "cs" {
			holding = append(holding, c)
		}
	}
	if len(holding) != 2 {
		return nil, fmt.Errorf("%s: %d clients hold the lock at the end of the trace; the bridge replays two holders", tr.File, len(holding))
	}
	h, s := holding[0], holding[1]
	if att[s].quorumAt < att[h].quorumAt {
		h, s = s, h
	}
	H, S := &att[h], &att[s]
	if fault == nil {
		return nil, unmappable(last, "no node crashes or jumps its clock: nothing for the bridge to strike")
	}
	f := fault.node
	if fault.ev.Name == "crash" && fault.restart == nil {
		return nil, unmappable(fault.ev, "node %d never restarts in the trace, and the successor needs it", f)
	}
	setF, ok := H.grantAt[f]
	if !ok || H.setOK[f].Line > fault.ev.Line {
		return nil, unmappable(fault.ev, "the fault strikes node %d before %s is granted there: it takes nothing from %s", f, clients[h], clients[h])
	}
	if ev, ok := S.setOK[f]; !ok || ev.Line < fault.ev.Line || (fault.restart != nil && ev.Line < fault.restart.Line) {
		return nil, unmappable(fault.ev, "%s is not granted by node %d after the fault there: the fault is not what lets it in", clients[s], f)
	}
	// The holder's refusals: only where the successor was granted first (the plan loses
	// those requests).
	var lost []int
	for _, m := range slices.Sorted(maps.Keys(refusedBy[h])) {
		if refusedBy[h][m] != s {
			return nil, unmappable(refusal[h][m], "node %d refuses %s for another reason than %s's grant there (down or another key); the bridge loses a holder's request only where the trace lets the successor be granted first",
				m, clients[h], clients[s])
		}
		lost = append(lost, m)
	}
	// The successor's refusals are real ones: the holder's key must still be live when the
	// trace has the successor ask. The real holder sets all its keys at once, at its grant,
	// which stands for the time of its set-ok on the faulted node.
	for _, m := range slices.Sorted(maps.Keys(refusedBy[s])) {
		ev := refusal[s][m]
		if refusedBy[s][m] != h || m == f {
			return nil, unmappable(ev, "node %d refuses %s for another reason than %s's key; the real node would not", m, clients[s], clients[h])
		}
		if refusedAt[s][m] >= setF+ttl {
			return nil, unmappable(ev, "%s asks node %d at %d, when the real %s's key there, set with the one on node %d at %d, has expired",
				clients[s], m, refusedAt[s][m], clients[h], f, setF)
		}
	}
	for _, m := range S.got {
		if m != f && !slices.Contains(lost, m) {
			return nil, unmappable(S.setOK[m], "node %d grants %s after granting %s, and no fault struck it: the bridge does not replay an expiry there", m, clients[s], clients[h])
		}
	}
	deadline := H.t0 + ttl - drift // the holder, timely, releases before
	if S.doneAt >= deadline {
		return nil, unmappable(last, "%s is granted at %d, not before %s's deadline %d", clients[s], S.doneAt, clients[h], deadline)
	}

	// Model time t is the real grant + (t - setF) ticks: the trigger fires at the grant,
	// and the holder's key on the faulted node is at least as old as in the trace.
	u := redlockTick
	at := time.Duration(fault.at-setF) * u
	work := time.Duration(S.doneAt+deadline-2*setF) * u / 2
	if work+redlockRoom > time.Duration(ttl)*u {
		return nil, fmt.Errorf("%s: the holder's work %s leaves no room before its keys expire (ttl %s)", tr.File, work, time.Duration(ttl)*u)
	}
	downFor := time.Duration(0)
	if fault.restart != nil {
		downFor = time.Duration(fault.upAt-fault.at) * u
	}
	// Clients start no critical section after the duration. The successor may win the
	// first race for the lock and hold it a work period before the holder's grant.
	duration := (work + redlockSlack + at + downFor + redlockSlack + 99*time.Millisecond).Truncate(100 * time.Millisecond)

	p := plan.Default()
	p.Name = tr.Config
	p.Impl, p.Topology, p.Clients, p.Keys = "redlock", "nodes:"+strconv.Itoa(n), len(clients), 1
	p.TTL, p.Work, p.Think, p.Retry, p.Timeout = plan.D(time.Duration(ttl)*u), plan.D(work), plan.D(planThink), plan.D(planRetry), plan.D(redlockTimeout)
	p.Duration, p.Fencing, p.Seed = plan.D(duration), "off", 1
	p.Persistence = "none"
	if persist {
		p.Persistence = "aof-always"
	}
	server := func(m int) string { return "lock-" + strconv.Itoa(m-1) }
	holder := fmt.Sprintf("client:%d", h)
	for _, m := range lost {
		p.Faults = append(p.Faults, plan.FaultSpec{Kind: "net-reset", Duration: plan.D(2 * duration), Target: holder + "->" + server(m), Direction: "up"})
	}
	nf := plan.FaultSpec{Target: server(f), Trigger: holder + "@" + lockimpl.StepGranted, At: plan.D(at)}
	var what string
	switch fault.ev.Name {
	case "crash":
		nf.Kind, nf.Duration = "server-crash", plan.D(downFor)
		when, keeps := "at once", "without persistence, empty"
		if downFor > 0 {
			when = "after " + downFor.String()
		}
		if persist {
			keeps = "with its AOF (fsync always)"
		}
		what = fmt.Sprintf("%s is killed and restarts %s %s", server(f), when, keeps)
	case "clock-jump":
		nf.Kind, nf.Duration, nf.Offset = "server-clock", plan.D(2*duration), plan.D(time.Duration(fault.jump)*u)
		p.ServerClock = "faketime"
		what = fmt.Sprintf("%s's clock jumps %s forward (libfaketime)", server(f), time.Duration(fault.jump)*u)
	}
	p.Faults = append(p.Faults, nf)
	rp := &RedlockReplay{Fault: len(p.Faults) - 1, Pause: -1, Tick: u}
	// The trace's beliefs overlap by construction, not by the work's margin alone: after
	// its work the holder waits before its write until the successor was granted, within
	// its lease. Armed at the holder's grant, so that an earlier grant of the successor
	// does not count.
	if wait := time.Duration(ttl)*u - work - redlockRoom; wait > 0 {
		p.Faults = append(p.Faults, plan.FaultSpec{Kind: "client-pause", Target: holder, Trigger: holder + "@" + lockimpl.StepGranted,
			Point: workload.BeforeWrite, Duration: plan.D(wait), Until: fmt.Sprintf("client:%d@%s", s, lockimpl.StepGranted)})
		rp.Pause = len(p.Faults) - 1
	}

	for _, m := range H.got {
		rp.HolderNodes = append(rp.HolderNodes, m-1)
	}
	for _, m := range S.got {
		rp.SuccessorNodes = append(rp.SuccessorNodes, m-1)
	}
	slices.Sort(rp.HolderNodes)
	slices.Sort(rp.SuccessorNodes)
	names := func(ms []int) string {
		var out []string
		for _, m := range ms {
			out = append(out, server(m+1))
		}
		return strings.Join(out, ", ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Replays the TLC counterexample %s (%s violated, trace %s) on %d independent servers, a tick being %s. Client %d is %s, client %d is %s. ",
		tr.Config, tr.Invariant, filepath.Base(tr.File), n, u, h, clients[h], s, clients[s])
	if len(lost) > 0 {
		lostIdx := make([]int, len(lost))
		for i, m := range lost {
			lostIdx[i] = m - 1
		}
		fmt.Fprintf(&b, "%s's requests to %s are lost (in the trace they arrive after %s was granted there). ", clients[h], names(lostIdx), clients[s])
	}
	when := "right at that grant"
	if at > 0 {
		when = at.String() + " after that grant"
	}
	fmt.Fprintf(&b, "%s is granted by %s; %s, %s. %s is then granted by %s while %s works %s (and waits before its write until then, within its lease).",
		clients[h], names(rp.HolderNodes), when, what, clients[s], names(rp.SuccessorNodes), clients[h], work)
	p.Description = b.String()
	if err := p.Validate(locks.All()); err != nil {
		return nil, fmt.Errorf("%s: translated plan: %w", tr.File, err)
	}
	return &Translation{Plan: p, Breaks: prop, Holder: h, Successor: s, Redlock: rp}, nil
}
