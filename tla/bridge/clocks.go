package bridge

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"
)

// jumpTick is one tick of LeaseLock's model in a plan whose clocks move (a server's clock
// jump, a client's clock drift): a whole second, so that a jump is a whole number of
// ticks and the key it expires has expired by the time the successor asks, whatever the
// machine's speed.
const jumpTick = time.Second

// hasJump says whether a LeaseLock trace jumps the server's clock.
func hasJump(tr *Trace) bool {
	return slices.ContainsFunc(tr.States, func(st State) bool { return st.Event.Name == "server-clock-jump" })
}

// translateJump turns a LeaseLock counterexample whose server clock jumps into a plan for
// the fenced implementation on one server run under libfaketime: the server's clock
// jumps the trace's ticks forward at the trace's time after the holder's grant, which
// expires its key by the server's clock while the holder's own clock says it is still
// valid, and the successor is granted the lock. The holder waits before its write until
// then (client-pause until the successor's grant), so the two beliefs overlap by
// construction.
func translateJump(cx *Counterexample) (*Translation, error) {
	holder, successor, jump, jumpAt := -1, -1, 0, 0
	w, err := walkLease(cx, func(w *leaseWalk, st State, c int) (err error) {
		ev, clients, acquiredAt, lc, now := st.Event, w.clients, w.acquiredAt, w.lc, w.now
		switch ev.Name {
		case "acquire":
			if holder >= 0 && successor < 0 && c != holder {
				successor = c
			}
		case "release":
			if c == holder && successor < 0 {
				return w.unmappable(ev, "%s releases before any other client acquires: their critical sections never overlap", clients[c])
			}
		case "server-clock-jump":
			if holder >= 0 {
				return w.unmappable(ev, "a second jump; the bridge maps one")
			}
			if jump, err = strconv.Atoi(ev.Arg(0)); err != nil || jump <= 0 {
				return w.unmappable(ev, "the jump %q is not a positive number of ticks", ev.Arg(0))
			}
			for k, at := range acquiredAt { // the holder: its lease expires by the server's clock
				if at+lc.ttl <= now+jump && (holder < 0 || k < holder) {
					holder = k
				}
			}
			if holder < 0 {
				return w.unmappable(ev, "the jump expires no lease a client holds")
			}
			jumpAt = now - acquiredAt[holder]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	prop, lc, clients := w.prop, w.lc, w.clients
	if successor < 0 {
		return nil, fmt.Errorf("%s: no other client acquires after the server's clock jumps: no second holder to replay", cx.Trace.File)
	}

	at, lease := time.Duration(jumpAt)*jumpTick, time.Duration(lc.ttl)*jumpTick
	duration := at + 2*jumpTick
	h, s := fmt.Sprintf("client:%d", holder), fmt.Sprintf("client:%d", successor)
	faults := []plan.FaultSpec{
		{Kind: "server-clock", Target: "lock-0", Trigger: h + "@" + lockimpl.StepGranted, At: plan.D(at),
			Duration: plan.D(2 * duration), Offset: plan.D(time.Duration(jump) * jumpTick)},
		{Kind: "client-pause", Target: h, Trigger: h + "@" + lockimpl.StepGranted, Point: workload.BeforeWrite,
			Duration: plan.D(lease - planThink), Until: s + "@" + lockimpl.StepGranted},
	}
	story := fmt.Sprintf("%s is granted a %s lease; %s later the server's clock jumps %s forward (libfaketime), which expires the key while %s's own clock says it is valid, "+
		"and %s is granted the lock; %s waits before its write until then.",
		clients[holder], lease, at, time.Duration(jump)*jumpTick, clients[holder], clients[successor], clients[holder])
	return clockTranslation(cx, prop, lc, clients, holder, successor, duration, "faketime", faults, story)
}

// clkEntry reads one client's value of the trace's clk function: (c1 :> 2 @@ c2 :> 2).
var clkEntry = regexp.MustCompile(`(\w+) :> (-?\d+)`)

// translateDrift turns a LeaseLock counterexample in which a careful holder's own clock
// falls behind (MaxDrift) into a plan for the fenced implementation on one server: at its
// grant the holder's clock is set back by the lag the trace shows when the successor
// acquires (client-clock), and the holder waits at its first step after the grant until
// the successor was granted (client-pause until); its validity check then still passes
// by its own clock, after its lease has run out by the server's.
func translateDrift(cx *Counterexample) (*Translation, error) {
	holder, successor, lag, held := -1, -1, 0, 0
	w, err := walkLease(cx, func(w *leaseWalk, st State, c int) error {
		ev, clients, acquiredAt, lc, now := st.Event, w.clients, w.acquiredAt, w.lc, w.now
		switch ev.Name {
		case "check-expired":
			delete(acquiredAt, c)
		case "pause", "server-clock-jump":
			return w.unmappable(ev, "a drift story with a %s; the bridge maps the drift alone", ev.Name)
		case "acquire":
			for k, at := range acquiredAt {
				if k != c && at+lc.ttl <= now && holder < 0 {
					holder, successor, held = k, c, now-at
				}
			}
			if holder >= 0 && lag == 0 {
				clk := map[string]int{}
				for _, m := range clkEntry.FindAllStringSubmatch(st.Vars["clk"], -1) {
					clk[m[1]], _ = strconv.Atoi(m[2])
				}
				v, ok := clk[clients[holder]]
				if !ok || now-v <= 0 {
					return w.unmappable(ev, "%s's lease has run out and its clock (clk %q) does not lag: only a slow clock keeps a careful client in", clients[holder], st.Vars["clk"])
				}
				lag = now - v
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	prop, lc, clients := w.prop, w.lc, w.clients
	if holder < 0 {
		return nil, fmt.Errorf("%s: no client acquires while another's lease has run out: no drift to replay", cx.Trace.File)
	}

	lease, back := time.Duration(lc.ttl)*jumpTick, time.Duration(lag)*jumpTick
	duration := time.Duration(held)*jumpTick + 2*jumpTick
	h, s := fmt.Sprintf("client:%d", holder), fmt.Sprintf("client:%d", successor)
	faults := []plan.FaultSpec{
		{Kind: "client-clock", Target: h, Trigger: h + "@" + lockimpl.StepGranted, Duration: plan.D(2 * duration), Offset: plan.D(-back)},
		{Kind: "client-pause", Target: h, Trigger: h + "@" + lockimpl.StepGranted, Point: workload.AfterAcquire,
			Duration: plan.D(lease + back - jumpTick/2), Until: s + "@" + lockimpl.StepGranted},
	}
	story := fmt.Sprintf("%s is granted a %s lease and its clock falls %s behind; it waits after its grant until %s is granted once the lease ran out by the server's clock, "+
		"and its validity check still passes by its own.", clients[holder], lease, back, clients[successor])
	return clockTranslation(cx, prop, lc, clients, holder, successor, duration, "", faults, story)
}

// leaseWalk is a LeaseLock trace being walked (walkLease): the model's time and which
// clients hold a lease since when, as the trace's events leave them.
type leaseWalk struct {
	prop       linearizability.Property
	clients    []string
	unmappable func(Event, string, ...any) error
	lc         leaseConfig
	now        int         // the model's time, from the last tick
	acquiredAt map[int]int // client → model time of its acquire, while it holds
}

// walkLease walks a LeaseLock counterexample's events for a translation: it reads the
// invariant, the clients and the config, keeps the time and the leases, and calls step
// on every event with the index of the client it names (-1 for none), before an acquire
// is noted and before a release is forgotten.
func walkLease(cx *Counterexample, step func(w *leaseWalk, st State, c int) error) (*leaseWalk, error) {
	prop, clients, unmappable, err := begin(cx)
	if err != nil {
		return nil, err
	}
	lc, err := readLeaseConfig(cx.Config)
	if err != nil {
		return nil, err
	}
	w := &leaseWalk{prop: prop, clients: clients, unmappable: unmappable, lc: lc, acquiredAt: map[int]int{}}
	for _, st := range cx.Trace.States {
		ev := st.Event
		c := slices.Index(clients, ev.Arg(0))
		switch ev.Name {
		case "tick":
			if w.now, err = strconv.Atoi(ev.Arg(0)); err != nil {
				return nil, unmappable(ev, "the time %q is not a number", ev.Arg(0))
			}
			continue
		case "acquire":
			if c < 0 {
				return nil, unmappable(ev, "%q is not one of the clients %v", ev.Arg(0), clients)
			}
		}
		if err := step(w, st, c); err != nil {
			return nil, err
		}
		switch ev.Name {
		case "acquire":
			w.acquiredAt[c] = w.now
		case "release":
			delete(w.acquiredAt, c)
		}
	}
	return w, nil
}

// leaseConfig is what a LeaseLock translation reads of its config: the TTL in ticks,
// whether clients check their validity, and the fencing mode (checked).
type leaseConfig struct {
	ttl     int
	careful bool
	fencing string
}

func readLeaseConfig(cfg *Config) (leaseConfig, error) {
	var lc leaseConfig
	var err error
	if lc.ttl, err = cfg.Int("TTL"); err != nil {
		return lc, err
	}
	if lc.careful, err = cfg.Bool("Careful"); err != nil {
		return lc, err
	}
	if lc.fencing, err = cfg.Str("Fencing"); err != nil {
		return lc, err
	}
	if _, err := workload.ParseFencing(lc.fencing); err != nil {
		return lc, fmt.Errorf("%s: constant Fencing: %w", cfg.File, err)
	}
	return lc, nil
}

// clockTranslation is the plan both clock stories replay on: fenced on one server (its
// wall clock serverClock), a lease of the trace's ticks, the config's fencing and
// validity checks, and the story's faults, told in story.
func clockTranslation(cx *Counterexample, prop linearizability.Property, lc leaseConfig, clients []string, holder, successor int,
	duration time.Duration, serverClock string, faults []plan.FaultSpec, story string) (*Translation, error) {
	tr := cx.Trace
	p := plan.Default()
	p.Name = tr.Config
	p.Impl, p.Topology, p.Clients, p.Keys = "fenced", "single", len(clients), 1
	p.TTL, p.Work, p.Think, p.Retry = plan.D(time.Duration(lc.ttl)*jumpTick), plan.D(planThink), plan.D(planThink), plan.D(planRetry)
	p.Duration, p.Fencing, p.Careless, p.Seed, p.ServerClock = plan.D(duration), lc.fencing, !lc.careful, 1, serverClock
	p.Faults = faults
	p.Description = fmt.Sprintf("Replays the TLC counterexample %s (%s violated, trace %s), a tick being %s. Client %d is %s, client %d is %s. %s",
		tr.Config, tr.Invariant, filepath.Base(tr.File), jumpTick, holder, clients[holder], successor, clients[successor], story)
	if err := p.Validate(locks.All()); err != nil {
		return nil, fmt.Errorf("%s: translated plan: %w", tr.File, err)
	}
	return &Translation{Plan: p, Breaks: prop, Holder: holder, Successor: successor}, nil
}
