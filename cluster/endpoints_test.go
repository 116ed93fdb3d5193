package cluster_test

import (
	"context"
	"slices"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
)

func TestEndpointsAreEachClientsOwnLinksToTheRightServer(t *testing.T) {
	c := clustertest.Start(t, cluster.Topology{Kind: cluster.Nodes, Nodes: 2})
	ctx := context.Background()
	// Each server knows its own name, so a reply says which server answered.
	for _, n := range c.Nodes() {
		if err := clustertest.Client(t, n.Addr()).Set(ctx, "whoami", n.Name(), 0).Err(); err != nil {
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
			if got, err := clustertest.Client(t, addr).Get(ctx, "whoami").Result(); err != nil || got != names[i] {
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
