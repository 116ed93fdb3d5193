package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
)

// Each server fault is injected on real servers and must do what it says; after Heal the
// server must be back: its process running and not stopped, its clock the real one.

// serverEnv is a single-node cluster with opts and an env with one client over it.
func serverEnv(t *testing.T, opts cluster.Options) *Env {
	t.Helper()
	c := clustertest.StartWith(t, cluster.Topology{Kind: cluster.Single, Nodes: 1}, opts)
	return NewEnv(c, histories.NewRecorder(histories.Meta{Fencing: "off"}), 1)
}

// injected builds s, checks it is available in env, injects it, and heals it at cleanup.
func injected(t *testing.T, env *Env, s Spec) Fault {
	t.Helper()
	f, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Available(env); err != nil {
		t.Fatalf("Available(%s): %v", s, err)
	}
	if err := f.Inject(clustertest.Context(t), env); err != nil {
		t.Fatalf("Inject(%s): %v", s, err)
	}
	t.Cleanup(func() { _ = f.Heal(context.Background(), env) })
	return f
}

// heal heals f twice: Heal must be idempotent.
func heal(t *testing.T, env *Env, f Fault) {
	t.Helper()
	for i := range 2 {
		if err := f.Heal(clustertest.Context(t), env); err != nil {
			t.Fatalf("Heal #%d: %v", i+1, err)
		}
	}
}

// rc is a client that sends each command once, with a short timeout, so that a frozen
// server shows as an error rather than a hang.
func rc(t *testing.T, addr string, timeout time.Duration) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout})
	t.Cleanup(func() { c.Close() })
	return c
}

