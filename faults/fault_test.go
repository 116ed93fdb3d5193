package faults

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/faults/gates"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

func TestNewRejectsBadSpecs(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "meteor"}, `unknown fault kind "meteor" (known: client-pause`},
		{Spec{Kind: "client-pause", At: -time.Second}, "negative time"},
		{Spec{Kind: "client-crash", Until: "client:1@acquire:granted"}, "takes no until"},
	} {
		if _, err := New(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v) = %v, want an error with %q", c.spec, err, c.want)
		}
	}
	f, err := New(Spec{Kind: "client-pause", Target: "client:3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Available(&Env{Clients: 2, Gates: &Gates{}}); err == nil || !strings.Contains(err.Error(), "0 ≤ N < 2") {
		t.Errorf("client:3 of 2 clients: %v", err)
	}
}

func TestPauseFiresOnceAtItsPointForItsClient(t *testing.T) {
	rec := histories.NewRecorder(histories.Meta{Fencing: "off"})
	env := &Env{Gates: gates.New(rec), Rec: rec, Clients: 2}
	sch, err := startSpecs(t, context.Background(), env, []Spec{{Kind: "client-pause", Duration: 50 * time.Millisecond, Target: "client:1", Point: "before-write"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return env.Gates.Armed() == 1 })
	ctx := context.Background()
	start := time.Now()
	for _, c := range []struct {
		client int
		point  string
	}{{0, "before-write"}, {1, "after-acquire"}} {
		if err := env.Gates.Reach(ctx, c.client, c.point); err != nil {
			t.Fatal(err)
		}
	}
	if time.Since(start) > 40*time.Millisecond {
		t.Fatal("a gate stalled a client or point it does not target")
	}
	start = time.Now()
	if err := env.Gates.Reach(ctx, 1, "before-write"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("pause lasted %s, want at least 50ms", d)
	}
	start = time.Now()
	_ = env.Gates.Reach(ctx, 1, "before-write")
	if time.Since(start) > 40*time.Millisecond {
		t.Fatal("the pause fired twice")
	}
	if err := sch.Stop(); err != nil {
		t.Fatal(err)
	}
	h := rec.History()
	if len(h.Faults) != 1 || h.Faults[0].Kind != "client-pause" || h.Faults[0].Target != "client:1" || h.Faults[0].End-h.Faults[0].Start < int64(50*time.Millisecond) {
		t.Fatalf("fault windows = %+v", h.Faults)
	}
}

// A pause with until lasts exactly until the other client reaches its point after the
// pause began, well within its duration, and its window says so; Prepare refuses an until it cannot read.
func TestPauseUntilAnotherClientActs(t *testing.T) {
	if _, err := Prepare(Spec{Kind: "client-pause", Duration: time.Second, Target: "client:0", Until: "client:2@acquire:granted"}, 2); err == nil || !strings.Contains(err.Error(), "until") {
		t.Errorf("until client 2 of 2 clients: %v, want an error naming until", err)
	}
	rec := histories.NewRecorder(histories.Meta{Fencing: "off"})
	env := &Env{Gates: gates.New(rec), Rec: rec, Clients: 2}
	sch, err := startSpecs(t, context.Background(), env, []Spec{{Kind: "client-pause", Duration: time.Minute, Target: "client:0", Point: "before-write", Until: "client:1@acquire:granted"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sch.Stop()
	waitFor(t, func() bool { return env.Gates.Armed() == 1 })
	ctx := context.Background()
	// Client 1 was granted before the pause began: that grant does not end it.
	if err := env.Gates.Reach(ctx, 1, "acquire:granted"); err != nil {
		t.Fatal(err)
	}
	paused := make(chan struct{})
	go func() {
		defer close(paused)
		_ = env.Gates.Reach(ctx, 0, "before-write")
	}()
	waitFor(t, func() bool { return len(rec.History().Faults) == 1 }) // the pause has begun
	select {
	case <-paused:
		t.Fatal("the pause ended before client 1 was granted")
	default:
	}
	if err := env.Gates.Reach(ctx, 1, "acquire:granted"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-paused:
	case <-time.After(10 * time.Second):
		t.Fatal("the pause went on after client 1 was granted")
	}
	if d := rec.History().Faults[0].Detail; !strings.Contains(d, "until client 1's acquire:granted: came after") {
		t.Errorf("window detail %q, want it to say the pause ended when client 1 was granted", d)
	}
}

func TestCrashReturnsErrCrashed(t *testing.T) {
	rec := histories.NewRecorder(histories.Meta{Fencing: "off"})
	env := &Env{Gates: gates.New(rec), Rec: rec, Clients: 1}
	sch, err := startSpecs(t, context.Background(), env, []Spec{{Kind: "client-crash", Target: "any", Point: "acquire:after-setnx"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sch.Stop()
	waitFor(t, func() bool { return env.Gates.Armed() == 1 })
	if err := env.Gates.Reach(context.Background(), 0, "acquire:after-setnx"); !errors.Is(err, lockimpl.ErrCrashed) {
		t.Fatalf("Reach = %v, want ErrCrashed", err)
	}
}

// countingFault records its calls, to test the schedule without servers.
type countingFault struct{ injects, heals atomic.Int32 }

func (f *countingFault) Available(*Env) error { return nil }
func (f *countingFault) Inject(context.Context, *Env) error {
	f.injects.Add(1)
	return nil
}
func (f *countingFault) Heal(context.Context, *Env) error {
	f.heals.Add(1)
	return nil
}

func TestStopHealsEverything(t *testing.T) {
	// One fault already injected and still active, one never reached: Stop heals both.
	a, b := &countingFault{}, &countingFault{}
	sch := start(context.Background(), &Env{}, []*item{
		{spec: Spec{At: 0, Duration: time.Hour}, fault: a, injected: make(chan struct{}), window: -1},
		{spec: Spec{At: time.Hour}, fault: b, injected: make(chan struct{}), window: -1},
	})
	waitFor(t, func() bool { return a.injects.Load() == 1 })
	if err := sch.Stop(); err != nil {
		t.Fatal(err)
	}
	if a.heals.Load() != 1 || b.heals.Load() != 1 || b.injects.Load() != 0 {
		t.Fatalf("a: %d injects %d heals; b: %d injects %d heals", a.injects.Load(), a.heals.Load(), b.injects.Load(), b.heals.Load())
	}
}

func TestARecurringFaultStrikesAgainFresh(t *testing.T) {
	// Every strike is a fault built afresh, injected and healed once, with a window of
	// its own in the history; the schedule stops striking when it is stopped.
	var built []*countingFault
	var mu sync.Mutex
	kind := KindInfo{Name: "test", build: func(Spec) (Fault, error) {
		mu.Lock()
		defer mu.Unlock()
		built = append(built, &countingFault{})
		return built[len(built)-1], nil
	}}
	first, _ := kind.build(Spec{})
	rec := histories.NewRecorder(histories.Meta{Fencing: "off"})
	sch := start(context.Background(), &Env{Rec: rec}, []*item{{
		spec: Spec{Kind: "test", Duration: 5 * time.Millisecond, Every: 20 * time.Millisecond}, kind: kind, fault: first,
		injected: make(chan struct{}), window: -1,
	}})
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(built) >= 4 })
	if err := sch.Stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, f := range built[:3] {
		if f.injects.Load() != 1 || f.heals.Load() < 1 {
			t.Errorf("strike %d: %d injects, %d heals, want 1 and at least 1", i+1, f.injects.Load(), f.heals.Load())
		}
	}
	ws := rec.Faults()
	if len(ws) < 3 {
		t.Fatalf("%d fault windows, want one per strike (at least 3)", len(ws))
	}
	for i := 1; i < len(ws); i++ {
		if ws[i].Start < ws[i-1].End {
			t.Errorf("strike %d began at %d, before strike %d healed at %d", i+1, ws[i].Start, i, ws[i-1].End)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// startSpecs prepares specs for env's clients and starts their schedule.
func startSpecs(t *testing.T, ctx context.Context, env *Env, specs []Spec) (*Schedule, error) {
	t.Helper()
	planned := make([]*Planned, len(specs))
	for i, s := range specs {
		pl, err := Prepare(s, env.Clients)
		if err != nil {
			t.Fatalf("prepare %s: %v", s, err)
		}
		planned[i] = pl
	}
	return Start(ctx, env, planned)
}

func TestPrepareParsesTheTriggerOnce(t *testing.T) {
	pl, err := Prepare(Spec{Kind: "server-pause", Target: "lock-0", Duration: time.Second, Trigger: "client:1@acquire:granted"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Trigger == nil || *pl.Trigger != (Trigger{Client: 1, Point: "acquire:granted", Nth: 1}) || pl.Point() != "acquire:granted" {
		t.Errorf("trigger = %+v, point %q", pl.Trigger, pl.Point())
	}
	// #K: the K-th arrival; the point stays the point, for the checks of where clients go.
	pl, err = Prepare(Spec{Kind: "net-reset", Target: "client:0->lock-0", Duration: time.Second, Trigger: "any@before-acquire#2", Until: "client:0@after-release#3"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if *pl.Trigger != (Trigger{Client: -1, Point: "before-acquire", Nth: 2}) || pl.Point() != "before-acquire" ||
		*pl.Until != (Trigger{Client: 0, Point: "after-release", Nth: 3}) || pl.Until.String() != "client 0's after-release (arrival 3)" {
		t.Errorf("trigger = %+v, until %+v (%s)", pl.Trigger, pl.Until, pl.Until)
	}
	for _, c := range []struct {
		spec    Spec
		clients int
		want    string
	}{
		{Spec{Kind: "server-pause", Target: "lock-0", Duration: time.Second, Trigger: "client:2@acquire:granted"}, 2, "0 ≤ N < 2"},
		{Spec{Kind: "server-pause", Target: "lock-0", Duration: time.Second, Trigger: "client:0"}, 2, "want client:N@point"},
		{Spec{Kind: "server-pause", Target: "lock-0", Duration: time.Second, Trigger: "client:0@before-acquire#0"}, 2, "K ≥ 1"},
		{Spec{Kind: "server-pause", Target: "lock-0", Duration: time.Second, Trigger: "client:0@#2"}, 2, "K ≥ 1"},
		{Spec{Kind: "server-pause", Target: "lock-0", Point: "before-write"}, 2, "takes no point"},
	} {
		if _, err := Prepare(c.spec, c.clients); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Prepare(%v) = %v, want an error with %q", c.spec, err, c.want)
		}
	}
}

func TestAPlannedFaultRunsOnce(t *testing.T) {
	rec := histories.NewRecorder(histories.Meta{Fencing: "off"})
	env := &Env{Gates: gates.New(rec), Rec: rec, Clients: 1}
	pl, err := Prepare(Spec{Kind: "client-pause", Duration: time.Millisecond, Target: "client:0"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := Start(context.Background(), env, []*Planned{pl})
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), env, []*Planned{pl}); err == nil || !strings.Contains(err.Error(), "already ran") {
		t.Errorf("second start of one planned fault: %v, want an error", err)
	}
}
