package faults

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/workload"
)

func TestNetworkSpecsAreChecked(t *testing.T) {
	lat := func(s Spec) Spec {
		s.Kind, s.Duration, s.Target = "net-latency", time.Second, "client:0->store"
		return s
	}
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "net-latency", Duration: time.Second, Latency: time.Second}, "needs a target"},
		{Spec{Kind: "net-blackhole", Duration: time.Second, Target: "client:[0"}, "syntax error in pattern"},
		{Spec{Kind: "net-reset", Target: "client:0->store"}, "needs a duration"},
		{lat(Spec{Latency: time.Second, Direction: "sideways"}), `direction "sideways"`},
		{lat(Spec{}), "latency of at least 1ms"},
		{lat(Spec{Latency: time.Second, Jitter: 2 * time.Second}), "jitter 2s must be between 0 and the latency"},
		{lat(Spec{Latency: time.Second, Offset: time.Second}), "takes no offset"},
		{Spec{Kind: "net-blackhole", Duration: time.Second, Target: "client:0->store", Latency: time.Second}, "takes no latency"},
		{Spec{Kind: "reply-delay", Duration: time.Second, Target: "client:0", Latency: time.Second, Direction: "up"}, "delays replies only"},
		{Spec{Kind: "reply-delay", Duration: time.Second, Target: "store", Latency: time.Second}, "want client:N or any"},
		{Spec{Kind: "net-reset", Duration: time.Second, Target: "client:0->store", Point: "before-write"}, "takes no point"},
	} {
		if _, err := New(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error with %q", c.spec, err, c.want)
		}
	}
}

func TestNetworkFaultsNeedTheCluster(t *testing.T) {
	for _, s := range []Spec{
		{Kind: "net-latency", Duration: time.Second, Target: "client:0->store", Latency: time.Second},
		{Kind: "net-blackhole", Duration: time.Second, Target: "client:*->lock-0"},
		{Kind: "net-reset", Duration: time.Second, Target: "redis-0->*", Direction: "up"},
		{Kind: "reply-delay", Duration: time.Second, Target: "any", Latency: time.Second},
	} {
		f, err := New(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Available(NewEnv(nil, nil, 2)); !errors.Is(err, ErrNeedsCluster) {
			t.Errorf("%s without a cluster: %v, want ErrNeedsCluster", s.Kind, err)
		}
		if err := f.Available(NewEnv(&cluster.Cluster{}, nil, 2)); err == nil || !strings.Contains(err.Error(), "no links") {
			t.Errorf("%s on a cluster without a Net: %v", s.Kind, err)
		}
	}
}

// netEnv starts one lock server and the store, with the links of clients clients.
func netEnv(t *testing.T, clients int) *Env {
	t.Helper()
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Single})
	env := NewEnv(c, histories.NewRecorder(histories.Meta{Fencing: "off"}), clients)
	for i := range clients {
		if _, err := c.Endpoints(i); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

func TestTargetsThatMatchNoLinkSayWhichExist(t *testing.T) {
	env := netEnv(t, 2)
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "net-latency", Duration: time.Second, Target: "client:5->store", Latency: time.Second},
			`target "client:5->store" matches no link (links: client:0->lock-0, client:0->store, client:1->lock-0, client:1->store)`},
		{Spec{Kind: "net-blackhole", Duration: time.Second, Target: "redis-0->*"}, "matches no link (links: client:0->lock-0"},
		{Spec{Kind: "reply-delay", Duration: time.Second, Target: "client:2", Latency: time.Second}, "0 ≤ N < 2"},
	} {
		f, err := New(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Available(env); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %s: %v, want an error with %q", c.spec.Kind, c.spec.Target, err, c.want)
		}
		if err := f.Inject(context.Background(), env); err == nil {
			t.Errorf("%s on %s injected", c.spec.Kind, c.spec.Target)
		}
	}
}

// toxicsByLink counts the toxics on every link.
func toxicsByLink(t *testing.T, n *netproxy.Net) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, l := range n.Links() {
		names, err := n.Toxics(l)
		if err != nil {
			t.Fatal(err)
		}
		got[l] = len(names)
	}
	return got
}

