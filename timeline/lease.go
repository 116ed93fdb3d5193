package timeline

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/histories"
)

// leaseEvent is one thing that changes what a server holds, in time order.
type leaseEvent struct {
	at    int64
	order int // tie-break: the op's index in call order, faults after ops
	op    *histories.Op
	fault *histories.FaultWindow
}

// leasesOf computes every lease as the servers held it: from the grant (the acquire's
// Call) to Call+TTL by the server's clock; an extend ok sets the expiry to its Call+TTL;
// the holder's release ok ends it at its Return; a later grant of the key on the same
// server ends it there; a failover's kill ends the leases on the dead primary; a server
// clock jump of Offset at Start makes a live lease's expiry E into max(Start, E-Offset).
// It returns them with notes on what the history does not say.
func leasesOf(h histories.History, order []int, servers []serverLane, end int64) ([]lease, []string) {
	topo, _, _ := strings.Cut(h.Meta.Topology, ":")
	if topo == "" && len(servers) > 1 {
		topo = "unknown"
	}
	renews := h.Meta.Renews // its leases live on in the background, unrecorded
	index := func(name string) int {
		return slices.IndexFunc(servers, func(s serverLane) bool { return s.name == name })
	}
	var failovers, partitions []histories.FaultWindow
	evs := make([]leaseEvent, 0, len(order)) // at most one an operation, and the faults
	for n, i := range order {
		op := &h.Ops[i]
		at := op.Call
		if op.Kind == histories.Release {
			at = op.Return
		}
		if op.Outcome == histories.OK && (op.Kind == histories.Acquire || op.Kind == histories.Extend || op.Kind == histories.Release) ||
			op.Kind == histories.Crash || (op.Kind == histories.Release && renews) {
			evs = append(evs, leaseEvent{at: at, order: n, op: op})
		}
	}
	for i := range h.Faults {
		f := &h.Faults[i]
		if f.Kind == "failover" {
			failovers = append(failovers, *f)
		}
		if f.Kind == "partition" {
			partitions = append(partitions, *f)
		}
		if f.Kind == "failover" || (f.Kind == "server-clock" && f.Offset != 0) || (f.Kind == "server-crash" && forgets(h.Meta)) {
			evs = append(evs, leaseEvent{at: f.Start, order: len(order) + i, fault: f})
		}
	}
	slices.SortStableFunc(failovers, func(a, b histories.FaultWindow) int { return cmp.Compare(a.Start, b.Start) })
	slices.SortStableFunc(evs, func(a, b leaseEvent) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.order, b.order)) })

	var out []lease
	// current holds, per server and key, the lease granted last (an index into out): in
	// time order only it can still be live, so events look at it alone. An operation
	// looks up its own key on each server, a fault its server's keys: never every key.
	current := make([]map[string]int, len(servers))
	for s := range current {
		current[s] = map[string]int{}
	}
	onServer := func(s int, match func(*lease) bool, do func(*lease)) {
		if s < 0 {
			return
		}
		for _, i := range current[s] {
			if l := &out[i]; match(l) {
				do(l)
			}
		}
	}
	ofKey := func(key string, match func(*lease) bool, do func(*lease)) {
		for s := range current {
			if i, ok := current[s][key]; ok && match(&out[i]) {
				do(&out[i])
			}
		}
	}
	unrecorded, split := false, false
	// on returns the servers an acquire ok put its lease on, and whether that is known.
	on := func(op *histories.Op) ([]int, bool) {
		all := make([]int, len(servers))
		for i := range all {
			all[i] = i
		}
		switch topo {
		case "single":
			return []int{0}, true
		case "replicated":
			for _, f := range partitions {
				if f.Start <= op.Call && (f.End < 0 || op.Call < f.End) {
					// Both sides of a partition may have a primary: which one granted is
					// not recorded.
					split = true
					return all, false
				}
			}
			primary := 0
			for _, f := range failovers {
				if f.Start <= op.Call && index(f.Promoted) >= 0 {
					primary = index(f.Promoted)
				}
			}
			return []int{primary}, true
		case "nodes":
			var got []int
			for _, n := range op.Output.Nodes {
				if n >= 0 && n < len(servers) {
					got = append(got, n)
				}
			}
			if len(got) > 0 {
				return got, true
			}
			unrecorded = true
			return all, false
		case "etcd", "zookeeper", "unknown":
			return all, false
		}
		return []int{0}, true
	}
	ttl := func(op *histories.Op) int64 {
		return int64(cmp.Or(op.Output.Granted, op.Input.TTL, h.Meta.TTL, time.Second))
	}
	for _, e := range evs {
		if f := e.fault; f != nil {
			onServer(index(f.Target), func(l *lease) bool { return l.start <= f.Start && l.end() > f.Start }, func(l *lease) {
				switch {
				case f.Kind == "failover":
					l.cut, l.why = f.Start, "the primary was killed ("+f.Target+")"
				case f.Kind == "server-crash":
					l.cut, l.why = f.Start, "the server was killed and restarts empty (persistence none)"
				case l.renewed: // renewals on the server's own clock: the jump is caught up at the next
				default:
					l.expiry = max(f.Start, l.expiry-int64(f.Offset))
					l.why = fmt.Sprintf("expired by the server's clock after it jumped %s at %s", signed(f.Offset), secs(f.Start))
				}
			})
			continue
		}
		op := e.op
		mine := func(l *lease) bool {
			return l.process == op.Process && l.key == op.Key && l.cut == never && !l.superseded
		}
		switch op.Kind {
		case histories.Acquire:
			where, known := on(op)
			for _, s := range where {
				if i, ok := current[s][op.Key]; ok {
					l := &out[i]
					l.superseded = true // what later releases and extends refer to is the new one
					// Two grants to different clients, neither on a known server, may sit on
					// different servers (a partition's two primaries, a Redlock minority):
					// neither proves the other lease gone.
					if l.end() > op.Call && (known || !l.unsure || l.process == op.Process) {
						l.cut, l.why = op.Call, fmt.Sprintf("the server granted it to client %d at %s", op.Client, secs(op.Call))
					}
				}
				current[s][op.Key] = len(out)
				l := lease{server: s, process: op.Process, client: op.Client, key: op.Key, fence: op.Output.Fence,
					start: op.Call, expiry: op.Call + ttl(op), cut: never, why: "expired by the server's clock", unsure: !known}
				if renews {
					l.expiry, l.renewed, l.why = max(end, op.Return), true, "renewed until the end of the run"
				}
				out = append(out, l)
			}
		case histories.Extend:
			ofKey(op.Key, mine, func(l *lease) {
				if !l.renewed {
					l.expiry, l.why = op.Call+ttl(op), "expired by the server's clock after the last extend"
				}
			})
		case histories.Release:
			ofKey(op.Key, mine, func(l *lease) {
				if op.Outcome == histories.OK {
					// A checked release that succeeded proves the server still held the key.
					l.expiry, l.cut, l.why = max(l.expiry, op.Return), op.Return, "released at "+secs(op.Return)
				} else if l.renewed && op.Outcome == histories.Fail {
					l.expiry, l.why = min(l.expiry, op.Call), "lost before the release (renewed in the background, unrecorded)"
				} else if l.renewed {
					l.expiry, l.why = min(l.expiry, op.Call+ttl(op)), "release of unknown outcome: renewals presumably stopped"
				}
			})
		case histories.Crash:
			ofKey(op.Key, mine, func(l *lease) {
				if l.renewed {
					l.expiry, l.why = min(l.expiry, op.Call+ttl(op)), "the holder crashed: no more renewals"
				}
			})
		}
	}
	var notes []string
	if unrecorded {
		notes = append(notes, fmt.Sprintf("%s does not record which nodes granted a lease: drawn dashed on every node", cmp.Or(h.Meta.Impl, "the implementation")))
	}
	if split {
		notes = append(notes, "while servers were partitioned, either side's primary may have granted a lease (which one is not recorded): drawn dashed on every data node")
	}
	switch topo {
	case "etcd":
		notes = append(notes, "etcd: the cluster holds a lease by consensus, drawn dashed on every member")
	case "zookeeper":
		notes = append(notes, "ZooKeeper: the ensemble holds a lock znode by consensus, for as long as its session lives, drawn dashed on every member")
	}
	if renews {
		notes = append(notes, fmt.Sprintf("%s renews leases in the background (not recorded): a lease lasts until released, taken by another, or a TTL after a crash", h.Meta.Impl))
	}
	return out, notes
}

// forgets reports whether a killed lock server of the run comes back without its keys:
// Redis without persistence (the default) does; with an append-only file a process
// crash loses nothing acknowledged, and an etcd or ZooKeeper member keeps its log.
func forgets(m histories.Meta) bool {
	return (m.Persistence == "" || m.Persistence == "none") && !strings.HasPrefix(m.Topology, "etcd") && !strings.HasPrefix(m.Topology, "zookeeper")
}
