package cluster_test

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
)

// These tests bound a time through a link only from below (a delayed reply took at least
// the latency) or judge by what the server saw, never with an upper bound that a slow
// machine could break.

func TestLinkIsOnePerNameAndRefusesAnotherUpstream(t *testing.T) {
	n := cluster.NewNet()
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
	for _, name := range []string{"client:1->lock-0", "client:0->store", "redis-0->redis-1"} {
		if _, err := n.Link(name, "127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	for pattern, want := range map[string][]string{
		"client:*->lock-0": {"client:0->lock-0", "client:1->lock-0"},
		"client:0->*":      {"client:0->lock-0", "client:0->store"},
		"redis-0->*":       {"redis-0->redis-1"},
		"nothing":          nil,
		"[":                nil, // malformed
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

func TestEndpointsAreEachClientsOwnLinksToTheRightServer(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Nodes, Nodes: 2})
	ctx := context.Background()
	// Each server knows its own name, so a reply says which server answered.
	for _, n := range c.Nodes() {
		if err := client(t, n.Addr()).Set(ctx, "whoami", n.Name(), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]string{} // address -> link
	for cl := range 2 {
		ep, err := c.Endpoints(cl)
		if err != nil {
			t.Fatal(err)
		}
		addrs := append(slices.Clone(ep.Lock), ep.Store)
		names := []string{"lock-0", "lock-1", "store"}
		for i, addr := range addrs {
			link := cluster.ClientLink(cl, names[i])
			if prev, dup := seen[addr]; dup {
				t.Fatalf("%s and %s share the address %s", prev, link, addr)
			}
			seen[addr] = link
			if got, err := client(t, addr).Get(ctx, "whoami").Result(); err != nil || got != names[i] {
				t.Errorf("through %s (%s): whoami = %q, %v; want %q", link, addr, got, err, names[i])
			}
		}
		again, err := c.Endpoints(cl)
		if err != nil || !slices.Equal(again.Lock, ep.Lock) || again.Store != ep.Store {
			t.Errorf("Endpoints(%d) changed: %+v then %+v (%v)", cl, ep, again, err)
		}
	}
	for _, n := range c.Nodes() {
		if _, direct := seen[n.Addr()]; direct {
			t.Errorf("%s is reached at its own address, not through a link", n.Name())
		}
	}
	want := []string{"client:0->lock-0", "client:0->lock-1", "client:0->store", "client:1->lock-0", "client:1->lock-1", "client:1->store"}
	if got := c.Net.Links(); !slices.Equal(got, want) {
		t.Errorf("links = %q, want %q", got, want)
	}
	// Without a Net the servers' own addresses are used.
	bare := &cluster.Cluster{Lock: c.Lock, Store: c.Store}
	if ep, err := bare.Endpoints(0); err != nil || ep.Store != c.Store.Addr() || !slices.Equal(ep.Lock, c.LockAddrs()) {
		t.Errorf("Endpoints without a Net = %+v, %v; want the servers' addresses", ep, err)
	}
}

// linked starts one server and returns the cluster, the link of client 0 to it, and a
// connected client on that link and one on the server's own address.
func linked(t *testing.T) (c *cluster.Cluster, link string, through, direct *redis.Client) {
	t.Helper()
	c = clustertest.Start(t, cluster.Topology{Kind: cluster.Single})
	ep, err := c.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	through, direct = client(t, ep.Lock[0]), client(t, c.Lock[0].Addr())
	for _, rdb := range []*redis.Client{through, direct} {
		if err := rdb.Ping(context.Background()).Err(); err != nil { // connect before any toxic
			t.Fatal(err)
		}
	}
	return c, cluster.ClientLink(0, c.Lock[0].Name()), through, direct
}

// toxic adds tx to link and removes it at cleanup (or earlier, by calling the result).
func toxic(t *testing.T, n *cluster.Net, link string, tx cluster.Toxic) (remove func()) {
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
	c, link, through, direct := linked(t)
	const lat = 300 * time.Millisecond

	remove := toxic(t, c.Net, link, cluster.Toxic{Kind: cluster.Latency, Direction: cluster.Down, Latency: lat})
	applied, replied, err := incrThrough(t, through, direct, "down", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("down latency %s: applied after %s, reply after %s", lat, applied, replied)
	if replied < lat || applied >= replied {
		t.Errorf("down latency: applied after %s, reply after %s; want the command applied before its reply, the reply after ≥ %s", applied, replied, lat)
	}
	remove()

	toxic(t, c.Net, link, cluster.Toxic{Kind: cluster.Latency, Direction: cluster.Up, Latency: lat, Jitter: 50 * time.Millisecond})
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
	c, link, through, direct := linked(t)
	ctx := context.Background()

	remove := toxic(t, c.Net, link, cluster.Toxic{Kind: cluster.Blackhole, Direction: cluster.Up})
	applied, _, err := incrThrough(t, through, direct, "up", 300*time.Millisecond)
	if !isTimeout(err) || applied >= 0 {
		t.Errorf("up blackhole: INCR = %v, applied after %s; want a timeout and nothing applied", err, applied)
	}
	remove()
	if err := through.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after healing the up blackhole: %v", err)
	}

	remove = toxic(t, c.Net, link, cluster.Toxic{Kind: cluster.Blackhole, Direction: cluster.Down})
	applied, _, err = incrThrough(t, through, direct, "down", 300*time.Millisecond)
	if !isTimeout(err) || applied < 0 {
		t.Errorf("down blackhole: INCR = %v, applied after %s; want a timeout for a command the server applied", err, applied)
	}
	remove()
	if err := through.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after healing the down blackhole: %v", err)
	}
	if names, err := c.Net.Toxics(link); err != nil || len(names) != 0 {
		t.Fatalf("toxics after healing: %q, %v", names, err)
	}
}

func TestResetBreaksTheConnection(t *testing.T) {
	c, link, through, _ := linked(t)
	ep, err := c.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, dir := range []cluster.Direction{cluster.Up, cluster.Down} {
		remove := toxic(t, c.Net, link, cluster.Toxic{Kind: cluster.Reset, Direction: dir})
		// An open connection, and one opened while the toxic is in place (a true RST).
		for _, rdb := range []*redis.Client{through, client(t, ep.Lock[0])} {
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
	n := cluster.NewNet()
	t.Cleanup(func() { n.Close() })
	for _, l := range []string{"a->b", "c->d"} {
		if _, err := n.Link(l, "127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	keep, err := n.AddToxic("a->b", cluster.Toxic{Kind: cluster.Latency, Direction: cluster.Up, Latency: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	drop, err := n.AddToxic("a->b", cluster.Toxic{Kind: cluster.Blackhole, Direction: cluster.Up})
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
	for _, bad := range []cluster.Toxic{
		{Kind: cluster.Latency, Direction: cluster.Up},                                                // no latency
		{Kind: cluster.Latency, Direction: cluster.Up, Latency: time.Second, Jitter: 2 * time.Second}, // jitter > latency
		{Kind: cluster.Blackhole, Direction: "sideways"},                                              // no such direction
		{Kind: cluster.Reset, Direction: cluster.Down, Latency: time.Second},                          // reset takes no latency
		{Kind: "meteor", Direction: cluster.Down},                                                     // no such kind
	} {
		if _, err := n.AddToxic("c->d", bad); err == nil {
			t.Errorf("AddToxic(%+v) accepted", bad)
		}
	}
	if _, err := n.AddToxic("x->y", cluster.Toxic{Kind: cluster.Reset, Direction: cluster.Down}); err == nil {
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
	c := clustertest.Start(b, cluster.Topology{Kind: cluster.Single})
	ep, err := c.Endpoints(0)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var clients [2]*redis.Client
	for i, addr := range []string{c.Lock[0].Addr(), ep.Lock[0]} {
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