// procState is the state letter of pid in /proc ('T' stopped, 'R'/'S' running), or 0.
func procState(pid int) byte {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// assertBack fails unless n's process runs, is not stopped, and answers.
func assertBack(t *testing.T, n cluster.Node) {
	t.Helper()
	pn := n.(*cluster.ProcessNode)
	if s := procState(pn.Pid()); s == 0 || s == 'T' || s == 'Z' {
		t.Fatalf("redis %s (pid %d) in state %q after heal, want running", n.Name(), pn.Pid(), s)
	}
	if err := rc(t, n.Addr(), 5*time.Second).Ping(clustertest.Context(t)).Err(); err != nil {
		t.Fatalf("redis %s after heal: %v", n.Name(), err)
	}
}

// window is the one fault window env's recorder holds.
func window(t *testing.T, env *Env) histories.FaultWindow {
	t.Helper()
	h := env.Rec.History()
	if len(h.Faults) != 1 {
		t.Fatalf("%d fault windows, want 1: %+v", len(h.Faults), h.Faults)
	}
	return h.Faults[0]
}

func TestServerPause(t *testing.T) {
	env := serverEnv(t, cluster.Options{})
	n := env.Cluster.Lock[0]
	f := injected(t, env, Spec{Kind: "server-pause", Target: "lock-0", Duration: time.Second})
	if s := procState(n.(*cluster.ProcessNode).Pid()); s != 'T' {
		t.Fatalf("paused server in state %q, want T (stopped)", s)
	}
	if err := rc(t, n.Addr(), 300*time.Millisecond).Ping(clustertest.Context(t)).Err(); err == nil {
		t.Fatal("a paused server answered PING")
	}
	heal(t, env, f)
	assertBack(t, n)
	w := window(t, env)
	if w.Kind != "server-pause" || w.Target != "lock-0" || w.End < w.Start || !strings.Contains(w.Detail, "SIGSTOP") {
		t.Fatalf("window %+v", w)
	}
}

// What survives a kill -9 is what the persistence wrote: nothing without it; with AOF
// everything acknowledged, also with everysec, since the kernel keeps what Redis wrote
// (only a machine crash loses the last second).
func TestServerCrashKeepsWhatPersistenceWrote(t *testing.T) {
	for _, c := range []struct {
		persistence cluster.Persistence
		kept        bool
	}{
		{cluster.PersistNone, false},
		{cluster.PersistAOFEverysec, true},
		{cluster.PersistAOFAlways, true},
	} {
		t.Run(string(c.persistence), func(t *testing.T) {
			t.Parallel()
			env := serverEnv(t, cluster.Options{Persistence: c.persistence})
			n := env.Cluster.Lock[0]
			ctx := clustertest.Context(t)
			if err := rc(t, n.Addr(), 5*time.Second).Set(ctx, "k", "v", time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			before := n.(*cluster.ProcessNode).Pid()
			f := injected(t, env, Spec{Kind: "server-crash", Target: "lock-0"}) // duration 0: restart at once
			if after := n.(*cluster.ProcessNode).Pid(); after == before {
				t.Fatalf("pid %d before and after the crash: the server was not restarted", after)
			}
			assertBack(t, n) // restarted within Inject
			got, err := rc(t, n.Addr(), 5*time.Second).Get(ctx, "k").Result()
			switch {
			case c.kept && got != "v":
				t.Fatalf("GET k after kill -9 = %q, %v; want v", got, err)
			case !c.kept && !errors.Is(err, redis.Nil):
				t.Fatalf("GET k after kill -9 = %q, %v; want it lost", got, err)
			}
			heal(t, env, f)
			if pid := n.(*cluster.ProcessNode).Pid(); procState(pid) == 0 {
				t.Fatalf("pid %d gone after heal", pid)
			}
			if w := window(t, env); w.End < w.Start || !strings.Contains(w.Detail, "restart at once") {
				t.Fatalf("window %+v", w)
			}
		})
	}
}

func TestServerCrashRestartsAtHeal(t *testing.T) {
	env := serverEnv(t, cluster.Options{})
	n := env.Cluster.Lock[0]
	f := injected(t, env, Spec{Kind: "server-crash", Target: "lock-0", Duration: time.Minute})
	if err := rc(t, n.Addr(), 300*time.Millisecond).Ping(clustertest.Context(t)).Err(); err == nil {
		t.Fatal("a crashed server answered PING before its restart")
	}
	heal(t, env, f)
	assertBack(t, n)
}

// The store never runs under libfaketime, so it is the reference: a jump of the lock
// server's clock expires a lock early while the store's copy of the same key lives on.
func TestServerClockFaketimeJumpExpiresKeyEarly(t *testing.T) {
	env := serverEnv(t, cluster.Options{ServerClock: cluster.ClockFaketime})
	n := env.Cluster.Lock[0]
	ctx := clustertest.Context(t)
	c := rc(t, n.Addr(), 5*time.Second)
	// Far longer than any delay of a slow machine: only the jump can expire it.
	if err := c.Set(ctx, "lock", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	f := injected(t, env, Spec{Kind: "server-clock", Target: "lock-0", Duration: time.Minute, Offset: 2 * time.Minute})
	if err := c.Get(ctx, "lock").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET lock after a +2m jump: %v, want it expired", err)
	}
	t.Logf("a key with PTTL 60 s expired %s after it was set, by a +2m jump", time.Since(set))
	offset, _, err := clockOffset(ctx, n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if (offset - 2*time.Minute).Abs() > 250*time.Millisecond {
		t.Fatalf("TIME offset during the fault = %s, want +2m", offset)
	}
	if w := window(t, env); !strings.Contains(w.Detail, "libfaketime") {
		t.Fatalf("window detail %q does not say libfaketime", w.Detail)
	}
	heal(t, env, f)
	assertBack(t, n)
	if offset, _, err = clockOffset(ctx, n.Addr()); err != nil || offset.Abs() > 250*time.Millisecond {
		t.Fatalf("TIME offset after heal = %s, %v; want +0", offset, err)
	}
}

// A jump back keeps a key beyond its TTL: a lease outlives its holder's deadline.
func TestServerClockFaketimeJumpBackKeepsKey(t *testing.T) {
	env := serverEnv(t, cluster.Options{ServerClock: cluster.ClockFaketime})
	n := env.Cluster.Lock[0]
	ctx := clustertest.Context(t)
	c := rc(t, n.Addr(), 5*time.Second)
	if err := c.Set(ctx, "lock", "v", 200*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	f := injected(t, env, Spec{Kind: "server-clock", Target: "lock-0", Duration: time.Minute, Offset: -time.Hour})
	time.Sleep(400 * time.Millisecond)
	pttl, err := c.PTTL(ctx, "lock").Result()
	if err != nil || pttl < 59*time.Minute {
		t.Fatalf("PTTL %s after its 200ms passed (%s ago), clock an hour back: %v; want about an hour", pttl, time.Since(set), err)
	}
	heal(t, env, f)
	if err := c.Get(ctx, "lock").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET lock once the clock is back: %v, want it expired", err)
	}
}

func TestServerClockFaketimeRate(t *testing.T) {
	env := serverEnv(t, cluster.Options{ServerClock: cluster.ClockFaketime})
	n := env.Cluster.Lock[0]
	start := time.Now()
	f := injected(t, env, Spec{Kind: "server-clock", Target: "lock-0", Duration: time.Minute, Rate: 3})
	time.Sleep(300 * time.Millisecond)
	offset, _, err := clockOffset(clustertest.Context(t), n.Addr())
	gained := 2 * time.Since(start)
	if err != nil || (offset-gained).Abs() > 250*time.Millisecond {
		t.Fatalf("TIME offset at rate 3 = %s, %v; want about %s", offset, err, gained)
	}
	heal(t, env, f)
	if offset, _, err = clockOffset(clustertest.Context(t), n.Addr()); err != nil || offset.Abs() > 250*time.Millisecond {
		t.Fatalf("TIME offset after heal = %s, %v; want +0", offset, err)
	}
}

func TestServerClockFaketimeNeedsFaketimeServers(t *testing.T) {
	env := serverEnv(t, cluster.Options{})
	f, err := New(Spec{Kind: "server-clock", Target: "lock-0", Duration: time.Second, Offset: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Available(env); err == nil || !strings.Contains(err.Error(), "server_clock") {
		t.Fatalf("Available on a server without libfaketime: %v, want an error about server_clock", err)
	}
}

// Emulated: the remaining TTLs shrink by the jump at once, keys with less left expire,
// persistent keys are untouched; healing gives the time back, as the clock's jump back would.
func TestServerClockEmulatedShavesTTLs(t *testing.T) {
	env := serverEnv(t, cluster.Options{})
	n := env.Cluster.Lock[0]
	ctx := clustertest.Context(t)
	c := rc(t, n.Addr(), 5*time.Second)
	for key, ttl := range map[string]time.Duration{"long": time.Hour, "short": time.Minute, "forever": 0} {
		if err := c.Set(ctx, key, "v", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	f := injected(t, env, Spec{Kind: "server-clock", Target: "lock-0", Duration: time.Minute, Offset: 2 * time.Minute, Mode: ClockModeEmulated})
	if pttl := c.PTTL(ctx, "long").Val(); pttl > 58*time.Minute || pttl < 57*time.Minute {
		t.Fatalf("PTTL of the 1h key after an emulated +2m jump = %s, want about 58m", pttl)
	}
	if err := c.Get(ctx, "short").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET short: %v, want it expired by the emulated jump", err)
	}
	if pttl := c.PTTL(ctx, "forever").Val(); pttl != -1 {
		t.Fatalf("PTTL of a key without TTL = %s, want -1 (untouched)", pttl)
	}
	w := window(t, env)
	if !strings.Contains(w.Detail, "emulated: TTL shaving") || !strings.Contains(w.Detail, "2 keys, 1 expired") {
		t.Fatalf("window detail %q", w.Detail)
	}
	heal(t, env, f)
	if pttl := c.PTTL(ctx, "long").Val(); pttl < 59*time.Minute {
		t.Fatalf("PTTL of the 1h key after heal = %s, want about 1h again", pttl)
	}
}

// On an external server, faults that destroy data or need the process are refused unless
// destructive faults are allowed; allowed, those that need the process are still not
// possible, and the emulated clock works.
func TestServerFaultsOnExternalServers(t *testing.T) {
	c, lock, _ := clustertest.External(t)
	env := NewEnv(c, histories.NewRecorder(histories.Meta{Fencing: "off"}), 1)
	specs := map[string]Spec{
		"pause":    {Kind: "server-pause", Target: "lock-0", Duration: time.Second},
		"crash":    {Kind: "server-crash", Target: "lock-0"},
		"faketime": {Kind: "server-clock", Target: "lock-0", Duration: time.Second, Offset: time.Second},
		"emulated": {Kind: "server-clock", Target: "lock-0", Duration: time.Second, Offset: time.Second, Mode: ClockModeEmulated},
	}
	for name, s := range specs {
		f, err := New(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Available(env); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s without opt-in: %v, want it refused", name, err)
		}
		if err := f.Inject(clustertest.Context(t), env); err == nil {
			t.Errorf("%s without opt-in: Inject succeeded", name)
		}
	}
	env.AllowDestructive = true
	for _, name := range []string{"pause", "crash", "faketime"} {
		f, _ := New(specs[name])
		if err := f.Available(env); !errors.Is(err, cluster.ErrExternal) {
			t.Errorf("%s with opt-in: %v, want ErrExternal", name, err)
		}
	}
	ctx := clustertest.Context(t)
	if err := rc(t, lock.Addr(), 5*time.Second).Set(ctx, "k", "v", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	f := injected(t, env, specs["emulated"])
	if pttl := rc(t, lock.Addr(), 5*time.Second).PTTL(ctx, "k").Val(); pttl > time.Hour-time.Second {
		t.Fatalf("PTTL %s after an emulated +1s jump on the external server, want under 59m59s", pttl)
	}
	heal(t, env, f)
}

func TestServerSpecsAreChecked(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "server-pause", Target: "client:0", Duration: time.Second}, "want a server name"},
		{Spec{Kind: "server-pause", Target: "", Duration: time.Second}, "want a server name"},
		{Spec{Kind: "server-pause", Target: "lock-0"}, "needs a duration"},
		{Spec{Kind: "server-pause", Target: "lock-0", Duration: time.Second, Latency: time.Second}, "takes no latency"},
		{Spec{Kind: "server-crash", Target: "lock-0", Offset: time.Second}, "takes no offset"},
		{Spec{Kind: "server-clock", Target: "lock-0", Duration: time.Second}, "would not change"},
		{Spec{Kind: "server-clock", Target: "lock-0", Duration: time.Second, Rate: -1}, "positive speed"},
		{Spec{Kind: "server-clock", Target: "lock-0", Duration: time.Second, Offset: time.Second, Mode: "sundial"}, `mode "sundial"`},
		{Spec{Kind: "server-clock", Target: "lock-0", Duration: time.Second, Rate: 2, Mode: ClockModeEmulated}, "cannot make a clock run at rate"},
		{Spec{Kind: "server-clock", Target: "lock-0", Offset: time.Second}, "needs a duration"},
	} {
		if _, err := New(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error with %q", c.spec, err, c.want)
		}
	}
}

// Plans are checked before any server starts: a valid server fault then needs the cluster
// to tell, and an unknown server is an error once it runs.
func TestServerAvailabilityNeedsTheCluster(t *testing.T) {
	for _, s := range []Spec{
		{Kind: "server-pause", Target: "lock-0", Duration: time.Second},
		{Kind: "server-crash", Target: "lock-0"},
		{Kind: "server-clock", Target: "lock-0", Duration: time.Second, Offset: time.Second},
		{Kind: "server-clock", Target: "lock-0", Duration: time.Second, Offset: time.Second, Mode: ClockModeEmulated},
	} {
		f, err := New(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Available(NewEnv(nil, nil, 1)); !errors.Is(err, ErrNeedsCluster) {
			t.Errorf("%s without a cluster: %v, want ErrNeedsCluster", s, err)
		}
		if err := f.Heal(context.Background(), NewEnv(nil, nil, 1)); err != nil {
			t.Errorf("%s: Heal before Inject: %v", s, err)
		}
	}
	env := serverEnv(t, cluster.Options{})
	f, _ := New(Spec{Kind: "server-pause", Target: "lock-7", Duration: time.Second})
	if err := f.Available(env); err == nil || !strings.Contains(err.Error(), "no such server") || !strings.Contains(err.Error(), "lock-0") {
		t.Fatalf("Available on lock-7 of a single cluster: %v, want an error listing the servers", err)
	}
}

// Through the schedule: every fault is healed by Stop, windows are recorded by the
// faults themselves, and the server is back afterwards.
func TestScheduleHealsServerFaults(t *testing.T) {
	c := clustertest.StartWith(t, cluster.Topology{Kind: cluster.Nodes, Nodes: 3}, cluster.Options{ServerClock: cluster.ClockFaketime})
	env := NewEnv(c, histories.NewRecorder(histories.Meta{Fencing: "off"}), 1)
	sch, err := startSpecs(t, context.Background(), env, []Spec{
		{Kind: "server-pause", Target: "lock-0", Duration: time.Hour},
		{Kind: "server-crash", Target: "lock-1", Duration: time.Hour},
		{Kind: "server-clock", Target: "lock-2", Duration: time.Hour, Offset: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(clustertest.Wait)
	for len(env.Rec.History().Faults) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the faults were not injected")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := sch.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Lock {
		assertBack(t, n)
	}
	if offset, _, err := clockOffset(clustertest.Context(t), c.Lock[2].Addr()); err != nil || offset.Abs() > 250*time.Millisecond {
		t.Fatalf("TIME offset after Stop = %s, %v; want +0", offset, err)
	}
	for _, w := range env.Rec.History().Faults {
		if w.End < w.Start {
			t.Errorf("window %+v not closed by Stop", w)
		}
	}
}

// stampedNode is a lock server whose SetClock notes when it was called.
type stampedNode struct {
	cluster.Node
	rec *histories.Recorder
	at  int64
}

func (n *stampedNode) FakeClock() bool                    { return true }
func (n *stampedNode) ClockOffset() time.Duration         { return 0 }
func (n *stampedNode) CalibrateClock(time.Duration) error { return nil }
func (n *stampedNode) SetClock(time.Duration, float64) error {
	n.at = n.rec.Now()
	return nil
}

// TestServerClockWindowOpensBeforeTheJump: the fault window of a clock jump starts before
// the clock moves, so that a report can never show the jump's effects outside it.
func TestServerClockWindowOpensBeforeTheJump(t *testing.T) {
	env := serverEnv(t, cluster.Options{})
	rec := histories.NewRecorder(histories.Meta{Fencing: "off"})
	env.Rec = rec
	n := &stampedNode{Node: env.Cluster.Nodes()[0], rec: rec, at: -1}
	c := &serverClock{spec: Spec{Kind: "server-clock", Target: n.Name(), Offset: time.Second, Duration: time.Second}, window: -1}
	_ = c.injectFaketime(context.Background(), env, n) // TIME disagrees: no libfaketime here
	h := rec.History()
	if len(h.Faults) != 1 || n.at < 0 {
		t.Fatalf("windows %+v, clock set at %d", h.Faults, n.at)
	}
	if w := h.Faults[0]; w.Start > n.at || !strings.Contains(w.Detail, "TIME says") {
		t.Errorf("window %+v opened at %d, after the clock was set at %d (or lacks what was measured)", w, w.Start, n.at)
	}
}