func TestEveryNetworkFaultHealsCleanly(t *testing.T) {
	env := netEnv(t, 2)
	specs := []Spec{
		{Kind: "net-latency", Duration: time.Hour, Target: "client:0->store", Latency: 200 * time.Millisecond, Jitter: 20 * time.Millisecond, Direction: "up"},
		{Kind: "net-blackhole", Duration: time.Hour, Target: "client:*->lock-0", Direction: "down"},
		{Kind: "net-reset", Duration: time.Hour, Target: "client:1->*"},
		{Kind: "reply-delay", Duration: time.Hour, Target: "any", Latency: 100 * time.Millisecond},
	}
	sch, err := startSpecs(t, context.Background(), env, specs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"client:0->store":  1, // latency up
		"client:0->lock-0": 2, // blackhole down, reply delay
		"client:1->lock-0": 4, // blackhole down, reset both ways, reply delay
		"client:1->store":  2, // reset both ways
	}
	waitFor(t, func() bool {
		got := toxicsByLink(t, env.Cluster.Net)
		for l, n := range want {
			if got[l] != n {
				return false
			}
		}
		return true
	})
	if err := sch.Stop(); err != nil {
		t.Fatal(err)
	}
	for l, n := range toxicsByLink(t, env.Cluster.Net) {
		if n != 0 {
			t.Errorf("link %s keeps %d toxics after the faults healed", l, n)
		}
	}
	details := map[string]string{}
	for _, w := range env.Rec.History().Faults {
		if w.End < w.Start {
			t.Errorf("window %+v never ended", w)
		}
		details[w.Kind] = w.Detail
	}
	for kind, detail := range map[string]string{
		"net-latency":   "latency 200ms±20ms up on client:0->store",
		"net-blackhole": "blackhole down on client:0->lock-0, client:1->lock-0",
		"net-reset":     "reset both ways on client:1->lock-0, client:1->store",
		"reply-delay":   "reply delay (proxy-level): latency 100ms±0s down on client:0->lock-0, client:1->lock-0",
	} {
		if details[kind] != detail {
			t.Errorf("window of %s: detail %q, want %q", kind, details[kind], detail)
		}
	}
}

