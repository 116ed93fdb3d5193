package cluster

// Endpoints are how one client reaches the servers of a cluster. With network faults the
// addresses are the client's own links (proxies), so a fault can hit one client's link.
type Endpoints struct {
	Lock      []string // lock servers, in order
	Store     string   // the protected store
	Sentinels []string // replicated topology: Sentinel addresses for go-redis's failover client
	Master    string   // replicated topology: the master name the Sentinels monitor
}

// Endpoints returns the addresses client should use.
func (c *Cluster) Endpoints(client int) (Endpoints, error) {
	return Endpoints{Lock: c.LockAddrs(), Store: c.Store.Addr()}, nil
}
