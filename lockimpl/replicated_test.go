package lockimpl_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
)

func TestLockFollowsTheNewPrimary(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 3})
	ctx := clustertest.Context(t)
	a := locktest.ReplicatedLocker(t, c, get(t, "fenced"), 0, time.Second)
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
	b := locktest.ReplicatedLocker(t, c, get(t, "fenced"), 1, time.Second)
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
	a := locktest.ReplicatedLocker(t, c, get(t, "setnx"), 0, 300*time.Millisecond)
	b := locktest.ReplicatedLocker(t, c, get(t, "setnx"), 1, 300*time.Millisecond)
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
	impl := get(t, "setnx")
	if _, err := impl.New(lockimpl.Config{Sentinels: []string{"127.0.0.1:1"}}); err == nil {
		t.Fatal("a lock on Sentinels without a master name was built")
	}
}