func TestHealTakesOffOnlyItsOwnToxics(t *testing.T) {
	env := netEnv(t, 1)
	ctx := context.Background()
	var fs []Fault
	for _, s := range []Spec{
		{Kind: "net-latency", Duration: time.Hour, Target: "client:0->store", Latency: time.Second},
		{Kind: "net-blackhole", Duration: time.Hour, Target: "client:0->*", Direction: "up"},
	} {
		f, err := New(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Inject(ctx, env); err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	for range 2 { // healing twice is harmless
		if err := fs[1].Heal(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	got := toxicsByLink(t, env.Cluster.Net)
	if got["client:0->store"] != 2 || got["client:0->lock-0"] != 0 { // the latency's two directions stay
		t.Fatalf("after healing the blackhole: %v, want the latency's 2 toxics on client:0->store only", got)
	}
	if err := fs[0].Heal(ctx, env); err != nil {
		t.Fatal(err)
	}
	if got := toxicsByLink(t, env.Cluster.Net); got["client:0->store"] != 0 {
		t.Fatalf("after healing both: %v", got)
	}
}

func TestReplyDelayDelaysTheReplyNotTheCommand(t *testing.T) {
	env := netEnv(t, 2)
	const delay = 400 * time.Millisecond
	ep, err := env.Cluster.Endpoints(1)
	if err != nil {
		t.Fatal(err)
	}
	through, direct := rdb(t, ep.Lock[0]), rdb(t, env.Cluster.Lock[0].Addr())
	ctx := context.Background()
	if err := through.Ping(ctx).Err(); err != nil { // connect first: only the INCR's reply is timed
		t.Fatal(err)
	}
	sch, err := startSpecs(t, ctx, env, []Spec{{Kind: "reply-delay", Duration: time.Hour, Target: "client:1", Latency: delay}})
	if err != nil {
		t.Fatal(err)
	}
	defer sch.Stop()
	waitFor(t, func() bool { return toxicsByLink(t, env.Cluster.Net)["client:1->lock-0"] == 1 })

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- through.Incr(ctx, "k").Err() }()
	time.Sleep(delay / 2)
	if v, err := direct.Get(ctx, "k").Int(); err != nil || v != 1 {
		t.Errorf("half-way through the delay the server has k = %d (%v), want the INCR applied", v, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < delay {
		t.Errorf("reply after %s, want at least %s", d, delay)
	}
	if got := toxicsByLink(t, env.Cluster.Net); got["client:0->lock-0"] != 0 || got["client:1->store"] != 0 {
		t.Errorf("reply delay for client 1 touched other links: %v", got)
	}
}

func TestTriggeredNetworkFaultIsInPlaceWhenTheClientGoesOn(t *testing.T) {
	env := netEnv(t, 1)
	sch, err := startSpecs(t, context.Background(), env, []Spec{{
		Kind: "net-latency", Duration: time.Hour, Target: "client:0->store", Latency: time.Second, Direction: "up",
		Trigger: "client:0@before-write",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sch.Stop()
	if n := toxicsByLink(t, env.Cluster.Net)["client:0->store"]; n != 0 {
		t.Fatalf("%d toxics before the trigger fired", n)
	}
	if err := env.Gates.Reach(context.Background(), 0, "before-write"); err != nil {
		t.Fatal(err)
	}
	if n := toxicsByLink(t, env.Cluster.Net)["client:0->store"]; n != 1 {
		t.Fatalf("%d toxics when the client went on past its trigger, want 1", n)
	}
}

// A toxic due at the start of the run is in place before any client's first acquire: the
// clients are held before acquiring until it is.
func TestNetworkFaultAtTheStartIsInPlaceBeforeTheFirstAcquire(t *testing.T) {
	env := netEnv(t, 1)
	sch, err := startSpecs(t, context.Background(), env, []Spec{{
		Kind: "net-reset", Duration: time.Hour, Target: "client:0->lock-0", Direction: "up",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sch.Stop()
	if err := env.Gates.Reach(context.Background(), 0, workload.BeforeAcquire); err != nil {
		t.Fatal(err)
	}
	if n := toxicsByLink(t, env.Cluster.Net)["client:0->lock-0"]; n != 1 {
		t.Fatalf("%d toxics when the client went on to its first acquire, want 1", n)
	}
}

func rdb(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// A link fault with until heals when that client reaches that point after the fault was
// put in place, its duration bounding it: a latency whose held replies are then let
// through at once. Kinds that cannot heal at once refuse until.
func TestLinkFaultHealsAtUntil(t *testing.T) {
	if _, err := New(Spec{Kind: "partition", Target: "redis-0", Until: "client:1@after-acquire"}); err == nil || !strings.Contains(err.Error(), "takes no until") {
		t.Errorf("partition with until: %v", err)
	}
	env := netEnv(t, 2)
	sch, err := startSpecs(t, context.Background(), env, []Spec{{
		Kind: "net-latency", Duration: time.Hour, Target: "client:0->store", Latency: time.Hour, Direction: "down",
		Trigger: "client:0@before-write", Until: "client:1@after-acquire",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sch.Stop()
	ctx := context.Background()
	// Client 1 acquired before the fault: that does not heal it.
	if err := env.Gates.Reach(ctx, 1, "after-acquire"); err != nil {
		t.Fatal(err)
	}
	if err := env.Gates.Reach(ctx, 0, "before-write"); err != nil {
		t.Fatal(err)
	}
	ep, err := env.Cluster.Endpoints(0)
	if err != nil {
		t.Fatal(err)
	}
	c := rdb(t, ep.Store)
	answered := make(chan error, 1)
	go func() { answered <- c.Ping(ctx).Err() }()
	select {
	case err := <-answered:
		t.Fatalf("the reply came through the latency (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if n := toxicsByLink(t, env.Cluster.Net)["client:0->store"]; n != 1 {
		t.Fatalf("%d toxics after a grant that came before the fault, want 1", n)
	}
	if err := env.Gates.Reach(ctx, 1, "after-acquire"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the held reply: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reply was still held after client 1 acquired")
	}
	waitFor(t, func() bool { return toxicsByLink(t, env.Cluster.Net)["client:0->store"] == 0 })
}
