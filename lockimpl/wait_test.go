package lockimpl_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// waitingLocker is impl for client of c with WAIT, as a run builds it.
func waitingLocker(t *testing.T, c *cluster.Cluster, impl string, client int, w lockimpl.Wait) lockimpl.Locker {
	t.Helper()
	ep, err := c.Endpoints(client)
	if err != nil {
		t.Fatal(err)
	}
	return locktest.New(t, get(t, impl), lockimpl.Config{Addrs: ep.Lock, Sentinels: ep.Sentinels, Master: ep.Master, Cluster: ep.Cluster, Via: ep.Via, Timeout: 3 * time.Second, Wait: w})
}

// TestWaitKeepsOnlyAcknowledgedGrants: with WAIT 1 a grant is kept once the replica has
// it (it is there when Acquire returns); with the replica frozen the grant is released
// and refused, and an extension is not confirmed (neither held nor refused). The WAIT's
// timeout is long (1.5 s): on a loaded machine a live replica's acknowledgement crosses
// two processes and four proxy hops, and took over 200 ms at a load average of 20.
func TestWaitKeepsOnlyAcknowledgedGrants(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 2})
	ctx := clustertest.Context(t)
	primary, replica := c.Lock[0], c.Lock[1]
	for _, impl := range []string{"setnx", "fenced"} {
		l := waitingLocker(t, c, impl, 0, lockimpl.Wait{Replicas: 1, Timeout: 1500 * time.Millisecond})
		key := "k-" + impl
		lease, err := l.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatalf("%s: Acquire with the replica up: %v", impl, err)
		}
		if got := valueOn(t, replica, key); got != lease.Token {
			t.Fatalf("%s: the replica holds %q when Acquire returns, want the grant's token %q", impl, got, lease.Token)
		}

		if err := replica.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = l.Extend(ctx, lease, time.Minute)
		if err == nil || errors.Is(err, lockimpl.ErrNotHeld) || !strings.Contains(err.Error(), "0 of 1 replicas acknowledged") {
			t.Errorf("%s: Extend with the replica frozen: %v; want an unconfirmed extension", impl, err)
		}
		_, err = l.Acquire(ctx, key+"-2", time.Minute)
		if !errors.Is(err, lockimpl.ErrNotAcquired) || !strings.Contains(err.Error(), "0 of 1 replicas acknowledged") {
			t.Errorf("%s: Acquire with the replica frozen: %v; want refused for want of an acknowledgement", impl, err)
		}
		if got := valueOn(t, primary, key+"-2"); got != "" {
			t.Errorf("%s: the refused grant is still on the primary (%q): it was not released", impl, got)
		}
		if err := replica.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, lease); err != nil {
			t.Errorf("%s: Release: %v", impl, err)
		}
	}
}

// TestMinReplicasRefusesWrites: a primary with min-replicas-to-write 1 whose replica
// stopped acknowledging answers NOREPLICAS, which the lock reports as a refusal.
func TestMinReplicasRefusesWrites(t *testing.T) {
	c := clustertest.StartWith(t, cluster.Topology{Kind: cluster.Replicated, Nodes: 2},
		cluster.Options{ReplicaArgs: []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "1"}})
	ctx := clustertest.Context(t)
	for _, impl := range []string{"setnx", "fenced"} {
		l := waitingLocker(t, c, impl, 0, lockimpl.Wait{})
		if _, err := l.Acquire(ctx, "before-"+impl, time.Minute); err != nil {
			t.Fatalf("%s: Acquire with the replica up: %v", impl, err)
		}
	}
	if err := c.Lock[1].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Lock[1].Resume(ctx)
	// The primary counts a replica whose last acknowledgement is over a second old as
	// lagging, at its next once-a-second check: wait for the condition, not a time.
	for _, impl := range []string{"setnx", "fenced"} {
		l := waitingLocker(t, c, impl, 1, lockimpl.Wait{})
		var err error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var lease lockimpl.Lease
			if lease, err = l.Acquire(ctx, "after-"+impl, time.Minute); err == nil {
				l.Release(ctx, lease)
				continue
			}
			break
		}
		if !errors.Is(err, lockimpl.ErrNotAcquired) || !strings.Contains(err.Error(), "NOREPLICAS") {
			t.Errorf("%s: Acquire with the only replica frozen: %v; want NOREPLICAS as a refusal", impl, err)
		}
	}
}

// TestWaitIsRefusedWhereItCannotWork: a lock that takes no WAIT, a WAIT as long as the
// command timeout, and WAIT 0 are construction errors.
func TestWaitIsRefusedWhereItCannotWork(t *testing.T) {
	for _, tc := range []struct {
		impl string
		w    lockimpl.Wait
		want string
	}{
		{"check-then-set", lockimpl.Wait{Replicas: 1, Timeout: 100 * time.Millisecond}, "takes no WAIT"},
		{"setnx", lockimpl.Wait{Replicas: 1, Timeout: time.Second}, "less than the command timeout"},
		{"setnx", lockimpl.Wait{Replicas: 1}, "at least 1ms"},
		{"fenced", lockimpl.Wait{Timeout: time.Millisecond}, "without replicas"},
	} {
		_, err := get(t, tc.impl).New(lockimpl.Config{Addrs: []string{"127.0.0.1:1"}, Timeout: time.Second, Wait: tc.w})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with %+v: %v; want an error saying %q", tc.impl, tc.w, err, tc.want)
		}
	}
}

// valueOn is key's value on server n ("" when it has none).
func valueOn(t *testing.T, n cluster.Node, key string) string {
	t.Helper()
	v, err := clustertest.Client(t, n.Addr()).Get(clustertest.Context(t), key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("GET %s on %s: %v", key, n.Name(), err)
	}
	return v
}
