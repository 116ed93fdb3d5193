package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/workload"
)

// Gates are the places where a client stalls or crashes on purpose. A client calls Reach
// at each point; an armed gate matching the client and point fires once.
type Gates struct {
	rec *histories.Recorder
	mu  sync.Mutex
	arm []*gate
}

type gate struct {
	client  int // -1: any client
	point   string
	crash   bool
	stall   time.Duration
	trigger func(context.Context) // set: the gate starts a fault instead of acting itself
	fired   bool
}

// NewGates returns gates that record the windows of the faults they fire in rec.
func NewGates(rec *histories.Recorder) *Gates { return &Gates{rec: rec} }

// Reach is called by client at point (it is a workload.Hook, and a lockimpl.StepFunc
// once bound to a client). It returns lockimpl.ErrCrashed when a crash fires,
// blocks for the stall when a pause fires (or until ctx ends), and otherwise returns nil
// at once.
func (g *Gates) Reach(ctx context.Context, client int, point string) error {
	if g == nil {
		return nil
	}
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
		w := g.rec.FaultStart("client-pause", target, fmt.Sprintf("%s at %s", h.stall, point))
		sleep(ctx, h.stall)
		g.rec.FaultEnd(w)
	}
	return nil
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

func (c *clientGate) Available(env *Env) error {
	if env.Gates == nil {
		return fmt.Errorf("no client gates in this run")
	}
	_, err := parseClientTarget(c.spec.Target, env.Clients)
	return err
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
	env.Gates.add(&gate{client: client, point: point, crash: c.crash, stall: c.spec.Duration})
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
