// Package network is the fault families that act on the network: toxics on the links
// between clients and servers and between servers (an embedded Toxiproxy, Cluster.Net),
// and partitions that cut servers off from each other (the docker backend). The faults
// package schedules them like every other fault; they act on the Scene it gives them.
package network

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/faults/spec"
	"github.com/locklab/locklab/histories"
)

// Scene is what a network fault acts on: the run's servers and links, its recorder (nil
// in tests), how many clients it has, and the first lock key as the servers see it (a
// partition on a Redis Cluster splits the primary of its slot).
type Scene struct {
	Cluster *cluster.Cluster
	Rec     *histories.Recorder
	Clients int
	LockKey string
}

// Fault is one network fault, built from its spec by its Kind. Heal must be safe to call
// more than once and after a failed Inject. Every one records its own window.
type Fault interface {
	Available(sc Scene) error
	Inject(ctx context.Context, sc Scene) error
	Heal(ctx context.Context, sc Scene) error
}

// Kind is one network fault kind, for `locklab list` and for building its faults.
type Kind struct {
	Name        string
	Description string
	Targets     string // what Target may name
	Build       func(spec.Spec) (Fault, error)
	// AtOnce: Inject puts the fault in place at once (a toxic), so one due at the start of
	// the run can hold the clients before their first acquire until it is in place.
	AtOnce bool
}

// Kinds are the network fault kinds: the links' and the partitions'.
func Kinds() []Kind { return append(linkKinds(), partitionKinds()...) }

// linkKinds are the faults on links: toxics on the cluster's links (Cluster.Net, a
// netproxy.Net: an embedded Toxiproxy). A link is named after its ends, "client:N->NODE"
// or "NODE->NODE", and Target is a glob over those names, so one fault can hit one link
// or a set.
func linkKinds() []Kind {
	const linkTargets = "link glob, e.g. client:0->store, client:*->lock-0, redis-0->*"
	return []Kind{
		{
			Name:        "net-latency",
			Description: "data on the target links is held for latency ± jitter (ms precision, order kept), in direction up (commands), down (replies) or both (default)",
			Targets:     linkTargets,
			Build:       buildNet(netproxy.Latency),
			AtOnce:      true,
		},
		{
			Name:        "net-blackhole",
			Description: "a partition: data on the target links is silently dropped in the direction asked (default both); commands time out. Healing closes the connections open through the links (the dropped data is gone), so clients reconnect",
			Targets:     linkTargets,
			Build:       buildNet(netproxy.Blackhole),
			AtOnce:      true,
		},
		{
			Name:        "net-reset",
			Description: "connections on the target links are aborted as soon as data flows in the direction asked (default both), including new ones, until healed",
			Targets:     linkTargets,
			Build:       buildNet(netproxy.Reset),
			AtOnce:      true,
		},
		{
			Name:        "reply-delay",
			Description: "replies from the lock servers reach the target client latency ± jitter late (the grant arrives late): a proxy-level delay on the down direction of the client's links to every lock server; the server has already acted",
			Targets:     "client:N or any",
			Build:       buildReplyDelay,
			AtOnce:      true,
		},
	}
}

// netFault is every network kind: toxics of one kind on the links its target resolves to,
// in its directions. It records its own fault window, because only at injection does it
// know the links, and a report must say exactly which links and directions were hit.
type netFault struct {
	spec  spec.Spec
	toxic netproxy.Toxic // Direction filled per direction
	dirs  []netproxy.Direction
	links func(sc Scene) ([]string, error) // the links the target names in env

	mu     sync.Mutex
	added  []placed // what Inject put in place, for Heal to take off
	window int      // the recorder's window index, -1 when none is open
}

// placed is one toxic on one link.
type placed struct{ link, name string }

