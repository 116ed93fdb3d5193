package cluster

import (
	"fmt"
	"strconv"

	"github.com/locklab/locklab/cluster/access"
)

// Endpoints are how one client reaches the servers of a cluster. With network faults the
// addresses are the client's own links (proxies), so a fault can hit one client's link.
type Endpoints struct {
	Lock      []string // lock servers, in order
	Store     string   // the protected store
	Sentinels []string // replicated topology: Sentinel addresses for go-redis's failover client
	Master    string   // replicated topology: the master name the Sentinels monitor
	// Cluster: the servers are a Redis Cluster, Lock its nodes, which a cluster client
	// takes as its seeds.
	Cluster bool
	// Via maps a data node's peer address (PeerAddr), which is what Sentinel tells
	// clients, to the address this client dials instead (its link to that node, or its
	// own address); empty when clients can dial what Sentinel names.
	Via map[string]string
	// Access is how to use the server behind each address of Lock and Store that needs
	// more than a plain connection (an external server's user, password, database, TLS);
	// an address not in it needs nothing. nil when none does.
	Access map[string]access.Access
}

// addAccess notes n's Access for addr, the address this client dials n by.
func (ep *Endpoints) addAccess(addr string, n Node) {
	if a := AccessOf(n); !a.IsZero() {
		if ep.Access == nil {
			ep.Access = map[string]access.Access{}
		}
		ep.Access[addr] = a
	}
}

// Endpoints returns the addresses client should use. With a Net they are the client's
// own links, "client:N->lock-i" and "client:N->store", created on first use (asking again
// returns the same ones); without one, the servers' own addresses.
func (c *Cluster) Endpoints(client int) (Endpoints, error) {
	if c.Net == nil {
		ep := Endpoints{Lock: c.LockAddrs(), Store: c.Store.Addr()}
		for _, n := range c.Nodes() {
			ep.addAccess(n.Addr(), n)
		}
		if err := c.sentinelEndpoints(client, &ep); err != nil {
			return Endpoints{}, err
		}
		return ep, nil
	}
	if client < 0 {
		return Endpoints{}, fmt.Errorf("endpoints of client %d: want a client number ≥ 0", client)
	}
	var ep Endpoints
	for _, n := range c.Lock {
		addr, err := c.Net.Link(ClientLink(client, n.Name()), n.Addr())
		if err != nil {
			return Endpoints{}, fmt.Errorf("endpoints of client %d: %w", client, err)
		}
		ep.Lock = append(ep.Lock, addr)
		ep.addAccess(addr, n)
	}
	addr, err := c.Net.Link(ClientLink(client, c.Store.Name()), c.Store.Addr())
	if err != nil {
		return Endpoints{}, fmt.Errorf("endpoints of client %d: %w", client, err)
	}
	ep.Store = addr
	ep.addAccess(addr, c.Store)
	if err := c.sentinelEndpoints(client, &ep); err != nil {
		return Endpoints{}, err
	}
	return ep, nil
}

// ClientLink is the name of client's link to the server named node: "client:0->lock-0".
func ClientLink(client int, node string) string {
	return "client:" + strconv.Itoa(client) + "->" + node
}

// ServerLink is the name of the link from server from to server to: "redis-0->redis-1".
func ServerLink(from, to string) string { return from + "->" + to }
