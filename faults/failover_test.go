package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/workload"
)

// failoverEnv is a replicated:3 cluster and an env with two clients over it.
func failoverEnv(t *testing.T) (*Env, context.Context) {
	t.Helper()
	return failoverEnvOf(t, 2)
}

// failoverEnvOf is a replicated:3 cluster and an env with clients over it.
func failoverEnvOf(t *testing.T, clients int) (*Env, context.Context) {
	t.Helper()
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return NewEnv(c, histories.NewRecorder(histories.Meta{Fencing: "off"}), clients), ctx
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
		{Spec{Kind: "failover", Cut: "half"}, `cut "half": want all`},
		{Spec{Kind: "failover", Cut: "one"}, "cut one needs a point"},
		{Spec{Kind: "failover", Mode: FailoverGraceful, Target: "any", Point: "acquire:granted", Duration: time.Second}, "graceful takes no point"},
		{Spec{Kind: "failover", Cut: "one", Mode: FailoverManual, Target: "any", Point: "acquire:granted", Duration: time.Second}, "does not apply to mode manual"},
		{Spec{Kind: "server-crash", Target: "lock-0", Cut: "one"}, "takes no cut"},
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
	// A Redis Cluster takes its own modes, and needs a replica.
	noReplica := clustertest.Start(t, cluster.Topology{Kind: cluster.RedisCluster, Nodes: 3})
	if err := f.Available(NewEnv(noReplica, nil, 2)); err == nil || !strings.Contains(err.Error(), "has none") {
		t.Errorf("manual on cluster:3x0: %v, want a refusal for want of a replica", err)
	}
	withReplica := clustertest.Start(t, cluster.Topology{Kind: cluster.RedisCluster, Nodes: 6, Replicas: 1})
	if err := f.Available(NewEnv(withReplica, nil, 2)); err == nil || !strings.Contains(err.Error(), "its modes: cluster, force, takeover") {
		t.Errorf("manual on cluster:3x1: %v, want a refusal naming the cluster's modes", err)
	}
	for _, mode := range []string{"", FailoverTakeover, FailoverGraceful} {
		f, _ := New(Spec{Kind: "failover", Mode: mode})
		if err := f.Available(NewEnv(withReplica, nil, 2)); err != nil {
			t.Errorf("mode %q on cluster:3x1: %v", mode, err)
		}
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
// reaches the point: what was written in between is lost with it, the client is held
// until another was granted by the new primary and read, and heal restores a whole
// topology without it.
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
			held := make(chan error, 1)
			go func() { held <- env.Gates.Reach(ctx, 1, lockimpl.StepGranted) }()
			primary, err := c.AwaitPrimary(ctx, old) // a Sentinel names it once promoted
			if err != nil {
				t.Fatalf("primary after the strike: %v", err)
			}
			if err := direct(t, primary).Get(ctx, "grant").Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("the new primary %s has the grant written after the cut (err %v)", primary.Name(), err)
			}
			if v, err := direct(t, primary).Get(ctx, "before").Result(); err != nil || v != "1" {
				t.Fatalf("the new primary %s lost what was replicated before the cut: %q, %v", primary.Name(), v, err)
			}
			// The struck client stays held until another client was granted by the new
			// primary and read; that one waits before its write until the first has read.
			notYet(t, held, "client 1 went on before another client was granted by the new primary")
			if err := env.Gates.Reach(ctx, 0, lockimpl.StepGranted); err != nil { // the other's grant passes
				t.Fatal(err)
			}
			notYet(t, held, "client 1 went on before the other client read")
			wrote := make(chan error, 1)
			go func() { wrote <- env.Gates.Reach(ctx, 0, workload.BeforeWrite) }()
			if err := <-held; err != nil {
				t.Fatal(err)
			}
			notYet(t, wrote, "client 0 wrote before client 1 read")
			if err := env.Gates.Reach(ctx, 1, workload.BeforeWrite); err != nil {
				t.Fatal(err)
			}
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			if err := f.Heal(ctx, env); err != nil {
				t.Fatal(err)
			}
			w := assertHealed(t, ctx, env, old)
			for _, says := range []string{"at client 1's " + lockimpl.StepGranted, "client 0 granted by the new primary", "client 1 read or gave up before client 0 wrote"} {
				if !strings.Contains(w.Detail, says) {
					t.Errorf("window detail %q does not say %q", w.Detail, says)
				}
			}
			if err := direct(t, old).Get(ctx, "grant").Err(); !errors.Is(err, redis.Nil) {
				t.Errorf("the old primary kept the lost grant after rejoining (err %v)", err)
			}
		})
	}
}

