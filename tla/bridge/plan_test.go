package bridge

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"
)

// translate loads a saved counterexample by config name and translates it.
func translate(t testing.TB, config string) *Translation {
	t.Helper()
	cx, err := Load(filepath.Join(testdata, config+".trace"))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Translate(cx)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// What each reproducible counterexample must turn into: the property, the config's
// fencing and carefulness, where the pause strikes, and the order of the holder's next
// step among the successor's.
func TestTranslateLeaseLock(t *testing.T) {
	cases := []struct {
		config              string
		breaks              lin.Property
		fencing             string
		careless            bool
		point               string // "": no pause
		next, after, before histories.Kind
	}{
		{"LeaseLock_pause_off", lin.P2, "off", false, workload.BeforeWrite, histories.Write, histories.Read, histories.Write},
		{"LeaseLock_pause_writes", lin.P2, "writes", false, workload.BeforeWrite, histories.Write, histories.Read, histories.Write},
		{"LeaseLock_pause_off_mutex", lin.P1, "off", false, workload.AfterAcquire, "", "", ""},
		{"LeaseLock_pause_writes_mutex", lin.P1, "writes", false, workload.AfterAcquire, "", "", ""},
		{"LeaseLock_pause_full_mutex", lin.P1, "full", false, workload.AfterAcquire, "", "", ""},
		{"LeaseLock_nocheck", lin.P1, "off", true, "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.config, func(t *testing.T) {
			tl := translate(t, c.config)
			p := tl.Plan
			t.Log(p.Description)
			if tl.Breaks != c.breaks || p.Fencing != c.fencing || p.Careless != c.careless || p.Impl != "fenced" ||
				p.Topology != "single" || p.Clients != 2 || tl.Holder != 0 || tl.Successor != 1 {
				t.Errorf("breaks %s, fencing %s, careless %v, impl %s, topology %s, clients %d, holder %d, successor %d",
					tl.Breaks, p.Fencing, p.Careless, p.Impl, p.Topology, p.Clients, tl.Holder, tl.Successor)
			}
			if tl.Next != c.next || tl.After != c.after || tl.Before != c.before {
				t.Errorf("order: next %q after %q before %q; want %q, %q, %q", tl.Next, tl.After, tl.Before, c.next, c.after, c.before)
			}
			if p.Duration.D() > maxRun || p.Think.D() <= p.Retry.D() {
				t.Errorf("duration %s (max %s), think %s, retry %s", p.Duration.D(), maxRun, p.Think.D(), p.Retry.D())
			}
			checkTiming(t, p, c.point)
		})
	}
}

// checkTiming asserts that the plan's durations put the holder's next step where the
// trace does, with room to spare: the successor acquires between the expiry and 1.5
// retries later, reads at once and writes one work period later.
func checkTiming(t *testing.T, p plan.Plan, point string) {
	t.Helper()
	ttl, work, retry := p.TTL.D(), p.Work.D(), p.Retry.D()
	acquire := [2]time.Duration{ttl, ttl + retry*3/2} // earliest and latest successor acquire
	const room = 50 * time.Millisecond
	if point == "" {
		if len(p.Faults) != 0 || work < acquire[1]+room {
			t.Errorf("careless stall: faults %v, work %s; want no fault and work past %s", p.Faults, work, acquire[1]+room)
		}
		return
	}
	if len(p.Faults) != 1 {
		t.Fatalf("faults %v, want one pause", p.Faults)
	}
	f := p.Faults[0]
	if f.Kind != "client-pause" || f.Point != point || f.Target != "client:0" || f.Trigger != "client:0@acquire:granted" {
		t.Errorf("fault %+v, want a client-pause of client 0 at %s armed at its grant", f, point)
	}
	switch point {
	case workload.BeforeWrite: // the pause ends inside the successor's work
		if work >= ttl-room {
			t.Errorf("work %s leaves the careful holder's check before its write no room in a %s lease", work, ttl)
		}
		resume := work + f.Duration.D()
		if resume < acquire[1]+room || resume > acquire[0]+work-room {
			t.Errorf("holder resumes at %s, want inside the successor's work (%s..%s) with %s to spare", resume, acquire[1], acquire[0]+work, room)
		}
	case workload.AfterAcquire: // the pause outlasts the successor's acquire
		if f.Duration.D() < acquire[1]+room {
			t.Errorf("pause %s ends before the successor surely acquired (%s)", f.Duration.D(), acquire[1])
		}
	}
}

