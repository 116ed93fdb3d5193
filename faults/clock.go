package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/faketime"
	"github.com/locklab/locklab/faults/gates"
	"github.com/locklab/locklab/faults/spec"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// NewEnv is the environment of one run: its cluster, recorder, client gates and one
// skewable clock per client.
func NewEnv(cl *cluster.Cluster, rec *histories.Recorder, clients int) *Env {
	env := &Env{Cluster: cl, Rec: rec, Clients: clients, Gates: gates.New(rec)}
	env.clocks = make([]*SkewClock, clients)
	for i := range env.clocks {
		env.clocks[i] = &SkewClock{}
	}
	return env
}

// ClientClock is client's clock: the system clock until a client-clock fault skews it.
func (e *Env) ClientClock(client int) lockimpl.Clock {
	if client < 0 || client >= len(e.clocks) {
		return lockimpl.SystemClock{}
	}
	return e.clocks[client]
}

// SkewClock is a client's view of time that a fault can set ahead or behind and make
// run fast or slow. It keeps Go's monotonic reading, so durations measured with it are
// skewed exactly as the fault says and are never disturbed by the machine's own clock.
type SkewClock struct {
	mu     sync.Mutex
	skewed bool
	since  time.Time     // real time when the skew was set
	offset time.Duration // jump applied at since
	rate   float64       // speed after since
	// file, when set, is the same clock for the client's process, under libfaketime
	// (Mirror): a skew moves both.
	file *faketime.Clock
}

// Mirror makes every skew of c move f too: the wall clock of the client's process,
// which runs under libfaketime reading f.
func (c *SkewClock) Mirror(f *faketime.Clock) {
	c.mu.Lock()
	c.file = f
	c.mu.Unlock()
}

// Now is the skewed time.
func (c *SkewClock) Now() time.Time {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.skewed {
		return now
	}
	elapsed := time.Duration(float64(now.Sub(c.since)) * c.rate)
	return c.since.Add(c.offset + elapsed)
}

// Skew jumps the clock by offset from its current reading and makes it run at rate.
func (c *SkewClock) Skew(offset time.Duration, rate float64) error {
	now := c.Now()
	real := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skewed, c.since, c.rate = true, real, rate
	c.offset = now.Sub(real) + offset
	if c.file != nil {
		return c.file.Set(real, c.offset, rate)
	}
	return nil
}

// Reset makes the clock the system clock again.
func (c *SkewClock) Reset() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skewed = false
	if c.file != nil {
		return c.file.Set(time.Now(), 0, 1)
	}
	return nil
}

// clientClock is the client-clock fault: the target client's clock (or every client's)
// jumps by Offset and runs at Rate until healed.
type clientClock struct{ spec Spec }

func (c *clientClock) targets(env *Env) ([]*SkewClock, error) {
	client, err := spec.ClientTarget(c.spec.Target, env.Clients)
	if err != nil {
		return nil, err
	}
	if client == -1 {
		return env.clocks, nil
	}
	if client >= len(env.clocks) {
		return nil, fmt.Errorf("no clock for client %d", client)
	}
	return env.clocks[client : client+1], nil
}

func (c *clientClock) Available(env *Env) error {
	if c.spec.Rate < 0 {
		return fmt.Errorf("rate %g: want a positive speed factor (1 = normal)", c.spec.Rate)
	}
	if c.spec.Offset == 0 && (c.spec.Rate == 0 || c.spec.Rate == 1) {
		return fmt.Errorf("neither offset nor a rate other than 1: the clock would not change")
	}
	_, err := spec.ClientTarget(c.spec.Target, env.Clients)
	return err
}

func (c *clientClock) Inject(_ context.Context, env *Env) error {
	clocks, err := c.targets(env)
	if err != nil {
		return err
	}
	rate := c.spec.Rate
	if rate == 0 {
		rate = 1
	}
	var errs []error
	for _, clk := range clocks {
		errs = append(errs, clk.Skew(c.spec.Offset, rate))
	}
	return errors.Join(errs...)
}

func (c *clientClock) Heal(_ context.Context, env *Env) error {
	clocks, err := c.targets(env)
	if err != nil {
		return nil // never injected
	}
	var errs []error
	for _, clk := range clocks {
		errs = append(errs, clk.Reset())
	}
	return errors.Join(errs...)
}

// MirrorClientClock makes client's clock move f too (SkewClock.Mirror): the wall clock of
// the client's process under libfaketime.
func (e *Env) MirrorClientClock(client int, f *faketime.Clock) error {
	if client < 0 || client >= len(e.clocks) {
		return fmt.Errorf("no clock for client %d", client)
	}
	e.clocks[client].Mirror(f)
	return nil
}
