package gates

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
)

// A hold keeps the clients that reach its point, and only them, until it is lifted, and
// says how many it held.
func TestHoldKeepsClientsAtItsPointUntilLifted(t *testing.T) {
	t.Parallel()
	g := New(histories.NewRecorder(histories.Meta{}))
	ctx := context.Background()
	lift := g.Hold("before-acquire")
	if err := g.Reach(ctx, 0, "before-write"); err != nil { // another point passes at once
		t.Fatal(err)
	}
	var passed atomic.Int32
	for c := range 2 {
		go func() {
			_ = g.Reach(ctx, c, "before-acquire")
			passed.Add(1)
		}()
	}
	waitUntil(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.holds[0].clients == 2 })
	time.Sleep(20 * time.Millisecond)
	if n := passed.Load(); n != 0 {
		t.Fatalf("%d clients passed a standing hold", n)
	}
	clients, longest := lift()
	if clients != 2 || longest < 20*time.Millisecond {
		t.Errorf("lift = %d clients, %s; want 2, at least 20ms", clients, longest)
	}
	waitUntil(t, func() bool { return passed.Load() == 2 })
	if err := g.Reach(ctx, 0, "before-acquire"); err != nil { // lifted: passes at once
		t.Fatal(err)
	}
	if again, _ := lift(); again != 2 { // lifting twice changes nothing
		t.Errorf("second lift = %d clients, want 2", again)
	}
	// A client held when its context ends goes on.
	lift = g.Hold("before-acquire")
	defer lift()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.Reach(cctx, 0, "before-acquire"); err != nil {
		t.Fatal(err)
	}
}

// waitUntil polls cond until it holds, failing after ten seconds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// A gate with Nth fires at that arrival of its client, counted from when it was armed,
// and only once; other clients' arrivals do not count for a gate of one client.
func TestGateFiresAtItsNthArrival(t *testing.T) {
	t.Parallel()
	g := New(histories.NewRecorder(histories.Meta{}))
	ctx := context.Background()
	var fired []int
	arrival := 0
	g.Arm(Gate{Client: 0, Point: "before-acquire", Nth: 3, Trigger: func(context.Context) { fired = append(fired, arrival) }})
	for arrival = 1; arrival <= 5; arrival++ {
		if err := g.Reach(ctx, 1, "before-acquire"); err != nil { // another client's: not counted
			t.Fatal(err)
		}
		if err := g.Reach(ctx, 0, "before-write"); err != nil { // another point: not counted
			t.Fatal(err)
		}
		if err := g.Reach(ctx, 0, "before-acquire"); err != nil {
			t.Fatal(err)
		}
	}
	if len(fired) != 1 || fired[0] != 3 {
		t.Errorf("fired at arrivals %v, want [3]", fired)
	}
}