// TestTranslateFailover: a Failover counterexample becomes failover-loss fitted to it; a
// lagging replica promoted over one that had the grant, a failover that cuts one replica.
func TestTranslateFailover(t *testing.T) {
	for config, want := range map[string]lin.Property{"Failover_async_mutex": lin.P1, "Failover_async_fence": lin.P3} {
		cx, err := Load(filepath.Join(testdata, config+".trace"))
		if err != nil {
			t.Fatal(err)
		}
		tl, err := Translate(cx)
		if err != nil {
			t.Fatal(err)
		}
		p := tl.Plan
		if tl.Breaks != want || p.Topology != "replicated:2" || p.Clients != 2 || len(p.Faults) != 1 ||
			p.Faults[0].Kind != "failover" || p.Faults[0].Target != "client:0" || tl.Holder != 0 || tl.Successor != 1 {
			t.Errorf("%s: breaks %s, plan %s %d clients, faults %+v, holder %d successor %d", config, tl.Breaks, p.Topology, p.Clients, p.Faults, tl.Holder, tl.Successor)
		}
	}
	tl := translate(t, "Failover_wait1of2_mutex")
	if f := tl.Plan.Faults[0]; tl.Breaks != lin.P1 || tl.Plan.Topology != "replicated:3" || tl.Plan.WaitReplicas != 1 || f.Cut != "one" || f.Point != lockimpl.StepGranted {
		t.Errorf("Failover_wait1of2_mutex: breaks %s, plan %s waiting for %d, fault %+v; want P1, replicated:3, WAIT 1, cut one at the grant", tl.Breaks, tl.Plan.Topology, tl.Plan.WaitReplicas, f)
	}
}

// TestTranslateClockJump: LeaseLock_clockjump becomes the server's clock jumping the
// trace's ticks at the trace's time after the holder's grant, and the holder waiting
// before its write until the successor's grant.
func TestTranslateClockJump(t *testing.T) {
	tl := translate(t, "LeaseLock_clockjump")
	p := tl.Plan
	if tl.Breaks != lin.P1 || p.Impl != "fenced" || p.Topology != "single" || p.ServerClock != "faketime" || tl.Holder != 0 || tl.Successor != 1 || len(p.Faults) != 2 {
		t.Fatalf("breaks %s, impl %s on %s, server clock %q, holder %d, successor %d, faults %+v", tl.Breaks, p.Impl, p.Topology, p.ServerClock, tl.Holder, tl.Successor, p.Faults)
	}
	jump, pause := p.Faults[0], p.Faults[1]
	if jump.Kind != "server-clock" || jump.Trigger != "client:0@acquire:granted" || jump.At.D() != time.Second || jump.Offset.D() != 2*time.Second || p.TTL.D() != 3*time.Second {
		t.Errorf("jump %+v with ttl %s; want lock-0's clock 2s forward 1s after client 0's grant, ttl 3s", jump, p.TTL.D())
	}
	if pause.Kind != "client-pause" || pause.Until != "client:1@acquire:granted" || pause.Point != workload.BeforeWrite {
		t.Errorf("pause %+v; want client 0 held before its write until client 1's grant", pause)
	}
}