// notYet fails with why if ch delivers within 300 ms: what it waits for must not have come.
func notYet(t *testing.T, ch <-chan error, why string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s (%v)", why, err)
	case <-time.After(300 * time.Millisecond):
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
		awaitKey(t, r, "k")
	}
	if n := len(env.Rec.History().Faults); n != 0 {
		t.Errorf("%d fault windows for a failover that never struck, want 0", n)
	}
}

// Cut one cuts one replica off alone and bars the others from promotion; a failover that
// never struck heals both: the lagging replica catches up and the bar is lifted.
func TestFailoverCutOneLagsOneReplica(t *testing.T) {
	t.Parallel()
	env, ctx := failoverEnv(t)
	c := env.Cluster
	f := newFailover(t, env, Spec{Kind: "failover", Cut: "one", Duration: 5 * time.Second, Target: "client:0", Point: lockimpl.StepGranted})
	if err := f.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	barred, lagging := c.Lock[1], c.Lock[2]
	if err := direct(t, c.Lock[0]).Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	awaitKey(t, barred, "k")
	if v := direct(t, barred).ConfigGet(ctx, "replica-priority").Val()["replica-priority"]; v != "0" {
		t.Errorf("%s: replica-priority %q while cut one is in place, want 0", barred.Name(), v)
	}
	if err := direct(t, lagging).Get(ctx, "k").Err(); err != redis.Nil {
		t.Errorf("%s has k (%v) once %s has it: it was not cut off", lagging.Name(), err, barred.Name())
	}
	if err := f.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	awaitKey(t, lagging, "k")
	if v := direct(t, barred).ConfigGet(ctx, "replica-priority").Val()["replica-priority"]; v != "100" {
		t.Errorf("%s: replica-priority %q after the heal, want 100", barred.Name(), v)
	}
}

// awaitKey waits until n has key, replicated from its primary.
func awaitKey(t *testing.T, n cluster.Node, key string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for direct(t, n).Get(context.Background(), key).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s never got %s from its primary", n.Name(), key)
		}
		time.Sleep(20 * time.Millisecond)
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

// leasesOn is how many leases n holds.
func leasesOn(ctx context.Context, c *cluster.Cluster, n cluster.Node) (int64, error) {
	k := c.NewCutter(n)
	defer k.Close()
	return k.Leases(ctx)
}

// overlappingClients runs clients that take a lease of their own on primary (SET PX) over
// and over as the workload does, reaching workload.BeforeAcquire before each and the
// grant's point after, each section staggered against the others so that some lease is
// held at every instant. They stop when ctx ends or a command fails (the primary died).
func overlappingClients(ctx context.Context, t *testing.T, env *Env, primary cluster.Node, section time.Duration) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	for i := range env.Clients {
		rc := direct(t, primary)
		key := fmt.Sprintf("lease-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * section / time.Duration(env.Clients))
			for ctx.Err() == nil {
				if env.Gates.Reach(ctx, i, workload.BeforeAcquire) != nil || rc.Set(ctx, key, "held", time.Minute).Err() != nil {
					return
				}
				if env.Gates.Reach(ctx, i, lockimpl.StepGranted) != nil {
					return
				}
				time.Sleep(section)
				if rc.Del(ctx, key).Err() != nil {
					return
				}
			}
		}()
	}
	return &wg
}

