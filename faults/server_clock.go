package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/exactlyonce"
	"github.com/locklab/locklab/faults/spec"
)

// Modes of server-clock.
const (
	ClockModeFaketime = "faketime" // libfaketime moves the server's wall clock (the default)
	ClockModeEmulated = "emulated" // every volatile key's TTL is shifted by the jump instead
)

// shiftTimeout bounds the TTL-shifting script, which scans the whole keyspace.
const shiftTimeout = 10 * time.Second

// timeTimeout bounds reading a server's clock; a server that does not answer (paused by
// another fault) leaves the clock unmeasured rather than holding up the schedule.
const timeTimeout = 2 * time.Second

// clockTolerance is how far the server clock measured by TIME may differ from the one
// set, on top of the measurement's round trip, before Inject calls it a failure: enough
// for a busy machine, far below any jump worth making.
const clockTolerance = 100 * time.Millisecond

// serverClock is server-clock. With libfaketime the server's wall clock really moves;
// emulated, the keys are changed as that move would have changed their expiry: a jump
// forward by d at instant t expires at t every key with less than d to live and leaves
// the others d less, exactly what shortening every remaining TTL by d does. Keys set
// during the fault need nothing: with a moved clock their TTL runs from the moved time.
// Healing moves the clock back, which gives every key alive then d more to live; the
// emulation lengthens them by d.
type serverClock struct {
	spec Spec

	mu     sync.Mutex
	node   cluster.Node // the server the fault acts on, from Inject until healed
	window int
}

func (c *serverClock) check() error {
	s := c.spec
	switch {
	case s.Duration <= 0:
		return fmt.Errorf("needs a duration: the clock stays moved until healed")
	case s.Rate < 0:
		return fmt.Errorf("rate %g: want a positive speed factor (1 = normal)", s.Rate)
	case s.Offset == 0 && (s.Rate == 0 || s.Rate == 1):
		return fmt.Errorf("neither offset nor a rate other than 1: the clock would not change")
	}
	switch s.Mode {
	case "", ClockModeFaketime:
	case ClockModeEmulated:
		if s.Rate != 0 && s.Rate != 1 {
			return fmt.Errorf("mode emulated shifts TTLs once, as a jump does; it cannot make a clock run at rate %g (use mode faketime)", s.Rate)
		}
		if s.Offset%time.Millisecond != 0 {
			return fmt.Errorf("mode emulated shifts TTLs in milliseconds; offset %s is not a whole number of them", s.Offset)
		}
	default:
		return fmt.Errorf("mode %q: want %s (libfaketime) or %s (TTL shifting)", s.Mode, ClockModeFaketime, ClockModeEmulated)
	}
	return nil
}

func (c *serverClock) emulated() bool { return c.spec.Mode == ClockModeEmulated }

func (c *serverClock) rate() float64 {
	if c.spec.Rate == 0 {
		return 1
	}
	return c.spec.Rate
}

const clockWhy = "changes when its keys expire"

// target is the server, checked for the mode: with libfaketime it must run under it.
func (c *serverClock) target(env *Env) (cluster.Node, error) {
	if env.Cluster != nil {
		if err := OnTopology(c.spec.Kind, env.Cluster.Topology); err != nil {
			return nil, err
		}
	}
	if !c.emulated() {
		n, err := processNode(env, c.spec, clockWhy)
		if err != nil {
			return nil, err
		}
		if cn, ok := n.(cluster.ClockNode); !ok || !cn.FakeClock() {
			return nil, fmt.Errorf("%s on %s: the server does not run under libfaketime; set the plan's server_clock to %s (needs scripts/build-redis-libc.sh), or use mode %s",
				c.spec.Kind, n.Name(), cluster.ClockFaketime, ClockModeEmulated)
		}
		return n, nil
	}
	return serverNode(env, c.spec, clockWhy)
}

func (c *serverClock) Available(env *Env) error {
	_, err := c.target(env)
	return err
}

func (c *serverClock) Inject(ctx context.Context, env *Env) error {
	n, err := c.target(env)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.emulated() {
		return c.injectEmulated(ctx, env, n)
	}
	return c.injectFaketime(ctx, env, n.(cluster.ClockNode))
}

// injectFaketime moves the clock from where it is now, then reads it back with TIME, so
// that a server on which libfaketime does not act is an error rather than a quiet no-op.
// The window opens before the clock moves, so that no operation the jump affected can
// fall before it; what was measured is added to it after.
func (c *serverClock) injectFaketime(ctx context.Context, env *Env, n cluster.ClockNode) error {
	want := n.ClockOffset() + c.spec.Offset
	what := fmt.Sprintf("libfaketime: clock of redis %s jumps %s and runs at x%g; set %+.3fs ahead",
		n.Name(), signed(c.spec.Offset), c.rate(), want.Seconds())
	c.window = spec.OpenWindow(env.Rec, c.spec, what)
	if err := n.SetClock(want, c.rate()); err != nil {
		spec.CloseWindow(env.Rec, &c.window) // the clock did not move
		return err
	}
	c.node = n
	got, rtt, err := clockOffset(ctx, n.Addr())
	measured := fmt.Sprintf("TIME says %+.3fs", got.Seconds())
	if err == nil && c.rate() != 1 && (got-want).Abs() > rtt {
		// At a rate, libfaketime's own start in the process, later than the harness
		// knew, shows as a constant lag: learnt from this reading, and read again.
		if cerr := n.CalibrateClock(want - got); cerr != nil {
			spec.DetailWindow(env.Rec, c.window, what+", "+measured)
			return cerr
		}
		measured += fmt.Sprintf(" (calibrated for libfaketime's start, %+.3fs off)", (got - want).Seconds())
		got, rtt, err = clockOffset(ctx, n.Addr())
		measured += fmt.Sprintf(", then %+.3fs", got.Seconds())
	}
	if err != nil {
		measured = "not measured: " + err.Error()
	}
	spec.DetailWindow(env.Rec, c.window, what+", "+measured)
	if err == nil && (got-want).Abs() > clockTolerance+rtt {
		return fmt.Errorf("clock of redis %s set %+.3fs ahead, but TIME says %+.3fs: is libfaketime preloaded?", n.Name(), want.Seconds(), got.Seconds())
	}
	return nil
}