// TestTranslateDrift: LeaseLock_drift becomes the holder's clock set back by the trace's
// lag at its grant, and the holder waiting after its grant until the successor's.
func TestTranslateDrift(t *testing.T) {
	tl := translate(t, "LeaseLock_drift")
	p := tl.Plan
	if tl.Breaks != lin.P1 || p.Impl != "fenced" || p.Careless || tl.Holder != 0 || tl.Successor != 1 || len(p.Faults) != 2 || p.TTL.D() != 3*time.Second {
		t.Fatalf("breaks %s, impl %s, careless %v, holder %d, successor %d, ttl %s, faults %+v", tl.Breaks, p.Impl, p.Careless, tl.Holder, tl.Successor, p.TTL.D(), p.Faults)
	}
	clock, pause := p.Faults[0], p.Faults[1]
	if clock.Kind != "client-clock" || clock.Target != "client:0" || clock.Trigger != "client:0@acquire:granted" || clock.Offset.D() != -time.Second {
		t.Errorf("clock %+v; want client 0's clock set back 1s at its grant", clock)
	}
	if pause.Kind != "client-pause" || pause.Point != workload.AfterAcquire || pause.Until != "client:1@acquire:granted" || pause.Duration.D() <= p.TTL.D() {
		t.Errorf("pause %+v; want client 0 held after its grant until client 1's, longer than the ttl at most", pause)
	}
}

func checkMapError(t *testing.T, err error, file, event, reason string) {
	t.Helper()
	var me *MapError
	if !errors.As(err, &me) {
		t.Fatalf("error %v, want a MapError", err)
	}
	if me.File != file || me.Event.String() != event || !strings.Contains(err.Error(), reason) ||
		!strings.HasPrefix(err.Error(), fmt.Sprintf("%s:%d: cannot map event %s: ", file, me.Event.Line, event)) {
		t.Errorf("error %q, want %s:<line>: cannot map event %s: ...%s...", err, file, event, reason)
	}
}

// synthetic is a counterexample of LeaseLock_pause_off's config with the given events
// after <<"init">>, each in a state of its own (the bridge reads only the events).
func synthetic(t *testing.T, events ...string) *Counterexample {
	t.Helper()
	var b strings.Builder
	b.WriteString("# TLC counterexample: config LeaseLock_pause_off (tla/LeaseLock_pause_off.cfg), spec LeaseLock, invariant StoreSafety violated.\n")
	b.WriteString("Error: Invariant StoreSafety is violated.\n")
	for i, ev := range append([]string{`<<"init">>`}, events...) {
		fmt.Fprintf(&b, "State %d: <Step>\n/\\ event = %s\n\n", i+1, ev)
	}
	tr, err := ParseTrace(strings.NewReader(b.String()), "synthetic.trace")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadConfig("../LeaseLock_pause_off.cfg")
	if err != nil {
		t.Fatal(err)
	}
	return &Counterexample{Trace: tr, Config: cfg}
}

// Schedules a real run cannot aim at are refused at the event that needs them.
func TestTranslateRefusesSchedules(t *testing.T) {
	// c1 reads, checks and pauses; three ticks; it resumes; c2 acquires.
	prefix := []string{`<<"acquire", c1, 1>>`, `<<"check-ok", c1, 0>>`, `<<"read", c1, 0, 1>>`, `<<"check-ok", c1, 0>>`, `<<"pause", c1>>`,
		`<<"tick", 1>>`, `<<"tick", 2>>`, `<<"tick", 3>>`, `<<"resume", c1>>`}
	cases := []struct {
		name   string
		events []string
		event  string
		reason string
	}{
		{"pause before the read", []string{`<<"acquire", c1, 1>>`, `<<"check-ok", c1, 0>>`, `<<"pause", c1>>`},
			`<<"pause", c1>>`, "no pause point there"},
		{"pause before the second check", []string{`<<"acquire", c1, 1>>`, `<<"check-ok", c1, 0>>`, `<<"read", c1, 0, 1>>`, `<<"pause", c1>>`},
			`<<"pause", c1>>`, "no pause point there"},
		{"write between acquire and read", append(prefix[:9:9], `<<"acquire", c2, 2>>`, `<<"write", c1, 1, 1>>`, `<<"check-ok", c2, 3>>`),
			`<<"write", c1, 1, 1>>`, "back to back"},
		{"write before the successor acquires", append(prefix[:9:9], `<<"write", c1, 1, 1>>`, `<<"acquire", c2, 2>>`),
			`<<"write", c1, 1, 1>>`, "never overlap"},
		{"no successor", prefix, `<<"resume", c1>>`, "no other client acquires"},
		{"unknown event", []string{`<<"teleport", c1>>`}, `<<"teleport", c1>>`, "not an event of LeaseLock.tla"},
		{"unknown client", []string{`<<"acquire", c3, 1>>`}, `<<"acquire", c3, 1>>`, `"c3" is not one of the clients`},
		{"read without check", []string{`<<"acquire", c1, 1>>`, `<<"read", c1, 0, 1>>`}, `<<"read", c1, 0, 1>>`, "cannot take this step"},
		{"two pauses", append(prefix[:9:9], `<<"pause", c1>>`), `<<"pause", c1>>`, "a second stall"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Translate(synthetic(t, c.events...))
			checkMapError(t, err, "synthetic.trace", c.event, c.reason)
		})
	}
}