// When the clients' critical sections overlap so that some lease is always held, no
// instant without one comes by itself: the failover holds the clients before their next
// acquire until the leases drain, cuts, lets them go, and strikes at the first grant
// after the cut, which the new primary never sees. The window says the clients were held.
func TestFailoverHoldsClientsBeforeAcquiringUntilNoLeaseIsHeld(t *testing.T) {
	t.Parallel()
	env, ctx := failoverEnvOf(t, 3)
	c := env.Cluster
	old := c.Lock[0]
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	clients := overlappingClients(cctx, t, env, old, 150*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // every client has begun
	// The sections overlap: some lease is held at every look.
	for range 100 {
		if n, err := leasesOn(ctx, c, old); err != nil || n == 0 {
			t.Fatalf("leases held %d, %v: want the clients' sections to overlap", n, err)
		}
		time.Sleep(3 * time.Millisecond)
	}
	f := newFailover(t, env, Spec{Kind: "failover", Mode: FailoverManual, Duration: 5 * time.Second, Target: "any", Point: lockimpl.StepGranted})
	start := time.Now()
	if err := f.Inject(ctx, env); err != nil {
		t.Fatal(err)
	}
	t.Logf("replication cut after %s", time.Since(start).Round(time.Millisecond))
	clients.Wait() // the strike killed the primary under them
	primary, err := c.AwaitPrimary(ctx, old)
	if err != nil {
		t.Fatalf("primary after the strike: %v", err)
	}
	// No lease was held across the cut, and the grants after it existed only on the dead primary.
	if n, err := leasesOn(ctx, c, primary); err != nil || n != 0 {
		t.Errorf("the new primary %s holds %d leases (%v), want none", primary.Name(), n, err)
	}
	if err := f.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	w := assertHealed(t, ctx, env, old)
	if !strings.Contains(w.Detail, "clients held before acquiring for up to") || !strings.Contains(w.Detail, "acquire:granted") {
		t.Errorf("window detail %q: want it to say that the clients were held and whose grant it struck at", w.Detail)
	}
}

// A lease that never drains (held far longer than the fault's duration) leaves no
// instant to cut: Inject says so, and the clients held meanwhile go on.
func TestFailoverGivesUpWhenALeaseNeverDrains(t *testing.T) {
	t.Parallel()
	env, ctx := failoverEnv(t)
	c := env.Cluster
	if err := direct(t, c.Lock[0]).Set(ctx, "leaked", "held", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	f := newFailover(t, env, Spec{Kind: "failover", Mode: FailoverManual, Duration: 300 * time.Millisecond, Target: "any", Point: lockimpl.StepGranted})
	held := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		held <- env.Gates.Reach(ctx, 1, workload.BeforeAcquire)
	}()
	err := f.Inject(ctx, env)
	if err == nil || !strings.Contains(err.Error(), "always held a lease") || !strings.Contains(err.Error(), "1 held at the last look") ||
		!strings.Contains(err.Error(), "1 client held before acquiring") {
		t.Fatalf("Inject = %v; want the lease, the count and the held client named", err)
	}
	select {
	case err := <-held:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client held before acquiring was not let go when the failover gave up")
	}
	if err := f.Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	if n := len(env.Rec.History().Faults); n != 0 {
		t.Errorf("%d fault windows for a failover that never cut, want 0", n)
	}
}

// A failover due at the start of the run holds the clients from before they start (its
// Inject runs beside them and would find them granted), and Stop lets them go even when
// no cut came.
func TestFailoverAtTheStartHoldsClientsFromBeforeTheyStart(t *testing.T) {
	t.Parallel()
	env, ctx := failoverEnv(t)
	if err := direct(t, env.Cluster.Lock[0]).Set(ctx, "leaked", "held", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	sch, err := startSpecs(t, ctx, env, []Spec{{Kind: "failover", Mode: FailoverManual, Duration: 10 * time.Second, Target: "any", Point: lockimpl.StepGranted}})
	if err != nil {
		t.Fatal(err)
	}
	if holds := env.Gates.Holds(); holds != 1 {
		t.Fatalf("%d holds when Start returned, want the failover's", env.Gates.Holds())
	}
	reached := make(chan error, 1)
	go func() { reached <- env.Gates.Reach(ctx, 0, workload.BeforeAcquire) }()
	select {
	case err := <-reached:
		t.Fatalf("a client passed before acquiring (%v) while the failover waited for its cut", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := sch.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reached:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not let the held client go")
	}
}
