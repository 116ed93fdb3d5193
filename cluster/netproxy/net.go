package netproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// Net is the network between the parties of a run: an embedded Toxiproxy (no HTTP API,
// no process) whose proxies, called links, carry one party's traffic to one server.
// A link is named after its two ends, "client:0->lock-0", "client:1->store" or
// "redis-0->redis-1", so that a fault can disturb exactly one client's path to one
// server, in one direction, while every other path stays clean.
//
// Each link listens on its own free loopback port. Data flows through Toxiproxy's
// per-connection pipelines; toxics added to a link apply to its open connections and to
// those opened later.
type Net struct {
	server *toxiproxy.ApiServer

	mu      sync.Mutex
	links   map[string]*toxiproxy.Proxy
	patient map[string]*forwarder // by upstream: what patient links lead to (PatientLink)
	groups  map[string][]string   // name → link globs (Group)
	seq     int                   // numbers toxics, so that two faults on one link never clash by name
	closed  bool
}

// NewNet starts an empty network. Toxiproxy logs through zerolog: it gets a disabled
// logger and a private metrics registry, so that it writes nothing and registers
// nothing globally.
func NewNet() *Net {
	return &Net{
		server:  toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		links:   map[string]*toxiproxy.Proxy{},
		patient: map[string]*forwarder{},
		groups:  map[string][]string{},
	}
}

// Group names the links that match any of globs, so that a fault can name them as one:
// "peers->lock-0" for every link that carries a ZooKeeper member's traffic with its
// peers, which are a link per pair of members (etcd's is one link of that name). A
// group's name must not be a link's. A nil Net, which has no links, has no groups.
func (n *Net) Group(name string, globs ...string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.groups[name] = globs
}

// errNetClosed is what a closed Net answers.
var errNetClosed = errors.New("network closed")

// Link returns the address of link name, which forwards to upstream, creating it on a
// free loopback port the first time. Asking again for the same name and upstream returns
// the same address; asking for a name that already leads elsewhere is an error, since a
// name must say where its traffic goes.
func (n *Net) Link(name, upstream string) (listen string, err error) {
	if name == "" || strings.ContainsAny(name, `*?[]\/`) {
		return "", fmt.Errorf("link name %q: want a non-empty name without glob characters or slashes", name)
	}
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return "", fmt.Errorf("link %s: upstream %q: %w", name, upstream, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", fmt.Errorf("link %s: %w", name, errNetClosed)
	}
	if p, ok := n.links[name]; ok {
		if p.Upstream != upstream {
			return "", fmt.Errorf("link %s already leads to %s, not %s", name, p.Upstream, upstream)
		}
		return p.Listen, nil
	}
	p := toxiproxy.NewProxy(n.server, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("link %s to %s: %w", name, upstream, err)
	}
	n.links[name] = p
	return p.Listen, nil // the port the listener got
}

// Remove stops link name and forgets it, so that Link can make it again to another
// upstream (a server that had to move to another port). Removing no link is no error.
func (n *Net) Remove(name string) {
	n.mu.Lock()
	p, ok := n.links[name]
	delete(n.links, name)
	n.mu.Unlock()
	if ok {
		p.Toxics.ResetToxics(quiet(context.Background()))
		p.Stop()
	}
}

// Links lists every link's name, sorted.
func (n *Net) Links() []string { return n.Match("*") }

// Match lists the names of the links that match the glob pattern (path.Match syntax:
// "client:*->lock-0", "redis-0->*"), or belong to a group whose name it matches (Group),
// sorted, each once. A malformed pattern matches nothing.
func (n *Net) Match(pattern string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	globs := []string{pattern}
	for name, g := range n.groups {
		if ok, _ := path.Match(pattern, name); ok {
			globs = append(globs, g...)
		}
	}
	var names []string
	for name := range n.links {
		for _, glob := range globs {
			if ok, _ := path.Match(glob, name); ok {
				names = append(names, name)
				break
			}
		}
	}
	sort.Strings(names)
	return names
}

// Direction is one way of a link.
type Direction string

// Up is the traffic towards the server (commands); Down the traffic back (replies).
const (
	Up   Direction = "up"
	Down Direction = "down"
)

// stream is Toxiproxy's name for a direction.
func (d Direction) stream() (string, error) {
	switch d {
	case Up:
		return "upstream", nil
	case Down:
		return "downstream", nil
	}
	return "", fmt.Errorf("direction %q: want %q or %q", string(d), Up, Down)
}

// ToxicKind is what a toxic does to the data of its direction.
type ToxicKind string

// The toxics locklab uses.
const (
	// Latency holds each chunk of data for Latency ± Jitter (millisecond precision),
	// keeping their order, as a slow network does.
	Latency ToxicKind = "latency"
	// Blackhole drops all data silently and keeps the connection open: a partition.
	// Removing it closes every connection open through the link (Toxiproxy's timeout
	// toxic ends its streams on removal; the dropped bytes are gone anyway), so clients
	// reconnect after it heals.
	Blackhole ToxicKind = "blackhole"
	// Reset aborts a connection as soon as data flows in its direction (a TCP RST on
	// connections opened while it is in place, a close on older ones).
	Reset ToxicKind = "reset"
)

