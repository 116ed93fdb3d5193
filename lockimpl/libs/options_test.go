package libs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// options resolves a plan's impl_options for implementation name.
func options(t *testing.T, name, raw string) lockimpl.Options {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	opts, err := get(t, name).ResolveOptions(m)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// TestRedsyncSetNXOnExtend: the option reaches the library. A key gone from every node
// (a restart without persistence) fails an extension by default and is set again with
// set_nx_on_extend.
func TestRedsyncSetNXOnExtend(t *testing.T) {
	_, addrs, raws := redsyncNodes(t)
	ctx := clustertest.Context(t)
	for _, c := range []struct {
		opts    string
		extends bool
	}{{`{}`, false}, {`{"set_nx_on_extend": true}`, true}} {
		l := thirdParty(t, "redsync", lockimpl.Config{Addrs: addrs, Options: options(t, "redsync", c.opts)})
		tpWarm(t, l)
		lease, err := l.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range raws {
			r.Del(ctx, "k")
		}
		_, err = l.Extend(ctx, lease, time.Minute)
		if got := err == nil; got != c.extends {
			t.Errorf("options %s: extend of a vanished lock: %v, want success %v", c.opts, err, c.extends)
		}
		if c.extends {
			if vals := tpOnNodes(ctx, raws, "k"); vals[0] != lease.Token {
				t.Errorf("options %s: after the extension the nodes hold %q, want our token", c.opts, vals)
			}
		}
		for _, r := range raws {
			r.Del(ctx, "k")
		}
	}
}

// TestRedislockRetry: with a retrying strategy Obtain waits out a holder that lets go
// within the retries; without, it is refused at once.
func TestRedislockRetry(t *testing.T) {
	addr, rc := locktest.Server(t)
	ctx := clustertest.Context(t)
	for _, c := range []struct {
		opts     string
		acquires bool
	}{{`{}`, false}, {`{"retry": "linear", "retry_backoff": "20ms", "retry_limit": 50}`, true}} {
		if err := rc.Set(ctx, "k", "someone", 150*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		l := locktest.New(t, get(t, "redislock"), lockimpl.Config{Addrs: []string{addr}, Options: options(t, "redislock", c.opts)})
		_, err := l.Acquire(ctx, "k", time.Minute)
		if got := err == nil; got != c.acquires {
			t.Errorf("options %s: acquire of a lock freed after 150 ms: %v, want success %v", c.opts, err, c.acquires)
		}
		if !c.acquires {
			locktest.WantRefused(t, "acquire without retries", err, lockimpl.ErrNotAcquired)
		}
		rc.Del(ctx, "k")
	}
}
