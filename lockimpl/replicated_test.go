package lockimpl_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// replicatedLocker builds implementation name for client of c, as a run does: through
// the Sentinels, dialling the client's links.
func replicatedLocker(t *testing.T, c *cluster.Cluster, name string, client int, timeout time.Duration) lockimpl.Locker {
	t.Helper()
	ep, err := c.Endpoints(client)
	if err != nil {
		t.Fatal(err)
	}
	impl, err := lockimpl.Builtin().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := impl.New(lockimpl.Config{Addrs: ep.Lock, Sentinels: ep.Sentinels, Master: ep.Master, Via: ep.Via, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestSingleInstanceLocksRunOnReplicated(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 2})
	forEachCorrect(t, func(t *testing.T, name string) {
		if impl, _ := lockimpl.Builtin().Get(name); !impl.RunsOn(cluster.Replicated) {
			t.Fatalf("%s does not run on %s", name, cluster.Replicated)
		}
		ctx := clustertest.Context(t)
		a, b := replicatedLocker(t, c, name, 0, time.Second), replicatedLocker(t, c, name, 1, time.Second)
		key := "k-" + name
		lease, err := a.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		primary := redis.NewClient(&redis.Options{Addr: c.Lock[0].Addr(), Protocol: 2, DisableIdentity: true})
		defer primary.Close()
		if got := primary.Get(ctx, key).Val(); got != lease.Token {
			t.Fatalf("primary holds %q, want the lease's token", got)
		}
		if _, err := b.Acquire(ctx, key, time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
			t.Fatalf("second Acquire: %v; want ErrNotAcquired", err)
		}
		if err := a.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLockFollowsTheNewPrimary(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 3})
	ctx := clustertest.Context(t)
	a := replicatedLocker(t, c, "fenced", 0, time.Second)
	lease, err := a.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	old := c.Lock[0]
	// Replication is asynchronous: a link that is up may not have carried the grant yet.
	if err := c.AwaitCaughtUp(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := old.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	primary, err := c.PromoteByHand(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	// The lock replicated before the primary died: the new primary still refuses others.
	b := replicatedLocker(t, c, "fenced", 1, time.Second)
	if _, err := b.Acquire(ctx, "k", time.Minute); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("Acquire on the new primary %s: %v; want ErrNotAcquired", primary.Name(), err)
	}
	// The holder's client drops its connection to the dead primary (that command's
	// outcome is unknown: it is never retried) and then releases on the new one.
	var errs []error
	for range 5 {
		err = a.Release(ctx, lease)
		if err == nil || lockimpl.Classify(err) != histories.Unknown {
			break
		}
		errs = append(errs, err)
	}
	if err != nil {
		t.Fatalf("Release on the new primary: %v (before: %v)", err, errs)
	}
	if len(errs) > 1 {
		t.Errorf("%d failed releases before the client followed: %v", len(errs), errs)
	}
}

func TestFailoverClientDialsThroughTheClientsLinks(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 2})
	ctx := clustertest.Context(t)
	a := replicatedLocker(t, c, "setnx", 0, 300*time.Millisecond)
	b := replicatedLocker(t, c, "setnx", 1, 300*time.Millisecond)
	// Client 0's link to the primary swallows everything; client 1's is clean.
	link := cluster.ClientLink(0, c.Lock[0].Name())
	name, err := c.Net.AddToxic(link, netproxy.Toxic{Kind: netproxy.Blackhole, Direction: netproxy.Up})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, "k", time.Minute); lockimpl.Classify(err) != histories.Unknown || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("Acquire through a black-holed link: %v; want a timeout", err)
	}
	if _, err := b.Acquire(ctx, "k2", time.Minute); err != nil {
		t.Fatalf("Acquire through a clean link: %v", err)
	}
	if err := c.Net.RemoveToxic(link, name); err != nil {
		t.Fatal(err)
	}
}

func TestFailoverClientNeedsTheMasterName(t *testing.T) {
	impl, _ := lockimpl.Builtin().Get("setnx")
	if _, err := impl.New(lockimpl.Config{Sentinels: []string{"127.0.0.1:1"}}); err == nil {
		t.Fatal("a lock on Sentinels without a master name was built")
	}
}

func TestSingleInstanceLocksRunOnOnePrimaryAtATime(t *testing.T) {
	for _, impl := range lockimpl.Builtin().List() {
		if impl.Topology != cluster.Single {
			continue // multi-node locks (redlock, redsync) run on nodes only
		}
		if !impl.RunsOn(cluster.Single) || !impl.RunsOn(cluster.Replicated) || impl.RunsOn(cluster.Nodes) {
			t.Errorf("%s (topology %s): runs on single %v, replicated %v, nodes %v; want single and replicated only",
				impl.Name, impl.Topology, impl.RunsOn(cluster.Single), impl.RunsOn(cluster.Replicated), impl.RunsOn(cluster.Nodes))
		}
	}
}