// injectEmulated shortens every volatile key's TTL by the jump. The window opens before
// the first key is touched.
func (c *serverClock) injectEmulated(ctx context.Context, env *Env, n cluster.Node) error {
	how := "shortened"
	if c.spec.Offset < 0 {
		how = "lengthened"
	}
	what := fmt.Sprintf("emulated: TTL shaving: every volatile key of redis %s (db 0) had its remaining TTL %s by %s at once, as if its clock jumped %s",
		n.Name(), how, c.spec.Offset.Abs(), signed(c.spec.Offset))
	c.window = spec.OpenWindow(env.Rec, c.spec, what)
	shifted, expired, err := shiftTTLs(ctx, n, -c.spec.Offset)
	if err != nil {
		spec.CloseWindow(env.Rec, &c.window)
		return fmt.Errorf("emulate a clock jump of %+v on redis %s: %w", c.spec.Offset, n.Name(), err)
	}
	c.node = n
	spec.DetailWindow(env.Rec, c.window, fmt.Sprintf("%s (%d keys, %d expired); its clock did not move", what, shifted, expired))
	return nil
}

// Heal gives the server its real clock back; emulated, every volatile key gets back the
// time the jump took (the jump back of the healed clock).
func (c *serverClock) Heal(ctx context.Context, env *Env) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.node == nil {
		return nil
	}
	if c.emulated() {
		if _, _, err := shiftTTLs(ctx, c.node, c.spec.Offset); err != nil {
			return fmt.Errorf("undo the emulated clock jump on redis %s: %w", c.node.Name(), err)
		}
	} else if err := c.node.(cluster.ClockNode).SetClock(0, 1); err != nil {
		return err
	}
	c.node = nil
	spec.CloseWindow(env.Rec, &c.window)
	return nil
}

// serverClient is a one-connection client for the fault's own commands, sent to the
// server's own address (never through a faulty link), each exactly once.
func serverClient(addr string) *redis.Client {
	opts := exactlyonce.Options(addr, pingTimeout)
	opts.PoolSize = 1
	return redis.NewClient(opts)
}

// clockOffset measures how far the server's wall clock is ahead of ours with TIME,
// against the midpoint of the round trip, which it also returns (the measurement's error
// bound).
func clockOffset(ctx context.Context, addr string) (offset, rtt time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeTimeout)
	defer cancel()
	c := serverClient(addr)
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil { // connect first: the dial is not part of the round trip
		return 0, 0, fmt.Errorf("TIME on %s: %w", addr, err)
	}
	before := time.Now()
	server, err := c.Time(ctx).Result()
	after := time.Now()
	if err != nil {
		return 0, 0, fmt.Errorf("TIME on %s: %w", addr, err)
	}
	rtt = after.Sub(before)
	return server.Sub(before.Add(rtt / 2)), rtt, nil
}

// shiftScript adds ARGV[1] milliseconds to the remaining TTL of every key of the
// database that has one, in one script so that all keys move at the same instant, as a
// clock does; a key left with no time to live is expired at once. It returns how many
// keys it shifted and how many of those it expired.
const shiftScript = `
local shift = tonumber(ARGV[1])
local cursor, shifted, expired = "0", 0, 0
repeat
  local page = redis.call("SCAN", cursor, "COUNT", 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local ttl = redis.call("PTTL", key)
    if ttl > 0 then
      shifted = shifted + 1
      if ttl + shift <= 0 then expired = expired + 1 end
      redis.call("PEXPIRE", key, ttl + shift)
    end
  end
until cursor == "0"
return {shifted, expired}
`

// shiftTTLs runs shiftScript on server n, in the database its clients use (an external
// server's Access; else 0, where locks live).
func shiftTTLs(ctx context.Context, n cluster.Node, by time.Duration) (shifted, expired int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, shiftTimeout)
	defer cancel()
	addr := n.Addr()
	opts := cluster.NodeOptions(n, pingTimeout)
	opts.PoolSize = 1
	c := redis.NewClient(opts)
	defer c.Close()
	res, err := c.Eval(ctx, shiftScript, nil, by.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("shift TTLs on %s by %s: %w", addr, by, err)
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("shift TTLs on %s: script answered %v, want two counts", addr, res)
	}
	return res[0], res[1], nil
}

// signed is d with its sign: "+2s", "-500ms".
func signed(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}