// A stale write after the successor's write is aimed past it, with no upper bound.
func TestTranslateWriteAfterSuccessor(t *testing.T) {
	tl, err := Translate(synthetic(t, `<<"acquire", c1, 1>>`, `<<"check-ok", c1, 0>>`, `<<"read", c1, 0, 1>>`,
		`<<"check-ok", c1, 0>>`, `<<"pause", c1>>`, `<<"tick", 1>>`, `<<"tick", 2>>`, `<<"tick", 3>>`, `<<"acquire", c2, 2>>`,
		`<<"check-ok", c2, 3>>`, `<<"read", c2, 0, 2>>`, `<<"check-ok", c2, 3>>`, `<<"write", c2, 1, 2>>`,
		`<<"resume", c1>>`, `<<"write", c1, 1, 1>>`))
	if err != nil {
		t.Fatal(err)
	}
	p := tl.Plan
	resume := p.Work.D() + p.Faults[0].Duration.D()
	if tl.Next != histories.Write || tl.After != histories.Write || tl.Before != "" || resume <= p.TTL.D()+p.Retry.D()+p.Work.D()+50*time.Millisecond {
		t.Errorf("next %q after %q before %q, resume at %s", tl.Next, tl.After, tl.Before, resume)
	}
}

// What each Redlock counterexample must turn into: the servers, the holder's lost
// requests, the node fault at the holder's grant, and a work period that covers the
// successor's grant and ends before the holder's keys expire.
func TestTranslateRedlock(t *testing.T) {
	cases := []struct {
		config           string
		n                int
		lost             []string // servers the holder's requests never reach
		kind             string
		at, down, offset time.Duration
		holder, succ     []int
	}{
		{"Redlock3_restart", 3, []string{"lock-2"}, "server-crash", 0, 0, 0, []int{0, 1}, []int{0, 2}},
		{"Redlock5_restart", 5, []string{"lock-3", "lock-4"}, "server-crash", 0, 0, 0, []int{0, 1, 2}, []int{0, 3, 4}},
		{"Redlock3_short_delay", 3, []string{"lock-2"}, "server-crash", 0, 2 * time.Second, 0, []int{0, 1}, []int{0, 2}},
		{"Redlock3_clockjump", 3, []string{"lock-2"}, "server-clock", time.Second, 0, 2 * time.Second, []int{0, 1}, []int{0, 2}},
		{"Redlock5_clockjump", 5, []string{"lock-3", "lock-4"}, "server-clock", 0, 0, 2 * time.Second, []int{0, 1, 2}, []int{0, 3, 4}},
	}
	for _, c := range cases {
		t.Run(c.config, func(t *testing.T) {
			tl := translate(t, c.config)
			p, rl := tl.Plan, tl.Redlock
			t.Log(p.Description)
			if rl == nil {
				t.Fatal("no Redlock replay")
			}
			if tl.Breaks != lin.P1 || p.Impl != "redlock" || p.Topology != fmt.Sprintf("nodes:%d", c.n) || p.Clients != 2 ||
				tl.Holder != 0 || tl.Successor != 1 || p.Persistence != "none" || p.Careless {
				t.Errorf("breaks %s, impl %s, topology %s, clients %d, holder %d, successor %d, persistence %q, careless %v",
					tl.Breaks, p.Impl, p.Topology, p.Clients, tl.Holder, tl.Successor, p.Persistence, p.Careless)
			}
			if !slices.Equal(rl.HolderNodes, c.holder) || !slices.Equal(rl.SuccessorNodes, c.succ) {
				t.Errorf("holder nodes %v, successor nodes %v; want %v, %v", rl.HolderNodes, rl.SuccessorNodes, c.holder, c.succ)
			}
			var lost []string
			for i, f := range p.Faults {
				if i == rl.Fault || i == rl.Pause {
					continue
				}
				if f.Kind != "net-reset" || f.Direction != "up" || f.Trigger != "" || f.At.D() != 0 || f.Duration.D() < p.Duration.D() ||
					!strings.HasPrefix(f.Target, "client:0->") {
					t.Errorf("fault %+v, want the holder's requests lost for the whole run", f)
				}
				lost = append(lost, strings.TrimPrefix(f.Target, "client:0->"))
			}
			if !slices.Equal(lost, c.lost) {
				t.Errorf("lost requests to %v, want %v", lost, c.lost)
			}
			if rl.Pause < 0 {
				t.Errorf("no pause of the holder until the successor's grant")
			} else if f := p.Faults[rl.Pause]; f.Kind != "client-pause" || f.Target != "client:0" || f.Trigger != "client:0@acquire:granted" || f.Until != "client:1@acquire:granted" {
				t.Errorf("pause %+v, want the holder's, armed at its grant, until the successor's grant", f)
			}
			f := p.Faults[rl.Fault]
			if f.Kind != c.kind || f.Target != "lock-0" || f.Trigger != "client:0@acquire:granted" || f.At.D() != c.at || f.Offset.D() != c.offset ||
				(c.kind == "server-crash" && f.Duration.D() != c.down) || (c.kind == "server-clock" && (f.Duration.D() < p.Duration.D() || p.ServerClock != "faketime")) {
				t.Errorf("node fault %+v (server clock %q), want %s of lock-0 at client 0's grant +%s, down %s, jump %s", f, p.ServerClock, c.kind, c.at, c.down, c.offset)
			}
			// The successor can be granted from at+down on; the holder must still believe
			// then, by half a tick, and release before its keys expire.
			inPlace := c.at + c.down
			if work, ttl := p.Work.D(), p.TTL.D(); work < inPlace+rl.Tick/2 || work+redlockRoom > ttl {
				t.Errorf("work %s: want at least %s (the fault in place at %s, half a tick %s) and %s before the ttl %s", work, inPlace+rl.Tick/2, inPlace, rl.Tick/2, redlockRoom, ttl)
			}
			if p.Duration.D() < p.Work.D()+inPlace+redlockSlack || p.Think.D() <= p.Retry.D() {
				t.Errorf("duration %s, think %s, retry %s", p.Duration.D(), p.Think.D(), p.Retry.D())
			}
		})
	}
}

