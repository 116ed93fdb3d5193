// Package netproxy is the network between the parties of a run: an embedded Toxiproxy
// (Net) whose links carry one party's traffic to one server, and the toxics (Toxic:
// Latency, Blackhole, Reset, in Direction Up or Down) that network faults put on them. A
// patient link (PatientLink) waits a while for an upstream that does not listen yet.
//
// It owns the links and their toxics, nothing else: it knows no Redis, no topology and
// no fault schedule. Link names such as "client:0->lock-0" are chosen by its callers
// (cluster.ClientLink, cluster.ServerLink). It must not import cluster, faults or any
// other locklab package, so that every backend of cluster, and faults, can use it; only
// its tests start real servers, through cluster/clustertest.
package netproxy
