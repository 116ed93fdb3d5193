package lockimpl_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// renewers counts the watchdog's renewal goroutines alive in this process.
func renewers() int {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "lockimpl.(*watchdog).renewLoop(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitRenewers waits (bounded) until want renewal goroutines are left.
func waitRenewers(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(clustertest.Wait)
	for renewers() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d renewal goroutines, want %d", renewers(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watchdogOn builds the watchdog lock against addr, closed at cleanup.
func watchdogOn(t *testing.T, addr string, cfg lockimpl.Config) (lockimpl.Locker, lockimpl.Renewer) {
	t.Helper()
	impl := get(t, "watchdog")
	cfg.Addrs = []string{addr}
	l, err := impl.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	r, ok := l.(lockimpl.Renewer)
	if !ok {
		t.Fatal("watchdog is not a Renewer")
	}
	return l, r
}

// waitLost waits (bounded) until Current reports the lease lost, and returns what it
// reported.
func waitLost(t *testing.T, r lockimpl.Renewer, lease lockimpl.Lease) lockimpl.Lease {
	t.Helper()
	deadline := time.Now().Add(clustertest.Wait)
	for {
		cur, ok := r.Current(lease)
		if !ok {
			return cur
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease still current after %s", clustertest.Wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatchdogAcquireRelease(t *testing.T) {
	base := renewers()
	addr, rc := locktest.Server(t)
	a, r := watchdogOn(t, addr, lockimpl.Config{})
	b, _ := watchdogOn(t, addr, lockimpl.Config{})
	ctx := clustertest.Context(t)
	lease, err := a.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := rc.Get(ctx, "k").Val(); got != lease.Token {
		t.Fatalf("server holds %q, want the lease's token", got)
	}
	if cur, ok := r.Current(lease); !ok || !cur.Deadline.Equal(lease.Deadline) {
		t.Fatalf("Current right after Acquire: %+v, %v; want the lease, true", cur, ok)
	}
	if _, err := b.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("contending Acquire: %v; want ErrNotAcquired", err)
	}
	waitRenewers(t, base+1)
	if err := a.Release(ctx, lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n := renewers(); n != base {
		t.Fatalf("%d renewal goroutines right after Release, want %d", n, base)
	}
	if _, ok := r.Current(lease); ok {
		t.Fatal("Current after Release: still held")
	}
	if rc.Exists(ctx, "k").Val() != 0 {
		t.Fatal("key still there after Release")
	}
	if err := a.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("second Release: %v; want ErrNotHeld", err)
	}
	if _, err := a.Extend(ctx, lease, time.Minute); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("Extend after Release: %v; want ErrNotHeld", err)
	}
	if _, err := b.Acquire(ctx, "k", time.Minute); err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
}

func TestWatchdogKeepsTheLockAlive(t *testing.T) {
	addr, rc := locktest.Server(t)
	a, r := watchdogOn(t, addr, lockimpl.Config{})
	b, _ := watchdogOn(t, addr, lockimpl.Config{})
	ctx := clustertest.Context(t)
	const ttl = time.Second
	lease, err := a.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	// The holder "works" for 3 ttls: the lock must outlive its ttl all along.
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, err := b.Acquire(ctx, "k", ttl); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("contending Acquire while the holder works: %v; want ErrNotAcquired", err)
		}
		if pttl := rc.PTTL(ctx, "k").Val(); pttl <= 0 || pttl > ttl {
			t.Fatalf("PTTL %s while the holder works, want in (0, %s]", pttl, ttl)
		}
		now := time.Now()
		cur, ok := r.Current(lease)
		if !ok {
			t.Fatal("Current: lease lost while renewals work")
		}
		if cur.Remaining(now) > ttl {
			t.Fatalf("Current remaining %s overstates the ttl %s", cur.Remaining(now), ttl)
		}
	}
	cur, ok := r.Current(lease)
	if !ok || !cur.Deadline.After(lease.Deadline.Add(ttl)) {
		t.Fatalf("Current after 3 ttls: deadline %v (ok %v); want later than %v", cur.Deadline, ok, lease.Deadline.Add(ttl))
	}
	if cur.Key != lease.Key || cur.Token != lease.Token {
		t.Fatalf("Current %+v is not the lease %+v", cur, lease)
	}
	if err := a.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
}

