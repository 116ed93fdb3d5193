package netproxy_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
)

// These tests bound a time through a link only from below (a delayed reply took at least
// the latency) or judge by what the server saw, never with an upper bound that a slow
// machine could break.

func TestLinkIsOnePerNameAndRefusesAnotherUpstream(t *testing.T) {
	n := netproxy.NewNet()
	t.Cleanup(func() { n.Close() })
	a, err := n.Link("client:0->lock-0", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := n.Link("client:0->lock-0", "127.0.0.1:1")
	if err != nil || again != a {
		t.Fatalf("second Link = %q, %v; want %q", again, err, a)
	}
	if _, err := n.Link("client:0->lock-0", "127.0.0.1:2"); err == nil {
		t.Fatal("a name was re-pointed to another upstream")
	}
	for _, bad := range []string{"", "client:*->x", "a/b"} {
		if _, err := n.Link(bad, "127.0.0.1:1"); err == nil {
			t.Errorf("Link(%q) accepted", bad)
		}
	}
	for _, name := range []string{"client:1->lock-0", "client:0->store", "redis-0->redis-1", "lock-1->lock-0:quorum", "lock-0->lock-1:election"} {
		if _, err := n.Link(name, "127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	n.Group("peers->lock-0", "lock-0->*:*", "*->lock-0:*")
	n.Group("peers->lock-1", "lock-1->*:*", "*->lock-1:*")
	n.Group("peers->lock-2", "lock-2->*:*", "*->lock-2:*")
	for pattern, want := range map[string][]string{
		"client:*->lock-0": {"client:0->lock-0", "client:1->lock-0"},
		"client:0->*":      {"client:0->lock-0", "client:0->store"},
		"redis-0->*":       {"redis-0->redis-1"},
		"nothing":          nil,
		"[":                nil, // malformed
		"peers->lock-0":    {"lock-0->lock-1:election", "lock-1->lock-0:quorum"},
		"peers->*":         {"lock-0->lock-1:election", "lock-1->lock-0:quorum"},
		"peers->lock-1":    {"lock-0->lock-1:election", "lock-1->lock-0:quorum"},
		"peers->lock-2":    nil,
	} {
		if got := n.Match(pattern); !slices.Equal(got, want) {
			t.Errorf("Match(%q) = %q, want %q", pattern, got, want)
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
		c.Close()
		t.Fatalf("link %s still accepts after Close", a)
	}
	if _, err := n.Link("client:2->lock-0", "127.0.0.1:1"); err == nil {
		t.Fatal("a closed Net made a link")
	}
}

// linkTo starts one server and a Net with one link to it, named as client 0's link to
// lock-0; it returns the Net, the link's name and address, and the server's own address.
func linkTo(tb testing.TB) (n *netproxy.Net, link, listen, server string) {
	tb.Helper()
	server = clustertest.Node(tb, cluster.NodeConfig{Name: "lock-0"}).Addr()
	n, link = netproxy.NewNet(), "client:0->lock-0"
	tb.Cleanup(func() { n.Close() }) // before the server stops
	listen, err := n.Link(link, server)
	if err != nil {
		tb.Fatal(err)
	}
	return n, link, listen, server
}

// linked starts one server behind a link and returns the Net, the link, its address, and
// a connected client on that link and one on the server's own address.
func linked(t *testing.T) (n *netproxy.Net, link, listen string, through, direct *redis.Client) {
	t.Helper()
	n, link, listen, server := linkTo(t)
	through, direct = clustertest.Client(t, listen), clustertest.Client(t, server)
	for _, rdb := range []*redis.Client{through, direct} {
		if err := rdb.Ping(context.Background()).Err(); err != nil { // connect before any toxic
			t.Fatal(err)
		}
	}
	return n, link, listen, through, direct
}

// toxic adds tx to link and removes it at cleanup (or earlier, by calling the result).
func toxic(t *testing.T, n *netproxy.Net, link string, tx netproxy.Toxic) (remove func()) {
	t.Helper()
	name, err := n.AddToxic(link, tx)
	if err != nil {
		t.Fatal(err)
	}
	remove = func() {
		if err := n.RemoveToxic(link, name); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(remove)
	return remove
}

// incrThrough sends INCR key through rdb and reports, for that command, when the server
// had applied it (watching through direct) and when its reply arrived, both since the
// send. A reply that never comes within limit is reported as limit.
func incrThrough(t *testing.T, through, direct *redis.Client, key string, limit time.Duration) (applied, replied time.Duration, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- through.Incr(ctx, key).Err() }()
	applied, replied = -1, -1
	for applied < 0 || replied < 0 {
		select {
		case err = <-done:
			replied = time.Since(start)
			done = nil
		case <-time.After(time.Millisecond):
		}
		if applied < 0 {
			if v, _ := direct.Get(context.Background(), key).Int(); v > 0 {
				applied = time.Since(start)
			}
		}
		if applied < 0 && replied >= 0 && err != nil {
			break // the command never reached the server and never will
		}
	}
	return applied, replied, err
}

func TestLatencyDelaysOnlyTheDirectionAsked(t *testing.T) {
	n, link, _, through, direct := linked(t)
	const lat = 300 * time.Millisecond

	remove := toxic(t, n, link, netproxy.Toxic{Kind: netproxy.Latency, Direction: netproxy.Down, Latency: lat})
	applied, replied, err := incrThrough(t, through, direct, "down", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("down latency %s: applied after %s, reply after %s", lat, applied, replied)
	if replied < lat || applied >= replied {
		t.Errorf("down latency: applied after %s, reply after %s; want the command applied before its reply, the reply after ≥ %s", applied, replied, lat)
	}
	remove()

	toxic(t, n, link, netproxy.Toxic{Kind: netproxy.Latency, Direction: netproxy.Up, Latency: lat, Jitter: 50 * time.Millisecond})
	applied, replied, err = incrThrough(t, through, direct, "up", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("up latency %s±50ms: applied after %s, reply after %s", lat, applied, replied)
	if applied < lat-50*time.Millisecond || replied < lat-50*time.Millisecond {
		t.Errorf("up latency: applied after %s, reply after %s; want the command to arrive after ≥ %s", applied, replied, lat-50*time.Millisecond)
	}
}

func TestBlackholeSwallowsAndHealRestores(t *testing.T) {
	n, link, _, through, direct := linked(t)
	ctx := context.Background()

	remove := toxic(t, n, link, netproxy.Toxic{Kind: netproxy.Blackhole, Direction: netproxy.Up})
	applied, _, err := incrThrough(t, through, direct, "up", 300*time.Millisecond)
	if !isTimeout(err) || applied >= 0 {
		t.Errorf("up blackhole: INCR = %v, applied after %s; want a timeout and nothing applied", err, applied)
	}
	remove()
	if err := through.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after healing the up blackhole: %v", err)
	}

	remove = toxic(t, n, link, netproxy.Toxic{Kind: netproxy.Blackhole, Direction: netproxy.Down})
	applied, _, err = incrThrough(t, through, direct, "down", 300*time.Millisecond)
	if !isTimeout(err) || applied < 0 {
		t.Errorf("down blackhole: INCR = %v, applied after %s; want a timeout for a command the server applied", err, applied)
	}
	remove()
	if err := through.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after healing the down blackhole: %v", err)
	}
	if names, err := n.Toxics(link); err != nil || len(names) != 0 {
		t.Fatalf("toxics after healing: %q, %v", names, err)
	}
}

func TestResetBreaksTheConnection(t *testing.T) {
	n, link, listen, through, _ := linked(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, dir := range []netproxy.Direction{netproxy.Up, netproxy.Down} {
		remove := toxic(t, n, link, netproxy.Toxic{Kind: netproxy.Reset, Direction: dir})
		// An open connection, and one opened while the toxic is in place (a true RST).
		for _, rdb := range []*redis.Client{through, clustertest.Client(t, listen)} {
			err := rdb.Ping(ctx).Err()
			t.Logf("reset %s: PING = %v", dir, err)
			if err == nil || isTimeout(err) {
				t.Errorf("reset %s: PING = %v, want a connection error", dir, err)
			}
		}
		remove()
		if err := through.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING after removing the reset %s: %v", dir, err)
		}
	}
}

func TestRemoveToxicTakesOffOnlyItsToxicAndIsIdempotent(t *testing.T) {
	n := netproxy.NewNet()
	t.Cleanup(func() { n.Close() })
	for _, l := range []string{"a->b", "c->d"} {
		if _, err := n.Link(l, "127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	keep, err := n.AddToxic("a->b", netproxy.Toxic{Kind: netproxy.Latency, Direction: netproxy.Up, Latency: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	drop, err := n.AddToxic("a->b", netproxy.Toxic{Kind: netproxy.Blackhole, Direction: netproxy.Up})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := n.RemoveToxic("a->b", drop); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := n.Toxics("a->b"); !slices.Equal(got, []string{keep}) {
		t.Fatalf("toxics = %q, want only %q", got, keep)
	}
	for _, bad := range []netproxy.Toxic{
		{Kind: netproxy.Latency, Direction: netproxy.Up},                                                // no latency
		{Kind: netproxy.Latency, Direction: netproxy.Up, Latency: time.Second, Jitter: 2 * time.Second}, // jitter > latency
		{Kind: netproxy.Blackhole, Direction: "sideways"},                                               // no such direction
		{Kind: netproxy.Reset, Direction: netproxy.Down, Latency: time.Second},                          // reset takes no latency
		{Kind: "meteor", Direction: netproxy.Down},                                                      // no such kind
	} {
		if _, err := n.AddToxic("c->d", bad); err == nil {
			t.Errorf("AddToxic(%+v) accepted", bad)
		}
	}
	if _, err := n.AddToxic("x->y", netproxy.Toxic{Kind: netproxy.Reset, Direction: netproxy.Down}); err == nil {
		t.Error("a toxic was added to a link that does not exist")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// BenchmarkPingDirectAndThroughLink measures what a link costs: it alternates PINGs on
// the server's own address and through a clean link, and reports the mean round trip of
// each and their difference.
func BenchmarkPingDirectAndThroughLink(b *testing.B) {
	_, _, listen, server := linkTo(b)
	ctx := context.Background()
	var clients [2]*redis.Client
	for i, addr := range []string{server, listen} {
		clients[i] = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, PoolSize: 1})
		defer clients[i].Close()
		if err := clients[i].Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
	var spent [2]time.Duration
	var count [2]int
	for i := 0; b.Loop(); i++ {
		which := i % 2
		start := time.Now()
		if err := clients[which].Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		spent[which] += time.Since(start)
		count[which]++
	}
	mean := func(i int) float64 { return float64(spent[i].Nanoseconds()) / 1e3 / float64(max(count[i], 1)) }
	direct, proxied := mean(0), mean(1)
	b.ReportMetric(direct, "direct-µs/ping")
	b.ReportMetric(proxied, "link-µs/ping")
	b.ReportMetric(proxied-direct, "overhead-µs/ping")
}
