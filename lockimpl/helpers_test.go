package lockimpl_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/lockimpl"
)

// server starts a Redis server for the test and returns its address and a raw client to
// inspect what the locks did.
func server(t *testing.T) (string, *redis.Client) {
	t.Helper()
	n := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return n.Addr(), c
}

// locker builds implementation name against addr, closed at cleanup.
func locker(t *testing.T, name, addr string, step lockimpl.StepFunc) lockimpl.Locker {
	t.Helper()
	impl, err := lockimpl.Builtin().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := impl.New(lockimpl.Config{Addrs: []string{addr}, Step: step})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// waitGone waits (bounded) until key has expired.
func waitGone(t *testing.T, c *redis.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(clustertest.Wait)
	for c.Exists(context.Background(), key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("key %q did not expire within %s", key, clustertest.Wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// steppedClock advances by step on every reading, so that each Now is distinct and known.
type steppedClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}
