package faults

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/workload"
)

// Gates are the places where a client stalls or crashes on purpose. A client calls Reach
// at each point; an armed gate matching the client and point fires once.
type Gates struct {
	rec   *histories.Recorder
	mu    sync.Mutex
	arm   []*gate
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

func (g *Gates) knowsProcesses() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.procs != nil
}

func (g *Gates) process(client int) ClientProcess {
	g.mu.Lock()
	defer g.mu.Unlock()
	if client < 0 || client >= len(g.procs) {
		return nil
	}
	return g.procs[client]
}

type gate struct {
	client  int // -1: any client
	point   string
	crash   bool
	stall   time.Duration
	world   bool                  // stop the world: the client's whole process stops for the stall
	trigger func(context.Context) // set: the gate starts a fault instead of acting itself
	fired   bool
}

// NewGates returns gates that record the windows of the faults they fire in rec.
func NewGates(rec *histories.Recorder) *Gates { return &Gates{rec: rec} }

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
	var hits []*gate
	for _, a := range g.arm {
		if !a.fired && a.point == point && (a.client == -1 || a.client == client) {
			a.fired = true
			hits = append(hits, a)
		}
	}
	g.mu.Unlock()
	// Triggered faults go in first, then the client crashes or stalls.
	for _, h := range hits {
		if h.trigger != nil {
			h.trigger(ctx)
		}
	}
	target := "client:" + strconv.Itoa(client)
	for _, h := range hits {
		if h.crash {
			w := g.rec.FaultStart("client-crash", target, "at "+point)
			g.rec.FaultEnd(w)
			return fmt.Errorf("at %s: %w", point, lockimpl.ErrCrashed)
		}
	}
	for _, h := range hits {
		if h.trigger != nil {
			continue
		}
		if h.world {
			if err := g.stopTheWorld(ctx, client, target, point, h.stall); err != nil {
				return err
			}
			continue
		}
		w := g.rec.FaultStart("client-pause", target, fmt.Sprintf("%s at %s", h.stall, point))
		sleep(ctx, h.stall)
		g.rec.FaultEnd(w)
	}
	return nil
}

// stopTheWorld stops client's whole process group (SIGSTOP) for stall, as a long GC pause
// stops every thread of a process, then continues it. The caller stalls meanwhile.
func (g *Gates) stopTheWorld(ctx context.Context, client int, target, point string, stall time.Duration) error {
	p := g.process(client)
	if p == nil {
		return fmt.Errorf("client-pause mode %s at %s: client %d does not run as a process of its own", PauseProcess, point, client)
	}
	w := g.rec.FaultStart("client-pause", target, fmt.Sprintf("%s at %s, whole process stopped", stall, point))
	defer g.rec.FaultEnd(w)
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("client-pause mode %s: stop client %d: %w", PauseProcess, client, err)
	}
	sleep(ctx, stall)
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

// hold holds every client that reaches point from now on until lift is called (or the
// client's context ends): a fault that needs the clients out of the way for a moment
// takes one. lift reports how many clients were held and the longest of their waits.
func (g *Gates) hold(point string) (lift func() (clients int, longest time.Duration)) {
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

// addTrigger arms a gate that calls fire (once) when client reaches point.
func (g *Gates) addTrigger(client int, point string, fire func(context.Context)) {
	g.add(&gate{client: client, point: point, trigger: fire})
}

func (g *Gates) add(a *gate) {
	g.mu.Lock()
	g.arm = append(g.arm, a)
	g.mu.Unlock()
}

// parseClientTarget reads "client:N" (0 ≤ N < clients) or "any" (returned as -1).
func parseClientTarget(target string, clients int) (int, error) {
	if target == "any" || target == "" {
		return -1, nil
	}
	n, ok := strings.CutPrefix(target, "client:")
	if !ok {
		return 0, fmt.Errorf("target %q: want client:N or any", target)
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || i >= clients {
		return 0, fmt.Errorf("target %q: want client:N with 0 ≤ N < %d", target, clients)
	}
	return i, nil
}

// clientGate is client-pause and client-crash: Inject arms a gate that stays armed until
// it fires or the run ends (the gates live only as long as the run). A stall that has
// begun ends by itself after its duration, or when the run's context ends: cutting it
// short at a scheduled heal would change the fault the plan asked for.
type clientGate struct {
	spec  Spec
	crash bool
}

func newClientGate(s Spec, crash bool) (Fault, error) {
	switch {
	case crash && s.Mode != "":
		return nil, fmt.Errorf("client-crash has no mode, got %q", s.Mode)
	case !crash && s.Mode != "" && s.Mode != PauseClient && s.Mode != PauseProcess:
		return nil, fmt.Errorf("client-pause mode %q: want %s (the default) or %s", s.Mode, PauseClient, PauseProcess)
	}
	return &clientGate{spec: s, crash: crash}, nil
}

func (c *clientGate) Available(env *Env) error {
	if env.Gates == nil {
		return fmt.Errorf("no client gates in this run")
	}
	client, err := parseClientTarget(c.spec.Target, env.Clients)
	if err != nil || c.spec.Mode != PauseProcess || !env.Gates.knowsProcesses() {
		return err // which clients run as processes is known once their lockers are built
	}
	for i := range env.Clients {
		if (client == -1 || client == i) && env.Gates.process(i) == nil {
			return fmt.Errorf("client-pause mode %s: client %d does not run as a process of its own; use a subprocess client (e.g. watchdog-process)", PauseProcess, i)
		}
	}
	return nil
}

func (c *clientGate) Inject(_ context.Context, env *Env) error {
	client, err := parseClientTarget(c.spec.Target, env.Clients)
	if err != nil {
		return err
	}
	point := c.spec.Point
	if point == "" {
		point = workload.BeforeWrite
	}
	env.Gates.add(&gate{client: client, point: point, crash: c.crash, stall: c.spec.Duration, world: c.spec.Mode == PauseProcess})
	return nil
}

func (c *clientGate) Heal(context.Context, *Env) error { return nil }

// armed counts the gates that have not fired yet.
func (g *Gates) armed() int {
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