// After Release the watchdog never touches the key again: not even one that carries
// its token again (a renewal would reset its expiry to the watchdog's ttl).
func TestWatchdogStopsAtRelease(t *testing.T) {
	base := renewers()
	addr, rc := locktest.Server(t)
	a, _ := watchdogOn(t, addr, lockimpl.Config{})
	ctx := clustertest.Context(t)
	const ttl = 600 * time.Millisecond // renewals every 200 ms
	lease, err := a.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl) // a few renewals
	if err := a.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if n := renewers(); n != base {
		t.Fatalf("%d renewal goroutines right after Release, want %d", n, base)
	}
	const short = 400 * time.Millisecond
	if err := rc.Set(ctx, "k", lease.Token, short).Err(); err != nil {
		t.Fatal(err)
	}
	last := short
	for {
		pttl, err := rc.PTTL(ctx, "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		if pttl < 0 {
			break // expired on its own
		}
		if pttl > last {
			t.Fatalf("PTTL went up from %s to %s after Release: the watchdog renewed it", last, pttl)
		}
		last = pttl
		time.Sleep(5 * time.Millisecond)
	}

	// Someone else's lock with a long ttl only counts down either.
	other, _ := watchdogOn(t, addr, lockimpl.Config{})
	if _, err := other.Acquire(ctx, "k", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil { // stops its own watchdog
		t.Fatal(err)
	}
	first := rc.PTTL(ctx, "k").Val()
	time.Sleep(ttl)
	if pttl := rc.PTTL(ctx, "k").Val(); pttl <= 0 || pttl >= first {
		t.Fatalf("PTTL of another client's lock went from %s to %s", first, pttl)
	}
}

func TestWatchdogLosesATakenLock(t *testing.T) {
	for _, c := range []struct {
		name  string
		take  func(ctx context.Context, rc *redis.Client) error
		check func(t *testing.T, rc *redis.Client)
	}{
		{
			name: "deleted",
			take: func(ctx context.Context, rc *redis.Client) error { return rc.Del(ctx, "k").Err() },
			check: func(t *testing.T, rc *redis.Client) {
				if rc.Exists(context.Background(), "k").Val() != 0 {
					t.Error("a renewal recreated the deleted key")
				}
			},
		},
		{
			name: "stolen",
			take: func(ctx context.Context, rc *redis.Client) error { return rc.Set(ctx, "k", "thief", 0).Err() },
			check: func(t *testing.T, rc *redis.Client) {
				ctx := context.Background()
				if v, pttl := rc.Get(ctx, "k").Val(), rc.PTTL(ctx, "k").Val(); v != "thief" || pttl != -1 {
					t.Errorf("thief's key is %q with PTTL %s; a renewal touched it", v, pttl)
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := renewers()
			addr, rc := locktest.Server(t)
			a, r := watchdogOn(t, addr, lockimpl.Config{})
			ctx := clustertest.Context(t)
			const ttl = 300 * time.Millisecond
			lease, err := a.Acquire(ctx, "k", ttl)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.take(ctx, rc); err != nil {
				t.Fatal(err)
			}
			cur := waitLost(t, r, lease)
			if cur.Deadline.Before(lease.Deadline) {
				t.Fatalf("lost lease's deadline %v before the acquired one %v", cur.Deadline, lease.Deadline)
			}
			waitRenewers(t, base) // the renewer stopped by itself
			time.Sleep(ttl)       // a renewer still running would have acted by now
			if _, ok := r.Current(lease); ok {
				t.Fatal("Current: a lost lease came back")
			}
			c.check(t, rc)
			if _, err := a.Extend(ctx, lease, ttl); !errors.Is(err, lockimpl.ErrNotHeld) {
				t.Fatalf("Extend of a lost lease: %v; want ErrNotHeld", err)
			}
			if err := a.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
				t.Fatalf("Release of a lost lease: %v; want ErrNotHeld", err)
			}
			c.check(t, rc)
		})
	}
}

