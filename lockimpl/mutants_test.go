package lockimpl_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// Each test shows its mutant's bug on a real server, deterministically.

func TestCheckThenSetBothAcquire(t *testing.T) {
	addr, rc := locktest.Server(t)
	ctx := clustertest.Context(t)
	// Each client waits after its GET until both have passed GET: the interleaving that
	// breaks a non-atomic check.
	var passedGet sync.WaitGroup
	passedGet.Add(2)
	bothPassedGet := func(ctx context.Context, step string) error {
		if step != lockimpl.StepAfterGet {
			return nil
		}
		passedGet.Done()
		both := make(chan struct{})
		go func() { passedGet.Wait(); close(both) }()
		select {
		case <-both:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	a := locker(t, "check-then-set", addr, bothPassedGet)
	b := locker(t, "check-then-set", addr, bothPassedGet)
	type result struct {
		lease lockimpl.Lease
		err   error
	}
	results := make(chan result, 2)
	for _, l := range []lockimpl.Locker{a, b} {
		go func() {
			lease, err := l.Acquire(ctx, "k", time.Minute)
			results <- result{lease, err}
		}()
	}
	r1, r2 := <-results, <-results
	if r1.err != nil || r2.err != nil {
		t.Fatalf("acquires: %v, %v; want both to succeed (the bug)", r1.err, r2.err)
	}
	if got := rc.Get(ctx, "k").Val(); got != r1.lease.Token && got != r2.lease.Token {
		t.Fatalf("server holds %q, neither client's token", got)
	}
}

func TestNoExpiryCrashLeavesEternalLock(t *testing.T) {
	addr, rc := locktest.Server(t)
	ctx := clustertest.Context(t)
	l := locker(t, "no-expiry", addr, func(_ context.Context, step string) error {
		if step == lockimpl.StepAfterSetNX {
			return fmt.Errorf("at %s: %w", step, lockimpl.ErrCrashed)
		}
		return nil
	})
	_, err := l.Acquire(ctx, "k", time.Second)
	if !errors.Is(err, lockimpl.ErrCrashed) || lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Acquire: %v (%s); want the injected crash, unknown", err, lockimpl.Classify(err))
	}
	if pttl := rc.PTTL(ctx, "k").Val(); pttl != -1 {
		t.Fatalf("PTTL %d, want -1: a lock that never expires (the bug)", pttl)
	}
	other := locker(t, "no-expiry", addr, nil)
	if _, err := other.Acquire(ctx, "k", time.Second); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("Acquire by another client: %v; want ErrNotAcquired", err)
	}

	// Without the crash the second command does set the expiry.
	lease, err := other.Acquire(ctx, "k2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if pttl := rc.PTTL(ctx, "k2").Val(); pttl <= 0 || pttl > time.Minute {
		t.Fatalf("PTTL %s without a crash, want in (0, 1m]", pttl)
	}
	if err := other.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
}

func TestUnsafeReleaseDeletesOthersLock(t *testing.T) {
	addr, rc := locktest.Server(t)
	ctx := clustertest.Context(t)
	a, b := locker(t, "unsafe-release", addr, nil), locker(t, "unsafe-release", addr, nil)
	stale, err := a.Acquire(ctx, "k", 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	locktest.WaitGone(t, rc, "k")
	if _, err := b.Acquire(ctx, "k", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, stale); err != nil {
		t.Fatalf("Release of the stale lease: %v; the mutant reports success", err)
	}
	if rc.Exists(ctx, "k").Val() != 0 {
		t.Fatal("the new holder's lock survived; want it deleted (the bug)")
	}
	if err := a.Release(ctx, stale); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("Release with no lock at all: %v; want ErrNotHeld", err)
	}
}