// syntheticRedlock is a counterexample of Redlock3_restart's config (3 nodes, TTL 3) with
// the given events after <<"init">>.
func syntheticRedlock(t *testing.T, events ...string) *Counterexample {
	t.Helper()
	var b strings.Builder
	b.WriteString("# TLC counterexample: config Redlock3_restart (tla/Redlock3_restart.cfg), spec Redlock, invariant MutualExclusion violated.\n")
	b.WriteString("Error: Invariant MutualExclusion is violated.\n")
	for i, ev := range append([]string{`<<"init">>`}, events...) {
		fmt.Fprintf(&b, "State %d: <Step>\n/\\ event = %s\n\n", i+1, ev)
	}
	tr, err := ParseTrace(strings.NewReader(b.String()), "synthetic.trace")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadConfig("../Redlock3_restart.cfg")
	if err != nil {
		t.Fatal(err)
	}
	return &Counterexample{Trace: tr, Config: cfg}
}

// Redlock schedules with no real counterpart are refused at the event that needs one.
func TestTranslateRedlockRefuses(t *testing.T) {
	// Both clients end up holding; what comes before decides.
	end := []string{`<<"set-fail", c1, 3>>`, `<<"acquired", c1, {1, 2}, 3>>`, `<<"acquired", c2, {1, 2, 3}, 3>>`}
	lateC1 := []string{`<<"start-attempt", c1, 0>>`, `<<"set-ok", c1, 1, 3>>`, `<<"set-ok", c1, 2, 3>>`}
	expiry := []string{`<<"tick", 1>>`, `<<"tick", 2>>`, `<<"tick", 3>>`, `<<"start-attempt", c2, 3>>`,
		`<<"set-ok", c2, 1, 6>>`, `<<"set-ok", c2, 2, 6>>`, `<<"set-ok", c2, 3, 6>>`}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	cases := []struct {
		name   string
		events []string
		event  string
		reason string
	}{
		{"unknown event", []string{`<<"teleport", c1>>`}, `<<"teleport", c1>>`, "not an event of Redlock.tla"},
		{"unknown client", []string{`<<"start-attempt", c3, 0>>`}, `<<"start-attempt", c3, 0>>`, `"c3" is not one of the clients`},
		{"out of turn", []string{`<<"start-attempt", c1, 0>>`, `<<"set-ok", c1, 2, 3>>`}, `<<"set-ok", c1, 2, 3>>`, "out of turn"},
		{"release", cat(lateC1, []string{`<<"set-ok", c1, 3, 3>>`, `<<"acquired", c1, {1, 2, 3}, 3>>`, `<<"release", c1>>`}),
			`<<"release", c1>>`, "one attempt per client"},
		{"second fault", []string{`<<"crash", 1>>`, `<<"restart", 1, "empty">>`, `<<"clock-jump", 2, 2>>`}, `<<"clock-jump", 2, 2>>`, "a second node fault"},
		{"no fault", cat(lateC1, expiry, end), `<<"acquired", c2, {1, 2, 3}, 3>>`, "nothing for the bridge to strike"},
		{"fault before the grant", cat(lateC1, []string{`<<"crash", 3>>`, `<<"restart", 3, "empty">>`}, expiry, end),
			`<<"crash", 3>>`, "before c1 is granted there"},
		{"grant after an expiry", cat(lateC1[:2], []string{`<<"crash", 1>>`, `<<"restart", 1, "empty">>`}, lateC1[2:], expiry, end),
			`<<"set-ok", c2, 2, 6>>`, "no fault struck it"},
		{"refusal after the real expiry", []string{`<<"start-attempt", c1, 0>>`, `<<"set-ok", c1, 1, 3>>`, `<<"crash", 1>>`,
			`<<"tick", 1>>`, `<<"tick", 2>>`, `<<"tick", 3>>`, `<<"restart", 1, "empty">>`, `<<"set-ok", c1, 2, 6>>`,
			`<<"start-attempt", c2, 3>>`, `<<"set-ok", c2, 1, 6>>`, `<<"set-fail", c2, 2>>`, `<<"set-ok", c2, 3, 6>>`,
			`<<"set-fail", c1, 3>>`, `<<"acquired", c1, {1, 2}, 0>>`, `<<"acquired", c2, {1, 3}, 3>>`},
			`<<"set-fail", c2, 2>>`, "has expired"},
		{"persistence", []string{`<<"crash", 1>>`, `<<"restart", 1, "with-keys">>`}, `<<"restart", 1, "with-keys">>`, "Persist = false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Translate(syntheticRedlock(t, c.events...))
			checkMapError(t, err, "synthetic.trace", c.event, c.reason)
		})
	}
}
