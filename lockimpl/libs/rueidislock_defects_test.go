package libs_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// Two defects of rueidislock v1.0.80, measured on a real server (docs/libraries.md,
// section rueidislock, "Defects"; replayable plans in docs/plans/rueidislock-*.json).

// TestRueidislockSlowAcquireKeysExpireBeforeRenewal: every key's PXAT is the acquire's
// start + KeyValidity, but a key's renewal timer starts only when its own SET returns
// (lock.go: deadline at 265, the SET at 323, monitoring's timer at 274). With replies
// 300 ms late and a 1 s validity the acquire succeeds after ≈600 ms, and the second key's
// first renewal would come ≈1.1 s after the start, after its PXAT: a majority of the keys
// is gone while the lock's context is still alive. NoLoopTracking changes nothing here.
func TestRueidislockSlowAcquireKeysExpireBeforeRenewal(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Single, Nodes: 1})
	ctx := clustertest.Context(t)
	ep, err := c.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	rc := tpRawClient(t, c.Lock[0].Addr())
	link := cluster.ClientLink(0, c.Lock[0].Name())
	const ttl, delay = time.Second, 300 * time.Millisecond
	for _, opts := range []string{`{}`, `{"no_loop_tracking": true}`} {
		l := thirdParty(t, "rueidislock", lockimpl.Config{Addrs: ep.Lock, Timeout: 5 * time.Second, Options: options(t, "rueidislock", opts)})
		// The client is connected (and its Locker for ttl built) before the replies slow down.
		warm, err := l.Acquire(ctx, "warm", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, warm); err != nil {
			t.Fatal(err)
		}
		toxic, err := c.Net.AddToxic(link, netproxy.Toxic{Kind: netproxy.Latency, Latency: delay, Direction: netproxy.Down})
		if err != nil {
			t.Fatal(err)
		}
		key := "slow" + strconv.Itoa(len(opts))
		start := time.Now()
		lease, err := l.Acquire(ctx, key, ttl)
		took := time.Since(start)
		if err != nil {
			c.Net.RemoveToxic(link, toxic)
			t.Fatalf("options %s: acquire with replies %s late: %v", opts, delay, err)
		}
		// The second key's SET returned just now, so its first renewal is ExtendInterval
		// (ttl/2) away; its PXAT is nearer.
		second := rc.PTTL(ctx, rueidisKeys(key)[1]).Val()
		// Sample the keys on the server and the lock's context until the context ends.
		var majorityGone, ctxEnded time.Duration
		overlap := false
		for time.Since(start) < 4*ttl {
			_, held := l.(lockimpl.Renewer).Current(lease)
			live := rueidisLive(t, ctx, rc, key, ttl)
			at := time.Since(start)
			if live < 2 && majorityGone == 0 {
				majorityGone = at
			}
			if live < 2 && held {
				overlap = true
			}
			if !held {
				ctxEnded = at
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		c.Net.RemoveToxic(link, toxic)
		_ = l.Release(ctx, lease)
		t.Logf("options %s: acquire took %s (validity left %s, second key's PTTL %s, its first renewal due in %s); a majority of the keys gone at %s, the context ended at %s (after the acquire's start)",
			opts, took.Round(time.Millisecond), lease.Validity.Round(time.Millisecond), second, ttl/2,
			majorityGone.Round(time.Millisecond), ctxEnded.Round(time.Millisecond))
		if took < ttl/2 {
			t.Fatalf("options %s: the acquire took only %s: the delay did not slow it past half the validity", opts, took)
		}
		if second <= 0 || second >= ttl/2 {
			t.Errorf("options %s: the second key's PTTL right after the acquire is %s, want between 0 and its renewal interval %s", opts, second, ttl/2)
		}
		if !overlap {
			t.Errorf("options %s: the majority of the keys never expired while the context lived: rueidislock no longer starts renewals late (update docs/libraries.md)", opts)
		}
	}
}

// pexpireatCalls is the server's count of PEXPIREAT calls (scripts' calls included).
func pexpireatCalls(t *testing.T, ctx context.Context, rc *redis.Client) int {
	t.Helper()
	info, err := rc.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_pexpireat:calls=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		if err != nil {
			t.Fatalf("commandstats line %q: %v", line, err)
		}
		return n
	}
	return 0 // never called since the last reset
}

// TestRueidislockLoopTracking: with client-side caching and no NOLOOP (NoLoopTracking
// false, the library's default) each renewal's PEXPIREAT invalidates the key the renewal
// script's GET made the client track, and that invalidation sends the key's goroutine
// into the next renewal (lock.go: monitoring's csc case at 283-287; the scripts' GET at
// 435): one idle lock renews itself as fast as the round trip allows. With
// no_loop_tracking it renews each key every ExtendInterval.
func TestRueidislockLoopTracking(t *testing.T) {
	addr, rc := locktest.Server(t)
	ctx := clustertest.Context(t)
	const ttl, idle = time.Second, 3 * time.Second
	count := map[string]int{}
	for _, opts := range []string{`{}`, `{"no_loop_tracking": true}`} {
		l := thirdParty(t, "rueidislock", lockimpl.Config{Addrs: []string{addr}, Options: options(t, "rueidislock", opts)})
		if err := rc.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		lease, err := l.Acquire(ctx, "idle", ttl)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(idle)
		count[opts] = pexpireatCalls(t, ctx, rc)
		_, held := l.(lockimpl.Renewer).Current(lease)
		if err := l.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
		t.Logf("options %s: %d PEXPIREAT in %s on one idle lock (TTL %s); held at the end: %v", opts, count[opts], idle, ttl, held)
	}
	def, noloop := count[`{}`], count[`{"no_loop_tracking": true}`]
	if noloop == 0 || noloop > 3*int(idle/(ttl/2))+3 {
		t.Errorf("no_loop_tracking: %d PEXPIREAT, want about 3 keys × %d intervals", noloop, idle/(ttl/2))
	}
	if def <= 20*noloop {
		t.Errorf("default: %d PEXPIREAT, want more than 20× the %d of no_loop_tracking: the renewal loop is gone (update docs/libraries.md)", def, noloop)
	}
}
