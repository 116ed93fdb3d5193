// Package gates is where a run's clients stall, crash or are held on purpose: every
// client calls Reach at each point of its workload and of its lock's steps, and the
// faults arm gates there (a pause, a crash, a trigger that starts a fault) or hold the
// clients for a while. It owns no fault: the faults package arms it.
package gates

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// Gates are the places where a client stalls or crashes on purpose. A client calls Reach
// at each point; an armed gate matching the client and point fires once.
type Gates struct {
	rec   *histories.Recorder
	mu    sync.Mutex
	arm   []*Gate
	holds []*hold
	// procs are the clients that run as processes of their own (nil for in-process
	// clients), for stop-the-world pauses; set by SetProcesses before the run starts.
	procs []ClientProcess
}

// ClientProcess is a lock client that runs as a process of its own (a subprocess
// client): a stop-the-world pause stops all of it, its renewal threads included.
type ClientProcess interface {
	// Signal sends sig to the client's process group; SIGSTOP returns once it stopped.
	Signal(sig syscall.Signal) error
}

// SetProcesses tells the gates which clients run as processes (procs[i] nil: in-process).
func (g *Gates) SetProcesses(procs []ClientProcess) {
	g.mu.Lock()
	g.procs = procs
	g.mu.Unlock()
}

// KnowsProcesses reports whether SetProcesses was called.
func (g *Gates) KnowsProcesses() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.procs != nil
}

// Process is client's process, nil for a client that runs inside locklab.
func (g *Gates) Process(client int) ClientProcess {
	g.mu.Lock()
	defer g.mu.Unlock()
	if client < 0 || client >= len(g.procs) {
		return nil
	}
	return g.procs[client]
}

// Gate is one armed place: when its client (-1: any) reaches its point (the Nth time
// since it was armed) it fires once, crashing the client, stalling it, or calling Trigger.
type Gate struct {
	Client  int // -1: any client
	Point   string
	Nth     int // fire at this arrival (0 and 1: the first)
	Crash   bool
	Stall   time.Duration
	World   bool                  // stop the world: the client's whole process stops for the stall
	Trigger func(context.Context) // set: the gate starts a fault instead of acting itself
	// Until, when set, is called as the stall begins and ends the stall when the channel
	// it returns closes (at the latest after Stall): what the stall waits for must come
	// after it began. UntilNote says what that is ("client 1's acquire:granted").
	Until     func() <-chan struct{}
	UntilNote string
	fired     bool
	arrivals  int
}

// New returns gates that record the windows of the faults they fire in rec.
func New(rec *histories.Recorder) *Gates { return &Gates{rec: rec} }

// Reach is called by client at point (it is a workload.Hook, and a lockimpl.StepFunc
// once bound to a client). It waits while a hold stands at point (or until ctx ends),
// then returns lockimpl.ErrCrashed when a crash fires, blocks for the stall when a pause
// fires (or until ctx ends), and otherwise returns nil at once.
func (g *Gates) Reach(ctx context.Context, client int, point string) error {
	if g == nil {
		return nil
	}
	g.wait(ctx, point)
	g.mu.Lock()
	var hits []*Gate
	for _, a := range g.arm {
		if !a.fired && a.Point == point && (a.Client == -1 || a.Client == client) {
			if a.arrivals++; a.arrivals < a.Nth {
				continue
			}
			a.fired = true
			hits = append(hits, a)
		}
	}
	g.mu.Unlock()
	// Triggered faults go in first, then the client crashes or stalls.
	for _, h := range hits {
		if h.Trigger != nil {
			h.Trigger(ctx)
		}
	}
	target := "client:" + strconv.Itoa(client)
	for _, h := range hits {
		if h.Crash {
			w := g.rec.FaultStart("client-crash", target, "at "+point)
			g.rec.FaultEnd(w)
			return fmt.Errorf("at %s: %w", point, lockimpl.ErrCrashed)
		}
	}
	for _, h := range hits {
		if h.Trigger != nil {
			continue
		}
		if h.World {
			if err := g.stopTheWorld(ctx, client, target, point, h); err != nil {
				return err
			}
			continue
		}
		detail := fmt.Sprintf("%s at %s", h.Stall, point)
		w := g.rec.FaultStart("client-pause", target, detail+h.untilNote())
		g.stall(ctx, w, detail, h)
		g.rec.FaultEnd(w)
	}
	return nil
}

