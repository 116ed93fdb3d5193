package cluster

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/locklab/locklab/cluster/faketime"
)

// Server clocks. With Options.ServerClock ClockFaketime the lock servers run under
// libfaketime (package faketime), reading their wall clock's offset and rate from a
// per-node file that SetClock rewrites while they run. Only the wall clock is faked
// (DONT_FAKE_MONOTONIC): Redis needs a sane monotonic clock for its timers, and key expiry
// uses the wall clock, which is the clock a jump must move.
const (
	ClockReal     = "real"
	ClockFaketime = "faketime"
)

// ClockNode is a Node whose wall clock the harness can move: a server of the process
// backend started under libfaketime. Other nodes may implement it and say no in FakeClock.
type ClockNode interface {
	Node
	// FakeClock reports whether the server runs under libfaketime.
	FakeClock() bool
	// SetClock makes the server's wall clock read real time + offset from now on and
	// advance at rate (1 = normal, 2 = twice as fast); SetClock(0, 1) is the real clock.
	// It takes effect at the server's next clock reading, and survives Kill and Restart.
	SetClock(offset time.Duration, rate float64) error
	// ClockOffset is how far the server's wall clock is ahead of the real one now, as set
	// (a negative value: behind). 0 for a server that does not run under libfaketime.
	ClockOffset() time.Duration
	// CalibrateClock corrects a clock running at a rate other than 1 by a reading: lag is
	// how far the server read behind the clock as set (faketime.Clock.Calibrate).
	CalibrateClock(lag time.Duration) error
}

var _ ClockNode = (*ProcessNode)(nil)

// FakeClock reports whether the node runs under libfaketime.
func (n *ProcessNode) FakeClock() bool { return n.clock != nil }

// SetClock implements ClockNode.
func (n *ProcessNode) SetClock(offset time.Duration, rate float64) error {
	return SetClock(n.clock, n.name, n.addr, offset, rate)
}

// ClockOffset implements ClockNode.
func (n *ProcessNode) ClockOffset() time.Duration { return ClockOffset(n.clock) }

// CalibrateClock implements ClockNode.
func (n *ProcessNode) CalibrateClock(lag time.Duration) error {
	return CalibrateClock(n.clock, n.name, n.addr, lag)
}

// SetClock is ClockNode.SetClock for any backend's node: clock is the node's libfaketime
// clock (nil: the server does not run under libfaketime), name and addr say which it is.
func SetClock(clock *faketime.Clock, name, addr string, offset time.Duration, rate float64) error {
	return onClock(clock, "set", name, addr, func(c *faketime.Clock) error { return c.Set(time.Now(), offset, rate) })
}

// CalibrateClock is ClockNode.CalibrateClock for any backend's node, as SetClock.
func CalibrateClock(clock *faketime.Clock, name, addr string, lag time.Duration) error {
	return onClock(clock, "calibrate", name, addr, func(c *faketime.Clock) error { return c.Calibrate(lag) })
}

// onClock does what to clock, an error naming the node when it has none or what fails.
func onClock(clock *faketime.Clock, what, name, addr string, do func(*faketime.Clock) error) error {
	if clock == nil {
		return fmt.Errorf("%s clock of redis %s on %s: it does not run under libfaketime (cluster option ServerClock %q)", what, name, addr, ClockFaketime)
	}
	if err := do(clock); err != nil {
		return fmt.Errorf("%s clock of redis %s on %s: %w", what, name, addr, err)
	}
	return nil
}

// ClockOffset is ClockNode.ClockOffset for any backend's node: 0 for a nil clock.
func ClockOffset(clock *faketime.Clock) time.Duration {
	if clock == nil {
		return 0
	}
	return clock.OffsetAt(time.Now())
}

// applyFaketime makes n, not yet started, a server of setup under libfaketime with a
// clock file of its own that starts at the real time.
func applyFaketime(n *ProcessNode, setup faketime.Setup) {
	n.binary = setup.Server
	n.clock = faketime.NewClock(filepath.Join(n.dir, "faketime.rc"))
	n.env = setup.Environ(n.clock.Path())
}

// checkClock refuses a server clock option Start does not know.
func (o Options) checkClock() error {
	switch o.ServerClock {
	case "", ClockReal, ClockFaketime:
		return nil
	}
	return fmt.Errorf("server clock %q: want %q or %q", o.ServerClock, ClockReal, ClockFaketime)
}

// lockNode is the configuration of a lock server named name: the options' persistence,
// and libfaketime when the options ask for it. The store never runs under libfaketime:
// clock faults are about the lock service.
func (o Options) lockNode(name string) NodeConfig {
	return NodeConfig{Name: name, Persistence: o.Persistence, Faketime: o.ServerClock == ClockFaketime}
}