// Toxic is one disturbance of one direction of a link.
type Toxic struct {
	Kind      ToxicKind
	Direction Direction
	Latency   time.Duration // Latency kind only
	Jitter    time.Duration // Latency kind only: the delay is uniform in Latency ± Jitter
}

func (t Toxic) String() string {
	if t.Kind == Latency {
		return fmt.Sprintf("latency %s±%s %s", t.Latency, t.Jitter, t.Direction)
	}
	return fmt.Sprintf("%s %s", t.Kind, t.Direction)
}

// toxiproxyJSON is t as Toxiproxy's API reads it; its only typed entry point for a toxic
// is that JSON form.
func (t Toxic) toxiproxyJSON(name string) ([]byte, error) {
	stream, err := t.Direction.stream()
	if err != nil {
		return nil, err
	}
	var typ string
	var attrs map[string]int64
	switch t.Kind {
	case Latency:
		if t.Latency < time.Millisecond || t.Jitter < 0 || t.Jitter > t.Latency {
			return nil, fmt.Errorf("latency %s±%s: want at least 1ms, jitter between 0 and the latency", t.Latency, t.Jitter)
		}
		typ = "latency"
		attrs = map[string]int64{
			"latency": t.Latency.Round(time.Millisecond).Milliseconds(),
			"jitter":  t.Jitter.Round(time.Millisecond).Milliseconds(),
		}
	case Blackhole:
		typ, attrs = "timeout", map[string]int64{"timeout": 0} // 0: never close, drop forever
	case Reset:
		typ, attrs = "reset_peer", map[string]int64{"timeout": 0} // 0: reset at once
	default:
		return nil, fmt.Errorf("unknown toxic kind %q (want %s, %s or %s)", string(t.Kind), Latency, Blackhole, Reset)
	}
	if t.Kind != Latency && (t.Latency != 0 || t.Jitter != 0) {
		return nil, fmt.Errorf("%s takes no latency", t.Kind)
	}
	return json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
}

// AddToxic puts t on link and returns the name it gave the toxic, unique on the link,
// for RemoveToxic.
func (n *Net) AddToxic(link string, t Toxic) (name string, err error) {
	n.mu.Lock()
	p, err := n.proxy(link)
	n.seq++
	name = fmt.Sprintf("%s-%s-%d", t.Kind, t.Direction, n.seq)
	n.mu.Unlock()
	if err != nil {
		return "", err
	}
	data, err := t.toxiproxyJSON(name)
	if err != nil {
		return "", fmt.Errorf("toxic on link %s: %w", link, err)
	}
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(string(data))); err != nil {
		return "", fmt.Errorf("add %s to link %s: %w", t, link, err)
	}
	return name, nil
}

// RemoveToxic takes the toxic named name off link. A toxic that is not there (removed
// already) is no error, so that healing twice is harmless.
func (n *Net) RemoveToxic(link, name string) error {
	n.mu.Lock()
	p, err := n.proxy(link)
	n.mu.Unlock()
	if errors.Is(err, errNetClosed) {
		return nil // Close removed every toxic
	}
	if err != nil {
		return err
	}
	err = p.Toxics.RemoveToxic(quiet(context.Background()), name)
	if err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
		return fmt.Errorf("remove toxic %s from link %s: %w", name, link, err)
	}
	return nil
}

// Toxics lists the names of the toxics on link, sorted.
func (n *Net) Toxics(link string) ([]string, error) {
	n.mu.Lock()
	p, err := n.proxy(link)
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range p.Toxics.GetToxicArray() {
		if w, ok := t.(*toxics.ToxicWrapper); ok {
			names = append(names, w.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// proxy is link's proxy; n.mu must be held.
func (n *Net) proxy(link string) (*toxiproxy.Proxy, error) {
	if n.closed {
		return nil, fmt.Errorf("link %s: %w", link, errNetClosed)
	}
	p, ok := n.links[link]
	if !ok {
		return nil, fmt.Errorf("no link %s", link)
	}
	return p, nil
}

// Close removes every toxic, which lets held data through and ends the toxics'
// goroutines, then stops every link: its listener and connections close, and so do the
// patient links' forwarders. It is idempotent.
func (n *Net) Close() error {
	n.mu.Lock()
	links, patient := n.links, n.patient
	n.links, n.patient, n.closed = map[string]*toxiproxy.Proxy{}, map[string]*forwarder{}, true
	n.mu.Unlock()
	ctx := quiet(context.Background())
	for _, p := range links {
		p.Toxics.ResetToxics(ctx)
		p.Stop()
	}
	var errs []error
	for upstream, f := range patient {
		if err := f.close(); err != nil {
			errs = append(errs, fmt.Errorf("close the forwarder to %s: %w", upstream, err))
		}
	}
	return errors.Join(errs...)
}

// quiet gives ctx a logger that discards, because Toxiproxy logs toxic removal through
// the context's logger and would otherwise fall back to zerolog's global default. (A
// disabled logger is not stored in a context by zerolog, hence a discarding one.)
func quiet(ctx context.Context) context.Context {
	return zerolog.New(io.Discard).WithContext(ctx)
}