// untilNote is how a stall with Until says what ends it.
func (a *Gate) untilNote() string {
	if a.Until == nil {
		return ""
	}
	return ", until " + a.UntilNote
}

// stall waits out a's stall, recorded in window w with detail: its Stall, or until Until
// closes; the window then says which came.
func (g *Gates) stall(ctx context.Context, w int, detail string, a *Gate) {
	if a.Until == nil {
		sleep(ctx, a.Stall)
		return
	}
	start := time.Now()
	if AwaitUntil(ctx, a.Until(), start.Add(a.Stall)) {
		g.rec.FaultDetail(w, fmt.Sprintf("%s, until %s: came after %s", detail, a.UntilNote, time.Since(start).Round(time.Millisecond)))
	} else {
		g.rec.FaultDetail(w, fmt.Sprintf("%s, until %s: it did not come", detail, a.UntilNote))
	}
}

// stopTheWorld stops client's whole process group (SIGSTOP) for a's stall, as a long GC
// pause stops every thread of a process, then continues it. The caller stalls meanwhile.
func (g *Gates) stopTheWorld(ctx context.Context, client int, target, point string, a *Gate) error {
	p := g.Process(client)
	if p == nil {
		return fmt.Errorf("client-pause mode %s at %s: client %d does not run as a process of its own", PauseProcess, point, client)
	}
	detail := fmt.Sprintf("%s at %s, whole process stopped", a.Stall, point)
	w := g.rec.FaultStart("client-pause", target, detail+a.untilNote())
	defer g.rec.FaultEnd(w)
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("client-pause mode %s: stop client %d: %w", PauseProcess, client, err)
	}
	g.stall(ctx, w, detail, a)
	if err := p.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("client-pause mode %s: continue client %d: %w", PauseProcess, client, err)
	}
	return nil
}

// Modes of client-pause.
const (
	PauseClient  = "client"  // the default: the client's own steps stall; its other threads (renewals) go on
	PauseProcess = "process" // stop the world: the client's whole process stops (subprocess clients)
)

// hold keeps every client that reaches its point there until it is lifted.
type hold struct {
	point   string
	lifted  chan struct{}
	clients int       // how many clients it held
	first   time.Time // when the first of them arrived
}

// Hold holds every client that reaches point from now on until lift is called (or the
// client's context ends): a fault that needs the clients out of the way for a moment
// takes one. lift reports how many clients were held and the longest of their waits.
func (g *Gates) Hold(point string) (lift func() (clients int, longest time.Duration)) {
	h := &hold{point: point, lifted: make(chan struct{})}
	g.mu.Lock()
	g.holds = append(g.holds, h)
	g.mu.Unlock()
	var once sync.Once
	var longest time.Duration
	return func() (int, time.Duration) {
		g.mu.Lock()
		defer g.mu.Unlock()
		once.Do(func() {
			g.holds = slices.DeleteFunc(g.holds, func(x *hold) bool { return x == h })
			close(h.lifted)
			if h.clients > 0 {
				longest = time.Since(h.first)
			}
		})
		return h.clients, longest
	}
}

// wait blocks a client at point while a hold on it stands.
func (g *Gates) wait(ctx context.Context, point string) {
	g.mu.Lock()
	var on []*hold
	for _, h := range g.holds {
		if h.point == point {
			if h.clients == 0 {
				h.first = time.Now()
			}
			h.clients++
			on = append(on, h)
		}
	}
	g.mu.Unlock()
	for _, h := range on {
		select {
		case <-h.lifted:
		case <-ctx.Done():
		}
	}
}

// AddTrigger arms a gate that calls fire (once) when client reaches point.
func (g *Gates) AddTrigger(client int, point string, fire func(context.Context)) {
	g.Arm(Gate{Client: client, Point: point, Trigger: fire})
}

// Arm arms a gate.
func (g *Gates) Arm(a Gate) {
	g.mu.Lock()
	g.arm = append(g.arm, &a)
	g.mu.Unlock()
}

// Holds counts the holds standing.
func (g *Gates) Holds() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.holds)
}

// Armed counts the gates that have not fired yet.
func (g *Gates) Armed() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, a := range g.arm {
		if !a.fired {
			n++
		}
	}
	return n
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// AwaitUntil waits for ch until deadline (or ctx ends); it reports whether ch closed.
func AwaitUntil(ctx context.Context, ch <-chan struct{}, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}