// Renewals of unknown outcome (a paused server) keep being tried until the deadline
// passes; then the lease is lost and the renewer gone.
func TestWatchdogUnknownRenewalsUntilTheDeadline(t *testing.T) {
	base := renewers()
	n := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	a, r := watchdogOn(t, n.Addr(), lockimpl.Config{Timeout: 100 * time.Millisecond})
	ctx := clustertest.Context(t)
	const ttl = 600 * time.Millisecond
	lease, err := a.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Resume(context.Background()) })
	paused := time.Now()
	last, ok := r.Current(lease)
	if !ok {
		t.Fatal("lease lost before any renewal failed")
	}
	cur := waitLost(t, r, lease)
	// The deadline is the last one known good: no renewal can have worked since the
	// pause, so the deadline cannot be later than pause + ttl.
	if cur.Deadline.Before(last.Deadline) || cur.Deadline.After(paused.Add(ttl)) {
		t.Fatalf("lost at deadline %v; want in [%v, %v]", cur.Deadline, last.Deadline, paused.Add(ttl))
	}
	if now := time.Now(); now.Before(cur.Deadline) {
		t.Fatalf("lost at %v, before its deadline %v", now, cur.Deadline)
	}
	waitRenewers(t, base)
	if err := n.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Current(lease); ok {
		t.Fatal("Current: a lost lease came back after the server resumed")
	}
}

func TestWatchdogCloseStopsRenewers(t *testing.T) {
	base := renewers()
	addr, rc := locktest.Server(t)
	impl := get(t, "watchdog")
	l, err := impl.New(lockimpl.Config{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := clustertest.Context(t)
	const ttl = 300 * time.Millisecond
	keys := []string{"a", "b", "c"}
	for _, k := range keys {
		if _, err := l.Acquire(ctx, k, ttl); err != nil {
			t.Fatal(err)
		}
	}
	waitRenewers(t, base+len(keys)) // one per lease, once each has started
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := renewers(); n != base {
		t.Fatalf("%d renewal goroutines right after Close, want %d", n, base)
	}
	for _, k := range keys {
		locktest.WaitGone(t, rc, k) // nothing renews them any more
	}
}

func TestWatchdogExtend(t *testing.T) {
	addr, rc := locktest.Server(t)
	a, r := watchdogOn(t, addr, lockimpl.Config{})
	ctx := clustertest.Context(t)
	lease, err := a.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const longer = 3 * time.Second
	ext, err := a.Extend(ctx, lease, longer)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if ext.Token != lease.Token || !ext.Deadline.After(lease.Deadline) {
		t.Fatalf("extended lease %+v from %+v", ext, lease)
	}
	if cur, ok := r.Current(lease); !ok || cur.Deadline.Before(ext.Deadline) {
		t.Fatalf("Current after Extend: deadline %v (ok %v), want at least %v", cur.Deadline, ok, ext.Deadline)
	}
	// Renewals now keep the new ttl: with the old one the PTTL would stay under 1 s.
	time.Sleep(1500 * time.Millisecond)
	if pttl := rc.PTTL(ctx, "k").Val(); pttl <= time.Second || pttl > longer {
		t.Fatalf("PTTL %s 1.5 s after Extend to %s, want in (1s, %s]", pttl, longer, longer)
	}
	if err := a.Release(ctx, ext); err != nil {
		t.Fatal(err)
	}
}

func TestWatchdogCrashAtGrantedStartsNoRenewer(t *testing.T) {
	base := renewers()
	addr, rc := locktest.Server(t)
	crash := func(context.Context, string) error { return lockimpl.ErrCrashed }
	a, _ := watchdogOn(t, addr, lockimpl.Config{Step: crash})
	ctx := clustertest.Context(t)
	_, err := a.Acquire(ctx, "k", 300*time.Millisecond)
	if !errors.Is(err, lockimpl.ErrCrashed) || lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("Acquire crashed at the step: %v; want ErrCrashed, unknown", err)
	}
	if n := renewers(); n != base {
		t.Fatalf("%d renewal goroutines after a crash, want %d", n, base)
	}
	locktest.WaitGone(t, rc, "k") // the crashed client's lock expires: nobody renews it
}

func TestWatchdogRegistry(t *testing.T) {
	impl := get(t, "watchdog")
	if impl.Topology != "single" || impl.Fencing || impl.Mutant || len(impl.Steps) != 1 || impl.Steps[0] != lockimpl.StepGranted {
		t.Fatalf("registry entry %+v", impl)
	}
}