// buildNet builds net-latency, net-blackhole and net-reset.
func buildNet(kind netproxy.ToxicKind) func(spec.Spec) (Fault, error) {
	return func(s spec.Spec) (Fault, error) {
		f, err := newNetFault(s, kind)
		if err != nil {
			return nil, err
		}
		if s.Target == "" {
			return nil, fmt.Errorf("fault %s needs a target link glob (e.g. client:0->store)", s.Kind)
		}
		if _, err := path.Match(s.Target, ""); err != nil {
			return nil, fmt.Errorf("fault %s: target %q: %w", s.Kind, s.Target, err)
		}
		f.dirs, err = directions(s.Direction)
		if err != nil {
			return nil, fmt.Errorf("fault %s: %w", s.Kind, err)
		}
		f.links = func(sc Scene) ([]string, error) { return matchLinks(sc, s.Target) }
		return f, nil
	}
}

// buildReplyDelay builds reply-delay: latency on the down direction of the target
// client's links to the lock servers (not the store), i.e. between the server answering
// and the client reading the answer.
func buildReplyDelay(s spec.Spec) (Fault, error) {
	f, err := newNetFault(s, netproxy.Latency)
	if err != nil {
		return nil, err
	}
	if s.Direction != "" && s.Direction != string(netproxy.Down) {
		return nil, fmt.Errorf("fault %s delays replies only: direction %q, want none or down", s.Kind, s.Direction)
	}
	if _, err := spec.ClientTarget(s.Target, math.MaxInt); err != nil {
		return nil, fmt.Errorf("fault %s: %w", s.Kind, err)
	}
	f.dirs = []netproxy.Direction{netproxy.Down}
	f.links = func(sc Scene) ([]string, error) { return lockLinks(sc, s.Target) }
	return f, nil
}

// newNetFault checks the fields every network kind shares.
func newNetFault(s spec.Spec, kind netproxy.ToxicKind) (*netFault, error) {
	switch {
	case s.Duration <= 0:
		return nil, fmt.Errorf("fault %s needs a duration: it lasts until healed", s.Kind)
	case s.Offset != 0 || s.Rate != 0 || s.Mode != "":
		return nil, fmt.Errorf("fault %s takes no offset, rate or mode", s.Kind)
	case kind == netproxy.Latency && s.Latency < time.Millisecond:
		return nil, fmt.Errorf("fault %s needs a latency of at least 1ms, got %s", s.Kind, s.Latency)
	case kind == netproxy.Latency && (s.Jitter < 0 || s.Jitter > s.Latency):
		return nil, fmt.Errorf("fault %s: jitter %s must be between 0 and the latency %s", s.Kind, s.Jitter, s.Latency)
	case kind != netproxy.Latency && (s.Latency != 0 || s.Jitter != 0):
		return nil, fmt.Errorf("fault %s takes no latency or jitter", s.Kind)
	}
	return &netFault{spec: s, toxic: netproxy.Toxic{Kind: kind, Latency: s.Latency, Jitter: s.Jitter}, window: -1}, nil
}

// directions reads Direction: "up", "down", or "both" (also the default).
func directions(d string) ([]netproxy.Direction, error) {
	switch d {
	case "", "both":
		return []netproxy.Direction{netproxy.Up, netproxy.Down}, nil
	case string(netproxy.Up):
		return []netproxy.Direction{netproxy.Up}, nil
	case string(netproxy.Down):
		return []netproxy.Direction{netproxy.Down}, nil
	}
	return nil, fmt.Errorf("direction %q: want up (towards the server), down (replies) or both", d)
}

// network is env's Net, or why there is none.
func network(sc Scene) (*netproxy.Net, error) {
	if sc.Cluster == nil {
		return nil, fmt.Errorf("network faults: %w", spec.ErrNeedsCluster)
	}
	if sc.Cluster.Net == nil {
		return nil, errors.New("network faults: this cluster has no links (cluster.Net is nil)")
	}
	// The clients' links are made on demand by Endpoints (idempotent). Making them here
	// lets a target be checked against every link of the run, whenever the run asks for
	// its clients' endpoints.
	for c := range sc.Clients {
		if _, err := sc.Cluster.Endpoints(c); err != nil {
			return nil, fmt.Errorf("network faults: %w", err)
		}
	}
	return sc.Cluster.Net, nil
}

