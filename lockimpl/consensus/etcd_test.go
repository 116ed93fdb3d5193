package consensus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/consensus"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// etcdMembers starts an etcd cluster of n members and returns their addresses and an
// inspection client.
func etcdMembers(t *testing.T, n int) ([]string, *clientv3.Client) {
	t.Helper()
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Etcd, Nodes: n})
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.LockAddrs(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return c.LockAddrs(), cli
}

func etcdLocker(t *testing.T, addrs []string, step lockimpl.StepFunc) lockimpl.Locker {
	t.Helper()
	return locktest.New(t, consensus.Etcd(), lockimpl.Config{Addrs: addrs, Step: step, Timeout: time.Second})
}

// keys are the keys under the lock's prefix, oldest first.
func etcdKeys(t *testing.T, cli *clientv3.Client, prefix string) []*clientv3.GetResponse {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	return []*clientv3.GetResponse{resp}
}

// The lock excludes, its fence is the key's create revision and grows, a release
// deletes the key and revokes the lease, a second release is refused, Extend is not
// supported and sends nothing.
func TestEtcdAcquireRelease(t *testing.T) {
	addrs, cli := etcdMembers(t, 1)
	a, b := etcdLocker(t, addrs, nil), etcdLocker(t, addrs, nil)
	ctx := clustertest.Context(t)
	lease, err := a.Acquire(ctx, "k", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// etcd counts leases in whole seconds: 300 ms is a 1 s lease, and the lease says so.
	if lease.Validity <= 500*time.Millisecond || lease.Validity > time.Second || lease.Fence <= 0 || lease.Granted != time.Second {
		t.Fatalf("lease %+v: want a validity in (0.5 s, 1 s], a fence and 1 s granted", lease)
	}
	resp := etcdKeys(t, cli, "k")[0]
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) != lease.Token || resp.Kvs[0].CreateRevision != lease.Fence {
		t.Fatalf("keys %v; want one key %s created at revision %d", resp.Kvs, lease.Token, lease.Fence)
	}
	_, err = b.Acquire(ctx, "k", time.Second)
	locktest.WantRefused(t, "second Acquire", err, lockimpl.ErrNotAcquired)
	if resp := etcdKeys(t, cli, "k")[0]; len(resp.Kvs) != 1 {
		t.Fatalf("the refused acquire left its key: %v", resp.Kvs)
	}
	if _, err := a.Extend(ctx, lease, time.Second); !errors.Is(err, lockimpl.ErrUnsupported) {
		t.Fatalf("Extend: %v; want ErrUnsupported", err)
	}
	// Held past its TTL: the session keeps the lease alive.
	time.Sleep(1500 * time.Millisecond)
	if cur, ok := a.(lockimpl.Renewer).Current(lease); !ok || cur.Remaining(time.Now()) <= 0 {
		t.Fatalf("Current after 1.5 s: %+v %v; want the lease renewed", cur, ok)
	}
	_, err = b.Acquire(ctx, "k", time.Second)
	locktest.WantRefused(t, "Acquire while renewed", err, lockimpl.ErrNotAcquired)
	if err := a.Release(ctx, lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if resp := etcdKeys(t, cli, "k")[0]; len(resp.Kvs) != 0 {
		t.Fatalf("keys after Release: %v", resp.Kvs)
	}
	if err := a.Release(ctx, lease); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("second Release: %v; want ErrNotHeld", err)
	}
	next, err := b.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if next.Fence <= lease.Fence {
		t.Fatalf("fence %d after %d: fences must grow", next.Fence, lease.Fence)
	}
	if _, err := a.Acquire(ctx, "", time.Second); err == nil {
		t.Fatal("Acquire of an empty key succeeded")
	}
}

// A client that crashes right after the grant refreshes nothing: the lease expires on
// the server after its TTL, and another client takes the lock. The crash's error says
// which lease was granted (1 s for the 300 ms asked): the lock lives that long.
func TestEtcdCrashAfterGrant(t *testing.T) {
	addrs, _ := etcdMembers(t, 1)
	a, b := etcdLocker(t, addrs, locktest.CrashAtGrant), etcdLocker(t, addrs, nil)
	ctx := clustertest.Context(t)
	_, err := a.Acquire(ctx, "k", 300*time.Millisecond)
	if !errors.Is(err, lockimpl.ErrCrashed) || lockimpl.GrantedOf(err) != time.Second {
		t.Fatalf("Acquire: %v (granted %s); want the injected crash, 1 s granted", err, lockimpl.GrantedOf(err))
	}
	a.(lockimpl.Crasher).Crash()
	_, err = b.Acquire(ctx, "k", time.Second)
	locktest.WantRefused(t, "Acquire right after the crash", err, lockimpl.ErrNotAcquired)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := b.Acquire(ctx, "k", time.Second)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock still held 5 s after its holder crashed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A lease revoked behind the holder's back (as the server does when it expires it) is
// reported lost by Current once the session sees it, and its release is refused.
func TestEtcdLostLease(t *testing.T) {
	addrs, cli := etcdMembers(t, 1)
	a := etcdLocker(t, addrs, nil)
	ctx := clustertest.Context(t)
	lease, err := a.Acquire(ctx, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp := etcdKeys(t, cli, "k")[0]
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, ok := a.(lockimpl.Renewer).Current(lease); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Current still reports a revoked lease held after 3 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	err = a.Release(ctx, lease)
	locktest.WantRefused(t, "Release of a lost lease", err, lockimpl.ErrNotHeld)
}

// With no member to answer an acquire is unknown within its timeout, never a refusal.
func TestEtcdNoMember(t *testing.T) {
	l := etcdLocker(t, []string{clustertest.DeadAddr(t)}, nil)
	_, err := l.Acquire(clustertest.Context(t), "k", time.Second)
	locktest.WantUnknown(t, "Acquire with no member", err)
}
