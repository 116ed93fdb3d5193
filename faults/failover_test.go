package faults

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
)

// failoverEnv is a replicated:3 cluster and an env with two clients over it.
func failoverEnv(t *testing.T) (*Env, context.Context) {
	t.Helper()
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return NewEnv(c, histories.NewRecorder(histories.Meta{Fencing: "off"}), 2), ctx
}

// newFailover builds s and checks that it is available in env.
func newFailover(t *testing.T, env *Env, s Spec) Fault {
	t.Helper()
	f, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Available(env); err != nil {
		t.Fatalf("Available(%s): %v", s, err)
	}
	return f
}

// direct is a plain client of node n.
func direct(t *testing.T, n cluster.Node) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// assertHealed checks that the topology is whole around a primary other than old, the
// old primary among its replicas, and that the fault's one window is closed and says so.
func assertHealed(t *testing.T, ctx context.Context, env *Env, old cluster.Node) histories.FaultWindow {
	t.Helper()
	c := env.Cluster
	primary, err := c.Primary(ctx)
	if err != nil || primary == old {
		t.Fatalf("primary after heal: %v, %v; want a promoted replica", primary, err)
	}
	if err := c.AwaitHealthy(ctx, primary); err != nil {
		t.Fatal(err)
	}
	if role, err := c.Role(ctx, old); err != nil || role != "slave" {
		t.Fatalf("%s after heal: role %q, %v; want a replica", old.Name(), role, err)
	}
	h := env.Rec.History()
	if len(h.Faults) != 1 {
		t.Fatalf("%d fault windows, want 1: %+v", len(h.Faults), h.Faults)
	}
	w := h.Faults[0]
	if w.Kind != "failover" || w.Target != old.Name() || w.End < w.Start ||
		!strings.Contains(w.Detail, "promoted "+primary.Name()) || !strings.Contains(w.Detail, "healed: "+old.Name()+" rejoined") {
		t.Fatalf("window %+v: want a closed failover window on %s naming %s and the heal", w, old.Name(), primary.Name())
	}
	t.Logf("window: %s", w.Detail)
	return w
}

func TestFailoverSpecsAreChecked(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "failover", Mode: "coin-toss"}, `mode "coin-toss"`},
		{Spec{Kind: "failover", Target: "client:0"}, "without a point the target is the primary"},
		{Spec{Kind: "failover", Target: "any", Point: "acquire:granted"}, "needs a duration"},
	} {
		if _, err := New(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v) = %v, want an error with %q", c.spec, err, c.want)
		}
	}
	f, err := New(Spec{Kind: "failover", Target: "client:2", Point: "acquire:granted", Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Available(NewEnv(nil, nil, 2)); err == nil || errors.Is(err, ErrNeedsCluster) {
		t.Errorf("client:2 of 2 clients: %v, want a target error before the cluster is known", err)
	}
	f, _ = New(Spec{Kind: "failover", Mode: "manual"})
	if err := f.Available(NewEnv(nil, nil, 2)); !errors.Is(err, ErrNeedsCluster) {
		t.Errorf("without a cluster: %v, want ErrNeedsCluster", err)
	}
	single := clustertest.Start(t, cluster.Topology{Kind: cluster.Single, Nodes: 1})
	if err := f.Available(NewEnv(single, nil, 2)); err == nil || !strings.Contains(err.Error(), "needs topology replicated") {
		t.Errorf("on a single server: %v, want a topology error", err)
	}
}

// Without a point the failover strikes at injection: the primary dies, a replica is
// promoted (by Sentinel or by hand), clients find it; heal brings the old one back.
func TestFailoverAtInjection(t *testing.T) {
	for _, mode := range []string{FailoverSentinel, FailoverManual} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			env, ctx := failoverEnv(t)
			c := env.Cluster
			old := c.Lock[0]
			f := newFailover(t, env, Spec{Kind: "failover", Mode: mode, Duration: time.Second})
			start := time.Now()
			if err := f.Inject(ctx, env); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s failover injected in %s", mode, time.Since(start).Round(time.Millisecond))
			// A Sentinel names the new primary when Inject returns (the others within a hello
			// period): a lock client finds it.
			ep, err := c.Endpoints(0)
			if err != nil {
				t.Fatal(err)
			}
			impl, _ := locks.All().Get("setnx")
			l, err := impl.New(lockimpl.Config{Sentinels: ep.Sentinels, Master: ep.Master, Via: ep.Via, Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			deadline := time.Now().Add(2 * time.Second)
			for _, err := l.Acquire(ctx, "k", time.Minute); err != nil; _, err = l.Acquire(ctx, "k", time.Minute) {
				if time.Now().After(deadline) {
					t.Fatalf("acquire after the failover: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// A heal cut short by the end of the run is left to the next one.
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if err := f.Heal(cancelled, env); err != nil {
				t.Fatalf("Heal with the run's context gone: %v, want it left to the final heal", err)
			}
			for range 2 { // Heal is idempotent
				if err := f.Heal(ctx, env); err != nil {
					t.Fatal(err)
				}
			}
			assertHealed(t, ctx, env, old)
		})
	}
}

// With a point, replication is cut at injection and the primary dies when a client
// reaches the point: what was written in between is lost with it, and heal restores a
// whole topology without it.
func TestFailoverAtPointLosesWhatWasNotReplicated(t *testing.T) {
	for _, mode := range []string{FailoverSentinel, FailoverManual} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			env, ctx := failoverEnv(t)
			c := env.Cluster
			old := c.Lock[0]
			if err := direct(t, old).Set(ctx, "before", "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			// Replication is asynchronous: "before" is only on the replicas once they caught up.
			if err := c.AwaitCaughtUp(ctx, old); err != nil {
				t.Fatal(err)
			}
			f := newFailover(t, env, Spec{Kind: "failover", Mode: mode, Duration: time.Minute, Target: "any", Point: lockimpl.StepGranted})
			if err := f.Inject(ctx, env); err != nil {
				t.Fatal(err)
			}
			// The "grant": written after the cut, so only the primary has it.
			if err := direct(t, old).Set(ctx, "grant", "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := env.Gates.Reach(ctx, 0, workload0Point); err != nil { // not the point: nothing happens
				t.Fatal(err)
			}
			if role, err := c.Role(ctx, old); err != nil || role != "master" {
				t.Fatalf("the primary died before the point was reached: role %q, %v", role, err)
			}
			start := time.Now()
			if err := env.Gates.Reach(ctx, 1, lockimpl.StepGranted); err != nil {
				t.Fatal(err)
			}
			t.Logf("client 1 held %s at its grant while the %s failover ran", time.Since(start).Round(time.Millisecond), mode)
			primary, err := c.AwaitPrimary(ctx, old) // a Sentinel names it already
			if err != nil {
				t.Fatalf("primary after the strike: %v", err)
			}
			if err := direct(t, primary).Get(ctx, "grant").Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("the new primary %s has the grant written after the cut (err %v)", primary.Name(), err)
			}
			if v, err := direct(t, primary).Get(ctx, "before").Result(); err != nil || v != "1" {
				t.Fatalf("the new primary %s lost what was replicated before the cut: %q, %v", primary.Name(), v, err)
			}
			// A second client at the point passes at once.
			start = time.Now()
			if err := env.Gates.Reach(ctx, 0, lockimpl.StepGranted); err != nil || time.Since(start) > 200*time.Millisecond {
				t.Fatalf("a second arrival at the point: %v after %s; want it to pass at once", err, time.Since(start))
			}
			if err := f.Heal(ctx, env); err != nil {
				t.Fatal(err)
			}
			w := assertHealed(t, ctx, env, old)
			if !strings.Contains(w.Detail, "at client 1's "+lockimpl.StepGranted) {
				t.Errorf("window detail %q does not say whose grant it was", w.Detail)
			}
			if err := direct(t, old).Get(ctx, "grant").Err(); !errors.Is(err, redis.Nil) {
				t.Errorf("the old primary kept the lost grant after rejoining (err %v)", err)
			}
		})
	}
}