// matchLinks resolves a link glob; matching nothing is an error that lists the links.
func matchLinks(sc Scene, target string) ([]string, error) {
	n, err := network(sc)
	if err != nil {
		return nil, err
	}
	links := n.Match(target)
	if len(links) == 0 {
		return nil, fmt.Errorf("target %q matches no link (links: %s)", target, orNone(n.Links()))
	}
	return links, nil
}

// lockLinks are the links from the target client (or every client, for "any") to each
// lock server.
func lockLinks(sc Scene, target string) ([]string, error) {
	client, err := spec.ClientTarget(target, sc.Clients) // checkable before servers start
	if err != nil {
		return nil, err
	}
	n, err := network(sc)
	if err != nil {
		return nil, err
	}
	clients := []int{client}
	if client == -1 {
		clients = clients[:0]
		for c := range sc.Clients {
			clients = append(clients, c)
		}
	}
	var links []string
	for _, c := range clients {
		for _, node := range sc.Cluster.Lock {
			links = append(links, cluster.ClientLink(c, node.Name()))
		}
	}
	if len(links) == 0 {
		return nil, fmt.Errorf("target %q names no client-to-lock link (links: %s)", target, orNone(n.Links()))
	}
	for _, l := range links {
		if len(n.Match(l)) != 1 { // link names hold no glob characters: a name matches itself
			return nil, fmt.Errorf("target %q: no link %s (links: %s)", target, l, orNone(n.Links()))
		}
	}
	return links, nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (f *netFault) Available(sc Scene) error {
	_, err := f.links(sc)
	return err
}

// Inject puts the fault's toxic on each of its links in each direction. It is all or
// nothing: when one toxic fails, those already placed are taken off again.
func (f *netFault) Inject(_ context.Context, sc Scene) error {
	links, err := f.links(sc)
	if err != nil {
		return err
	}
	n := sc.Cluster.Net
	f.mu.Lock()
	defer f.mu.Unlock()
	var added []placed
	for _, link := range links {
		for _, d := range f.dirs {
			t := f.toxic
			t.Direction = d
			name, err := n.AddToxic(link, t)
			if err != nil {
				_, rerr := removeAll(n, added)
				return errors.Join(err, rerr)
			}
			added = append(added, placed{link, name})
		}
	}
	f.added = append(f.added, added...)
	if sc.Rec != nil && f.window < 0 {
		f.window = sc.Rec.FaultStart(f.spec.Kind, f.spec.Target, f.detail(links))
	}
	return nil
}

// detail says exactly what was done, for reports: "latency 800ms±50ms up on client:0->store".
func (f *netFault) detail(links []string) string {
	what := string(f.toxic.Kind)
	if f.toxic.Kind == netproxy.Latency {
		what = fmt.Sprintf("latency %s±%s", f.toxic.Latency, f.toxic.Jitter)
	}
	dir := string(f.dirs[0])
	if len(f.dirs) == 2 {
		dir = "both ways"
	}
	d := fmt.Sprintf("%s %s on %s", what, dir, strings.Join(links, ", "))
	if f.spec.Kind == "reply-delay" {
		d = "reply delay (proxy-level): " + d
	}
	return d
}

// Heal takes off every toxic this fault put on, and only those. It is idempotent; a
// toxic it failed to take off is tried again by the next call.
func (f *netFault) Heal(_ context.Context, sc Scene) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var err error
	if len(f.added) > 0 {
		f.added, err = removeAll(sc.Cluster.Net, f.added)
	}
	if f.window >= 0 && sc.Rec != nil {
		sc.Rec.FaultEnd(f.window)
	}
	f.window = -1
	return err
}

// removeAll takes toxics off their links; it returns those it could not take off and
// every failure.
func removeAll(n *netproxy.Net, toxics []placed) (left []placed, err error) {
	var errs []error
	for _, p := range toxics {
		if err := n.RemoveToxic(p.link, p.name); err != nil {
			errs = append(errs, err)
			left = append(left, p)
		}
	}
	return left, errors.Join(errs...)
}
