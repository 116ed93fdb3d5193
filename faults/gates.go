package faults

import (
	"context"
	"fmt"
	"sync"

	"github.com/locklab/locklab/faults/gates"
	"github.com/locklab/locklab/faults/spec"
	"github.com/locklab/locklab/workload"
)

// Gates and ClientProcess are package gates's, which the clients' hooks reach.
type (
	Gates         = gates.Gates
	ClientProcess = gates.ClientProcess
)

// Modes of client-pause (package gates stops the world).
const PauseClient, PauseProcess = gates.PauseClient, gates.PauseProcess

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
	client, err := spec.ClientTarget(c.spec.Target, env.Clients)
	if err != nil || c.spec.Mode != PauseProcess || !env.Gates.KnowsProcesses() {
		return err // which clients run as processes is known once their lockers are built
	}
	for i := range env.Clients {
		if (client == -1 || client == i) && env.Gates.Process(i) == nil {
			return fmt.Errorf("client-pause mode %s: client %d does not run as a process of its own; use a subprocess client (e.g. watchdog-process)", PauseProcess, i)
		}
	}
	return nil
}

func (c *clientGate) Inject(_ context.Context, env *Env) error {
	client, err := spec.ClientTarget(c.spec.Target, env.Clients)
	if err != nil {
		return err
	}
	point := c.spec.Point
	if point == "" {
		point = workload.BeforeWrite
	}
	g := gates.Gate{Client: client, Point: point, Crash: c.crash, Stall: c.spec.Duration, World: c.spec.Mode == PauseProcess}
	if c.spec.Until != "" {
		// The pause ends when the other client gets there after the pause began: a gate
		// of its own, armed as the stall begins, closes until.
		ut, err := ParseTrigger(c.spec.Until, env.Clients)
		if err != nil {
			return fmt.Errorf("until: %w", err)
		}
		gs := env.Gates
		until := func() <-chan struct{} {
			ch, once := make(chan struct{}), sync.Once{}
			gs.Arm(ut.gate(func(context.Context) { once.Do(func() { close(ch) }) }))
			return ch
		}
		g.Until, g.UntilNote = until, ut.String()
	}
	env.Gates.Arm(g)
	return nil
}

func (c *clientGate) Heal(context.Context, *Env) error { return nil }