// workload0Point is a client point that is not the failover's.
const workload0Point = "after-acquire"

// A failover whose point is never reached kills nothing; heal lets replication resume.
func TestFailoverNeverStruckRestoresReplication(t *testing.T) {
	t.Parallel()
	env, ctx := failoverEnv(t)
	c := env.Cluster
	f := newFailover(t, env, Spec{Kind: "failover", Mode: FailoverManual, Duration: time.Second, Target: "client:0", Point: lockimpl.StepGranted})
	if err := f.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := direct(t, c.Lock[0]).Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	// Disarmed: reaching the point now kills nothing.
	if err := env.Gates.Reach(ctx, 0, lockimpl.StepGranted); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Primary(ctx); err != nil || p != c.Lock[0] {
		t.Fatalf("primary %v, %v; want redis-0 untouched", p, err)
	}
	for _, r := range c.Lock[1:] {
		deadline := time.Now().Add(10 * time.Second)
		for direct(t, r).Get(ctx, "k").Err() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("%s never caught up after the cut healed", r.Name())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if n := len(env.Rec.History().Faults); n != 0 {
		t.Errorf("%d fault windows for a failover that never struck, want 0", n)
	}
}

// The cut waits for an instant when the primary holds no lease: a lease held across it
// would be released on the primary alone, leaving the replicas a lock nobody holds.
func TestFailoverCutsReplicationOnlyWhenNoLeaseIsHeld(t *testing.T) {
	t.Parallel()
	env, ctx := failoverEnv(t)
	c := env.Cluster
	primary, replica := c.Lock[0], c.Lock[1]
	if err := direct(t, primary).Set(ctx, "lease", "held", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	f := newFailover(t, env, Spec{Kind: "failover", Mode: FailoverManual, Duration: 10 * time.Second, Target: "any", Point: lockimpl.StepGranted})
	injected := make(chan error, 1)
	go func() { injected <- f.Inject(ctx, env) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-injected:
		t.Fatalf("Inject returned (%v) while a lease was held", err)
	default:
	}
	// The release reaches the replicas: replication is not cut yet.
	if err := direct(t, primary).Del(ctx, "lease").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-injected; err != nil {
		t.Fatal(err)
	}
	if err := direct(t, replica).Get(ctx, "lease").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the release made before the cut did not reach the replica (err %v)", err)
	}
	if err := f.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
}
