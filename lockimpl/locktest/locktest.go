package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// Server starts a Redis server for the test and returns its address and a raw client to
// inspect what the locks did.
func Server(t testing.TB) (string, *redis.Client) {
	t.Helper()
	n := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return n.Addr(), c
}

// Impl is the implementation called name in impls (a package's Impls()); the test
// fails when there is none.
func Impl(t testing.TB, impls []lockimpl.Impl, name string) lockimpl.Impl {
	t.Helper()
	for _, i := range impls {
		if i.Name == name {
			return i
		}
	}
	t.Fatalf("no lock implementation %q here", name)
	return lockimpl.Impl{}
}

// New builds impl from cfg, closed at cleanup.
func New(t testing.TB, impl lockimpl.Impl, cfg lockimpl.Config) lockimpl.Locker {
	t.Helper()
	l, err := impl.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Locker builds impl against addr, closed at cleanup.
func Locker(t testing.TB, impl lockimpl.Impl, addr string, step lockimpl.StepFunc) lockimpl.Locker {
	t.Helper()
	return New(t, impl, lockimpl.Config{Addrs: []string{addr}, Step: step})
}

// ReplicatedLocker builds impl for client of c, as a run does: through the Sentinels,
// dialling the client's links.
func ReplicatedLocker(t testing.TB, c *cluster.Cluster, impl lockimpl.Impl, client int, timeout time.Duration) lockimpl.Locker {
	t.Helper()
	ep, err := c.Endpoints(client)
	if err != nil {
		t.Fatal(err)
	}
	return New(t, impl, lockimpl.Config{Addrs: ep.Lock, Sentinels: ep.Sentinels, Master: ep.Master, Cluster: ep.Cluster, Via: ep.Via, Timeout: timeout})
}

// HeldOnKilledServer builds impl against a server of its own, with timeout, takes the
// lock of key "k" for ttl, and kills the server: the locker (closed at cleanup) and the
// lease it holds, for a test of what the lock answers once its server is gone.
func HeldOnKilledServer(t testing.TB, impl lockimpl.Impl, timeout, ttl time.Duration) (lockimpl.Locker, lockimpl.Lease) {
	t.Helper()
	n := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	l := New(t, impl, lockimpl.Config{Addrs: []string{n.Addr()}, Timeout: timeout})
	ctx := clustertest.Context(t)
	lease, err := l.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	return l, lease
}

// WaitGone waits (bounded) until key has expired.
func WaitGone(t testing.TB, c *redis.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(clustertest.Wait)
	for c.Exists(context.Background(), key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("key %q did not expire within %s", key, clustertest.Wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Eventually polls cond (bounded by clustertest.Wait).
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(clustertest.Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, clustertest.Wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// SteppedClock is a lockimpl.Clock that advances by step on every reading, so that each
// Now is distinct and known.
type SteppedClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

// NewSteppedClock is a SteppedClock whose first reading is start.
func NewSteppedClock(start time.Time, step time.Duration) *SteppedClock {
	return &SteppedClock{now: start, step: step}
}

// Now implements lockimpl.Clock.
func (c *SteppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

// CrashAtGrant is a Step hook that crashes the client right after the grant.
func CrashAtGrant(_ context.Context, step string) error {
	if step == lockimpl.StepGranted {
		return fmt.Errorf("at %s: %w", step, lockimpl.ErrCrashed)
	}
	return nil
}

// WantRefused fails t unless err is a definite refusal of kind.
func WantRefused(t testing.TB, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) || lockimpl.Classify(err) != histories.Fail {
		t.Fatalf("%s: %v (%s); want %v, fail", what, err, lockimpl.Classify(err), kind)
	}
}

// WantUnknown fails t unless err is an unknown outcome.
func WantUnknown(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil || lockimpl.Classify(err) != histories.Unknown {
		t.Fatalf("%s: %v (%s); want an unknown outcome", what, err, lockimpl.Classify(err))
	}
}
