package campaign

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"
)

// DefaultMaxFaults is how many faults a generated plan has at most unless a Space says.
const DefaultMaxFaults = 4

// maxRun bounds how far a generated run is lengthened for its faults.
const maxRun = 6 * time.Second

// Run lengths are drawn for the drawn TTLs, whose mean is meanTTL (1–3 s: about two to
// five of them). A TTL the space fixes scales the run by TTL ÷ meanTTL, so that a
// campaign at --ttl draws the same runs counted in TTLs, as it draws the work and the
// faults' times and lengths: a 100 ms lease's runs last 0.3–0.5 s (the floor, minRun,
// leaves the clients a few hundred operations whatever the TTL), a 3 s lease's 5–15 s.
const (
	meanTTL = 600 * time.Millisecond
	minRun  = 300 * time.Millisecond
)

// scaleRun is the length drawn for the drawn TTLs, at the TTL the space fixes.
func scaleRun(run, ttl time.Duration) time.Duration {
	return max(minRun, (run * ttl / meanTTL).Round(10*time.Millisecond))
}

// NoFaults in Space.Faults (the CLI's --faults none) asks for fault-free plans.
const NoFaults = "none"

// Space is what a campaign may draw: which implementations, fault kinds and fencing modes,
// and how many faults per plan. Empty lists mean everything the registry and the faults
// package offer. A Space restricts what is drawn, never when or where a fault strikes:
// times, points and targets are always left to the generator.
type Space struct {
	Impls    []string `json:"impls,omitempty"`
	Faults   []string `json:"faults,omitempty"`   // fault kinds; ["none"]: no faults at all
	Fencings []string `json:"fencings,omitempty"` // off, writes, full
	// MaxFaults bounds the faults of a plan: 0 means DefaultMaxFaults, negative none.
	MaxFaults int `json:"max_faults,omitempty"`
	// MinFaults is 0 or 1: with 1 every plan has a fault (class searches, so that a
	// violation is the fault's doing).
	MinFaults int `json:"min_faults,omitempty"`
	// Calm keeps the critical section well inside the lease (Calm reports the rule), so that
	// a violation cannot come from the workload alone.
	Calm    bool   `json:"calm,omitempty"`
	Careful bool   `json:"careful,omitempty"` // only careful clients: rules that claim nothing for careless ones measured
	Backend string `json:"backend,omitempty"` // every plan's (plan.Plan.Backend); docker adds partitions
	// Topologies are the topology kinds drawn (cluster.Single, …, cluster.RedisCluster);
	// none: every one an implementation runs on.
	Topologies []string `json:"topologies,omitempty"`
	// TTL, when set, is every plan's TTL instead of one drawn from 200 ms to 1 s; what the
	// generator derives from the TTL (work, fault times and lengths, clock jumps) follows it.
	TTL plan.Duration `json:"ttl,omitzero"`
	// Wait: every lock WAITs for one replica after each grant (plan.Plan.WaitReplicas), on
	// primaries with two replicas, and every failover cuts one replica only (faults'
	// cut one): what WAIT does not save. Locks that cannot WAIT are left out.
	Wait bool `json:"wait,omitempty"`
	// Extend are the probabilities that a critical section extends its lease
	// (plan.Plan.Extend) the generator draws from; none: 0, 0.5 and 1.
	Extend []float64 `json:"extend,omitempty"`
}

// minCalmTTL is the shortest TTL a calm plan can have: work up to a quarter of it must
// leave the 150 ms of lease that plan.Plan.Calm asks for.
const minCalmTTL = 200 * time.Millisecond

// topologyKinds are the topology kinds a space may draw, in the order a shrink prefers.
func topologyKinds() []string {
	return []string{cluster.Single, cluster.Replicated, cluster.Nodes, cluster.Etcd, cluster.RedisCluster, cluster.ZooKeeper}
}

// fencingModes are the store's fencing modes, in the order a shrink prefers (off first).
func fencingModes() []string {
	return []string{string(workload.FencingOff), string(workload.FencingWrites), string(workload.FencingFull)}
}

// topology kinds an implementation may be drawn on.
type topoChoice struct {
	kind  string   // one of topologyKinds
	kinds []string // fault kinds of the space available on it
}

// implSpace is one implementation of a resolved space.
type implSpace struct {
	impl     lockimpl.Impl
	fencings []string
	topos    []topoChoice
}

// space is a Space checked against a registry.
type space struct {
	backend   string
	impls     []implSpace
	minFaults int
	maxFaults int
	calm      bool
	careful   bool
	wait      bool
	ttl       time.Duration // 0: drawn
	extend    []float64
}

// resolve checks every name of s and works out, per implementation, the fencing modes and
// topologies it can be drawn with. Implementations the space leaves nothing for (no fencing
// mode it supports, no fault kind on its topologies when every plan needs one) are left
// out; when none is left that is an error that says why.
func (s Space) resolve(reg *lockimpl.Registry) (space, error) {
	if reg == nil {
		reg = locks.All()
	}
	out := space{backend: s.Backend, minFaults: s.MinFaults, maxFaults: s.MaxFaults, calm: s.Calm, careful: s.Careful, wait: s.Wait, ttl: s.TTL.D(), extend: s.Extend}
	if err := plan.CheckBackend(s.Backend); err != nil {
		return space{}, err
	}
	for _, x := range s.Extend {
		if x < 0 || x > 1 || x != x {
			return space{}, fmt.Errorf("extend %g: want a probability from 0 to 1", x)
		}
	}
	if len(out.extend) == 0 {
		out.extend = []float64{0, 0.5, 1}
	}
	if err := s.CheckTTL(); err != nil {
		return space{}, err
	}
	if out.maxFaults == 0 {
		out.maxFaults = DefaultMaxFaults
	}
	if out.minFaults < 0 || out.minFaults > 1 {
		return space{}, fmt.Errorf("min faults: want 0 or 1, got %d", s.MinFaults)
	}

	gens := faultGens()
	var kinds []string
	switch {
	case len(s.Faults) == 1 && s.Faults[0] == NoFaults:
		out.maxFaults = -1
	case len(s.Faults) == 0:
		for _, k := range faults.Kinds() {
			if faults.OnBackend(k.Name, s.Backend) == nil {
				kinds = append(kinds, k.Name)
			}
		}
	default:
		known := kindNames()
		for _, k := range s.Faults {
			if k == NoFaults {
				return space{}, fmt.Errorf("fault kind %q cannot be combined with other kinds", NoFaults)
			}
			if !slices.Contains(known, k) {
				return space{}, fmt.Errorf("unknown fault kind %q (known: %s, or %s)", k, strings.Join(known, ", "), NoFaults)
			}
			if err := faults.OnBackend(k, s.Backend); err != nil {
				return space{}, err
			}
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	for _, k := range kinds {
		if _, ok := gens[k]; !ok {
			return space{}, fmt.Errorf("fault kind %q has no plan generator in campaign/generate.go", k)
		}
	}
	if out.maxFaults < 0 {
		kinds = nil
		if out.minFaults > 0 {
			return space{}, fmt.Errorf("every plan needs a fault, but the space has no fault kinds")
		}
	}

	for _, f := range s.Fencings {
		if !slices.Contains(fencingModes(), f) {
			return space{}, fmt.Errorf("unknown fencing mode %q (known: %s)", f, strings.Join(fencingModes(), ", "))
		}
	}
	for _, k := range s.Topologies {
		if !slices.Contains(topologyKinds(), k) {
			return space{}, fmt.Errorf("unknown topology %q (known: %s)", k, strings.Join(topologyKinds(), ", "))
		}
	}

	impls := s.Impls
	if len(impls) == 0 {
		for _, i := range reg.List() {
			impls = append(impls, i.Name)
		}
	}
	var why []string
	for _, name := range impls {
		impl, err := reg.Get(name)
		if err != nil {
			return space{}, err
		}
		if s.Wait && (!impl.Waits || impl.Process) {
			why = append(why, fmt.Sprintf("%s cannot WAIT for replicas", name))
			continue
		}
		is := implSpace{impl: impl}
		for _, f := range fencingModes() {
			if (len(s.Fencings) == 0 || slices.Contains(s.Fencings, f)) && (f == string(workload.FencingOff) || impl.Fencing) {
				is.fencings = append(is.fencings, f)
			}
		}
		if len(is.fencings) == 0 {
			why = append(why, fmt.Sprintf("%s grants no fencing tokens, so fencing %s is impossible", name, strings.Join(s.Fencings, ",")))
			continue
		}
		for _, topo := range topologyKinds() {
			if !impl.RunsOn(topo) || (cluster.Consensus(topo) && s.Backend == plan.BackendDocker) || (s.Wait && topo != cluster.Replicated && topo != cluster.RedisCluster) ||
				(len(s.Topologies) > 0 && !slices.Contains(s.Topologies, topo)) {
				continue // etcd and ZooKeeper members run as local processes only
			}
			tc := topoChoice{kind: topo}
			for _, k := range kinds {
				if faults.OnTopology(k, cluster.Topology{Kind: topo}) != nil {
					continue
				}
				if need := gens[k].needs; len(need) == 0 || slices.Contains(need, topo) {
					tc.kinds = append(tc.kinds, k)
				}
			}
			if out.minFaults > 0 && len(tc.kinds) == 0 {
				continue
			}
			is.topos = append(is.topos, tc)
		}
		if len(is.topos) == 0 {
			if !slices.ContainsFunc(s.Topologies, impl.RunsOn) && len(s.Topologies) > 0 {
				why = append(why, fmt.Sprintf("%s runs on none of the topologies %s", name, strings.Join(s.Topologies, ",")))
			} else {
				why = append(why, fmt.Sprintf("%s runs on no topology where fault kinds %s exist", name, strings.Join(kinds, ",")))
			}
			continue
		}
		if !slices.ContainsFunc(out.impls, func(o implSpace) bool { return o.impl.Name == name }) {
			out.impls = append(out.impls, is)
		}
	}
	if len(out.impls) == 0 {
		return space{}, fmt.Errorf("the space holds no plan: %s", strings.Join(why, "; "))
	}
	return out, nil
}

// CheckTTL refuses a fixed TTL that no plan can have: Redis takes whole milliseconds, and
// a calm workload needs a lease long enough to stay well inside.
func (s Space) CheckTTL() error {
	ttl := s.TTL.D()
	switch {
	case ttl == 0:
		return nil
	case ttl < time.Millisecond || ttl%time.Millisecond != 0:
		return fmt.Errorf("ttl %s: want whole milliseconds, at least 1ms", ttl)
	case s.Calm && ttl < minCalmTTL:
		return fmt.Errorf("ttl %s: calm workloads need a ttl of at least %s (work up to a quarter of it, 150ms of lease left)", ttl, minCalmTTL)
	}
	return nil
}

// kindNames are the fault kinds of the faults package.
func kindNames() []string {
	var names []string
	for _, k := range faults.Kinds() {
		names = append(names, k.Name)
	}
	return names
}

// PlanGen is rapid's generator of plans of the space: implementation, topology, fencing,
// 2–8 clients, 1–3 keys, a TTL of 200 ms to 1 s (or the space's), work as a fraction of
// the TTL (mostly small, sometimes longer than the lease), think and retry times, extend
// probability, careless clients (unless the space is Careful), a run of 1–3 s (longer,
// up to 6 s, when its faults need it), and up to MaxFaults faults of the kinds available
// on the topology, timed relative to the TTL or triggered at a client point or lock step.
// Every value it draws shrinks towards the simplest plan: fewer faults, fewer clients,
// shorter times, the first choice of each list. Every plan it draws passes Validate.
func PlanGen(reg *lockimpl.Registry, s Space) (*rapid.Generator[plan.Plan], error) {
	sp, err := s.resolve(reg)
	if err != nil {
		return nil, err
	}
	return rapid.Custom(func(t *rapid.T) plan.Plan { return sp.draw(t) }), nil
}

func (sp space) draw(t *rapid.T) plan.Plan {
	p := plan.Default()
	p.Backend = sp.backend
	is := rapid.SampledFrom(sp.impls).Draw(t, "impl")
	impl := is.impl
	p.Impl = impl.Name

	// Topology: the first of the impl's choices (single, for single-instance locks)
	// unless the draw says otherwise; a replicated topology is heavier, so it is drawn
	// for one plan in four unless it is the only one with the space's fault kinds.
	tc := is.topos[0]
	if len(is.topos) > 1 && rapid.IntRange(0, 3).Draw(t, "other_topology") == 3 {
		tc = rapid.SampledFrom(is.topos[1:]).Draw(t, "topology")
	}
	topo := cluster.Topology{Kind: tc.kind, Nodes: 1}
	switch tc.kind {
	case cluster.Nodes:
		topo.Nodes = rapid.IntRange(3, 5).Draw(t, "nodes")
	case cluster.Replicated:
		topo.Nodes = 3
	case cluster.Etcd, cluster.ZooKeeper:
		topo.Nodes = rapid.SampledFrom([]int{1, 3}).Draw(t, "members")
	case cluster.RedisCluster:
		topo.Nodes, topo.Replicas = 6, 1 // three primaries, a replica each
	}
	if sp.wait { // a replica to lag, one to acknowledge (replicated has two already)
		p.WaitReplicas = 1
		if tc.kind == cluster.RedisCluster {
			topo.Nodes, topo.Replicas = 9, 2
		}
	}
	p.Topology = topo.String()
	p.Fencing = rapid.SampledFrom(is.fencings).Draw(t, "fencing")

	p.Clients = rapid.IntRange(2, 8).Draw(t, "clients")
	p.Keys = rapid.IntRange(1, 3).Draw(t, "keys")
	ttl := sp.ttl
	if ttl == 0 {
		ttl = 200*time.Millisecond + 50*time.Millisecond*time.Duration(rapid.IntRange(0, 16).Draw(t, "ttl_50ms"))
	}
	p.TTL = plan.D(ttl)
	run := time.Second + 100*time.Millisecond*time.Duration(rapid.IntRange(0, 20).Draw(t, "duration_100ms"))
	runCap := maxRun
	if sp.ttl != 0 {
		run, runCap = scaleRun(run, ttl), max(maxRun, scaleRun(maxRun, ttl))
	}
	p.Work = plan.D(drawWork(t, ttl, sp.calm))
	p.Retry = plan.D(time.Duration(rapid.IntRange(1, 20).Draw(t, "retry_ms")) * time.Millisecond)
	p.Think = plan.D(p.Retry.D() + time.Duration(rapid.IntRange(1, 30).Draw(t, "think_extra_ms"))*time.Millisecond)
	p.Timeout = plan.D(rapid.SampledFrom([]time.Duration{2 * time.Second, time.Second}).Draw(t, "timeout"))
	if p.WaitReplicas > 0 {
		p.WaitTimeout = plan.D(p.Timeout.D() / 2) // the WAIT times out before its command
	}
	p.Careless = !sp.careful && rapid.Bool().Draw(t, "careless") // Careful: no draw
	p.Extend = rapid.SampledFrom(sp.extend).Draw(t, "extend")
	p.ImplOptions = drawOptions(t, impl)

	if sp.maxFaults > 0 && len(tc.kinds) > 0 {
		env := faultEnv{impl: impl, topo: topo, clients: p.Clients, ttl: ttl, run: run, backend: sp.backend,
			points: p.Points(impl), reachable: p.Reachable(impl), wait: sp.wait}
		gens := faultGens()
		one := rapid.Custom(func(t *rapid.T) plan.FaultSpec {
			kind := rapid.SampledFrom(tc.kinds).Draw(t, "kind")
			return gens[kind].draw(t, env)
		})
		p.Faults = compatible(rapid.SliceOfN(one, sp.minFaults, sp.maxFaults).Draw(t, "faults"))
	}
	for _, f := range p.Faults {
		// The run goes on for two TTLs after each fault's (scheduled) end, so that its
		// effect meets other clients' critical sections rather than the end of the run.
		run = max(run, min(runCap, f.At.D()+f.Duration.D()+2*ttl), f.At.D()+promotion(f))
		if needsPersistence(p, topo, f) {
			p.Persistence = persistences().Draw(t, "persistence")
		}
		fakeClocks(&p, impl, f)
	}
	p.Duration = plan.D(run)
	p.Seed = planSeed(p)
	return p
}

// needsPersistence says whether fault f makes p draw its servers' persistence: a crash
// of a Redis lock server, when p leaves it unsaid.
func needsPersistence(p plan.Plan, topo cluster.Topology, f plan.FaultSpec) bool {
	return f.Kind == "server-crash" && f.Target != "store" && p.Persistence == "" && !cluster.Consensus(topo.Kind)
}

// persistences draws what a crashed server keeps.
func persistences() *rapid.Generator[string] {
	return rapid.SampledFrom([]string{string(cluster.PersistNone), string(cluster.PersistAOFEverysec), string(cluster.PersistAOFAlways)})
}

// promotion is how long a run must go on after a failover starts for the other clients
// to meet the new primary: Sentinel, or a cluster's vote, takes about two seconds to
// promote; 0 for other faults.
func promotion(f plan.FaultSpec) time.Duration {
	switch {
	case f.Kind != "failover":
		return 0
	case f.Mode == faults.FailoverSentinel || f.Mode == faults.FailoverCluster:
		return 3500 * time.Millisecond
	}
	return 2 * time.Second
}

// fakeClocks puts the servers, or a client process, under libfaketime when fault f moves
// their clock there.
func fakeClocks(p *plan.Plan, impl lockimpl.Impl, f plan.FaultSpec) {
	switch {
	case f.Kind == "server-clock" && f.Mode == faults.ClockModeFaketime:
		p.ServerClock = cluster.ClockFaketime
	case f.Kind == "client-clock" && impl.Process:
		// The client's own clock moves too, where libfaketime reaches it.
		p.ClientClock = cluster.ClockFaketime
	}
}

// drawOptions draws the implementation's options as its users might set them: half the
// plans keep every default (what a shrink goes back to), the others draw each option
// from its default and its Values, so that a setting that breaks a library is found like
// any fault.
func drawOptions(t *rapid.T, impl lockimpl.Impl) map[string]json.RawMessage {
	if len(impl.Options) == 0 || rapid.IntRange(0, 1).Draw(t, "impl_options") == 0 {
		return nil
	}
	var out map[string]json.RawMessage
	for _, o := range impl.Options {
		k := rapid.IntRange(0, len(o.Values)).Draw(t, "option_"+o.Name)
		if k == 0 || o.Values[k-1] == o.Default {
			continue
		}
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		out[o.Name] = o.JSON(o.Values[k-1])
	}
	return out
}

// drawWork is the critical section's length as a fraction of the TTL: half the plans
// under a tenth, some up to a quarter; outside a calm space also up to half the lease, up
// to the whole lease, and one plan in ten longer than the lease, up to three times it
// (a TTL too short for the work, which an extension halfway through cannot save beyond
// twice the TTL).
func drawWork(t *rapid.T, ttl time.Duration, calm bool) time.Duration {
	var band int
	if calm {
		band = []int{0, 0, 0, 1}[rapid.IntRange(0, 3).Draw(t, "work_band")]
	} else {
		band = []int{0, 0, 0, 0, 0, 1, 1, 2, 3, 4}[rapid.IntRange(0, 9).Draw(t, "work_band")]
	}
	lo, hi := []int{0, 10, 25, 50, 100}[band], []int{10, 25, 50, 100, 300}[band] // percent of the TTL
	pct := rapid.IntRange(lo, hi).Draw(t, "work_pct")
	return (ttl * time.Duration(pct) / 100).Truncate(time.Millisecond)
}

// compatible drops the faults of a drawn schedule that would fight over the same server:
// a second failover, a second server fault on one server, and server pauses and crashes of
// lock servers next to a failover (which kills and promotes them itself). The first fault
// is always kept.
func compatible(fs []plan.FaultSpec) []plan.FaultSpec {
	var out []plan.FaultSpec
	failover := false
	servers := map[string]bool{}
	for _, f := range fs {
		server := f.Kind == "server-pause" || f.Kind == "server-crash" || f.Kind == "server-clock"
		switch {
		case f.Kind == "failover" && failover:
			continue
		case f.Kind == "failover" && slices.ContainsFunc(out, func(o plan.FaultSpec) bool {
			return (o.Kind == "server-pause" || o.Kind == "server-crash") && o.Target != "store"
		}):
			continue
		case server && servers[f.Target]:
			continue
		case server && failover && f.Kind != "server-clock" && f.Target != "store":
			continue
		}
		failover = failover || f.Kind == "failover"
		if server {
			servers[f.Target] = true
		}
		out = append(out, f)
	}
	return out
}

// planSeed derives the plan's seed from everything else in it. The seed only sets the
// clients' jitter, so it is not drawn: rapid's shrinker would spend real runs minimising
// a number that makes no plan simpler.
func planSeed(p plan.Plan) int64 {
	p.Seed, p.Name, p.Description = 0, "", ""
	h := fnv.New64a()
	_, _ = h.Write(p.MarshalIndent()) // a hash never fails
	s := int64(h.Sum64() >> 2)
	if s == 0 {
		s = 1
	}
	return s
}

// faultEnv is what a fault generator needs to know of the plan drawn so far.
type faultEnv struct {
	impl    lockimpl.Impl
	topo    cluster.Topology
	clients int
	ttl     time.Duration
	run     time.Duration
	points  []string // the client's points and the implementation's steps
	// reachable are the points a pause may wait for another client at: points and the
	// harness's after-release (plan.Plan.Reachable).
	reachable []string
	backend   string
	wait      bool // failovers cut one replica (Space.Wait)
	timed     bool // every fault starts at a time, none at a client's point (Schedule)
}

// faultGen draws one fault of a kind.
type faultGen struct {
	needs []string // topology kinds the kind needs; nil for any
	draw  func(*rapid.T, faultEnv) plan.FaultSpec
}

// faultGens are the generators of every fault kind, by kind. A kind the faults package
// adds without a generator here is refused by Space.resolve and fails the coverage test.
func faultGens() map[string]faultGen {
	pause := func(kind string, crash bool) faultGen {
		return faultGen{draw: func(t *rapid.T, e faultEnv) plan.FaultSpec {
			f := plan.FaultSpec{Kind: kind, Target: e.clientTarget(t), Point: rapid.SampledFrom(e.points).Draw(t, "point")}
			// Armed in the first half of the run; it strikes when the client next
			// reaches the point.
			f.At = plan.D(e.run * time.Duration(rapid.IntRange(0, 9).Draw(t, "at_20th")) / 20)
			if !crash {
				f.Duration = plan.D(e.ttlQuarters(t, 1, 12))
				e.until(t, &f)
				if e.impl.Process {
					// A client process can also stop whole, renewals included.
					f.Mode = rapid.SampledFrom([]string{"", faults.PauseProcess}).Draw(t, "pause_mode")
				}
			}
			return f
		}}
	}
	net := func(kind string, latency bool) faultGen {
		return faultGen{draw: func(t *rapid.T, e faultEnv) plan.FaultSpec {
			f := plan.FaultSpec{Kind: kind, Target: e.linkTarget(t)}
			f.Direction = rapid.SampledFrom([]string{"", "up", "down"}).Draw(t, "direction")
			if latency {
				e.latency(t, &f)
			}
			e.start(t, &f)
			f.Duration = plan.D(e.ttlQuarters(t, 1, 12))
			return f
		}}
	}
	return map[string]faultGen{
		"client-pause": pause("client-pause", false),
		"client-crash": pause("client-crash", true),
		"client-clock": {draw: func(t *rapid.T, e faultEnv) plan.FaultSpec {
			f := plan.FaultSpec{Kind: "client-clock", Target: e.clientTarget(t)}
			f.Offset = plan.D(e.jump(t))
			f.Rate = rapid.SampledFrom([]float64{0, 2, 0.5}).Draw(t, "rate")
			e.start(t, &f)
			f.Duration = plan.D(e.ttlQuarters(t, 1, 12))
			return f
		}},
		"server-pause": {draw: func(t *rapid.T, e faultEnv) plan.FaultSpec {
			f := plan.FaultSpec{Kind: "server-pause", Target: e.serverTarget(t, true)}
			e.start(t, &f)
			f.Duration = plan.D(e.ttlQuarters(t, 1, 12))
			return f
		}},
		"server-crash": {draw: func(t *rapid.T, e faultEnv) plan.FaultSpec {
			f := plan.FaultSpec{Kind: "server-crash", Target: e.serverTarget(t, true)}
			e.start(t, &f)
			f.Duration = plan.D(e.ttlQuarters(t, 0, 8)) // 0: restart at once
			return f
		}},
		"server-clock": {draw: func(t *rapid.T, e faultEnv) plan.FaultSpec {
			// The store's keys have no expiry: a clock fault there would change nothing.
			f := plan.FaultSpec{Kind: "server-clock", Target: e.serverTarget(t, false)}
			// Emulation rewrites TTLs with a script, which a replica refuses: on a
			// replicated topology only libfaketime moves a clock.
			modes := []string{faults.ClockModeFaketime, faults.ClockModeEmulated}
			if e.topo.Kind == cluster.Replicated || e.topo.Kind == cluster.RedisCluster {
				modes = modes[:1]
			}
			f.Mode = rapid.SampledFrom(modes).Draw(t, "clock_mode")
			f.Offset = plan.D(e.jump(t))
			if f.Mode == faults.ClockModeFaketime {
				f.Rate = rapid.SampledFrom([]float64{0, 2, 0.5}).Draw(t, "rate")
			}
			e.start(t, &f)
			f.Duration = plan.D(e.ttlQuarters(t, 1, 12))
			return f
		}},
		"net-latency":   net("net-latency", true),
		"net-blackhole": net("net-blackhole", false),
		"net-reset":     net("net-reset", false),
		"reply-delay": {draw: func(t *rapid.T, e faultEnv) plan.FaultSpec {
			f := plan.FaultSpec{Kind: "reply-delay", Target: e.clientTarget(t)}
			e.latency(t, &f)
			e.start(t, &f)
			f.Duration = plan.D(e.ttlQuarters(t, 1, 12))
			return f
		}},
		"partition": {needs: []string{cluster.Replicated}, draw: func(t *rapid.T, e faultEnv) plan.FaultSpec {
			// The primary, alone or with a Sentinel that still names it, or a replica; long
			// enough for the Sentinels to fail over.
			f := plan.FaultSpec{Kind: "partition", Target: rapid.SampledFrom([]string{"redis-0", "redis-0,sentinel-0", fmt.Sprintf("redis-%d", e.topo.Nodes-1)}).Draw(t, "partition_target")}
			e.start(t, &f)
			f.Duration = plan.D(1500*time.Millisecond + 250*time.Millisecond*time.Duration(rapid.IntRange(0, 8).Draw(t, "partition_250ms")))
			return f
		}},
		"slot-migration": {needs: []string{cluster.RedisCluster}, draw: func(t *rapid.T, e faultEnv) plan.FaultSpec {
			f := plan.FaultSpec{Kind: "slot-migration"}
			e.start(t, &f)
			f.Duration = plan.D(e.ttlQuarters(t, 1, 8))
			return f
		}},
		"failover": {needs: []string{cluster.Replicated, cluster.RedisCluster}, draw: func(t *rapid.T, e faultEnv) plan.FaultSpec {
			f := plan.FaultSpec{Kind: "failover"}
			modes := []string{faults.FailoverManual, faults.FailoverSentinel}
			if e.topo.Kind == cluster.RedisCluster {
				modes = []string{faults.FailoverTakeover, faults.FailoverForce, faults.FailoverCluster}
			}
			if e.topo.Kind == cluster.RedisCluster && !e.wait {
				modes = append(modes, faults.FailoverGraceful) // at a time: it loses nothing at a point
			}
			if e.wait {
				modes, f.Cut = slices.DeleteFunc(modes, func(m string) bool { return m == faults.FailoverManual }), "one"
			}
			f.Mode = rapid.SampledFrom(modes).Draw(t, "failover_mode")
			if f.Mode == faults.FailoverGraceful || !e.wait && rapid.IntRange(0, 3).Draw(t, "failover_at_time") == 3 {
				f.Target = "primary"
				e.start(t, &f)
			} else {
				// Replication is cut at At, at an instant without a lease (early in the run,
				// when one comes at once); the primary dies when the target client next
				// reaches the point with a write made after the cut.
				f.Target = e.clientTarget(t)
				f.Point = rapid.SampledFrom(e.points).Draw(t, "point")
				f.At = plan.D(e.run * time.Duration(rapid.IntRange(0, 2).Draw(t, "at_20th")) / 20)
			}
			f.Duration = plan.D(1500*time.Millisecond + 250*time.Millisecond*time.Duration(rapid.IntRange(0, 6).Draw(t, "failover_250ms")))
			return f
		}},
	}
}

// clientTarget is client:N or, drawn last, any.
func (e faultEnv) clientTarget(t *rapid.T) string {
	n := rapid.IntRange(0, e.clients).Draw(t, "client")
	if n == e.clients {
		return "any"
	}
	return "client:" + strconv.Itoa(n)
}

// lockNodes are the names of a topology's lock servers, as cluster.Start names them:
// lock-0 … for single and nodes, redis-0 (the first primary) … for replicated and a
// Redis Cluster.
func lockNodes(topo cluster.Topology) []string {
	prefix := "lock-"
	if topo.Kind == cluster.Replicated || topo.Kind == cluster.RedisCluster {
		prefix = "redis-"
	}
	names := make([]string, topo.Nodes)
	for i := range names {
		names[i] = prefix + strconv.Itoa(i)
	}
	return names
}

// serverTarget is a lock server, or with store the protected store.
func (e faultEnv) serverTarget(t *rapid.T, store bool) string {
	names := lockNodes(e.topo)
	if store {
		names = append(names, "store")
	}
	return rapid.SampledFrom(names).Draw(t, "server")
}

// linkTarget is a glob over the run's links: one client's link to one server, every
// client's link to one server, one client's links to every server, or (replicated) the
// primary's replication links.
func (e faultEnv) linkTarget(t *rapid.T) string {
	servers := append(lockNodes(e.topo), "store")
	shapes := []string{"client->server", "clients->server", "client->all"}
	switch e.topo.Kind {
	case cluster.Replicated:
		if e.backend != plan.BackendDocker { // where replication takes no link
			shapes = append(shapes, "replication")
		}
	case cluster.Etcd, cluster.ZooKeeper:
		if e.topo.Nodes > 1 {
			shapes = append(shapes, "peer")
		}
	}
	switch rapid.SampledFrom(shapes).Draw(t, "link_shape") {
	case "client->server":
		return fmt.Sprintf("client:%d->%s", rapid.IntRange(0, e.clients-1).Draw(t, "link_client"), rapid.SampledFrom(servers).Draw(t, "link_server"))
	case "clients->server":
		return "client:*->" + rapid.SampledFrom(servers).Draw(t, "link_server")
	case "client->all":
		return fmt.Sprintf("client:%d->*", rapid.IntRange(0, e.clients-1).Draw(t, "link_client"))
	case "peer":
		// A member cut off from its peers (cluster.PeerLink).
		return cluster.PeerLink(rapid.SampledFrom(lockNodes(e.topo)).Draw(t, "link_member"))
	}
	return lockNodes(e.topo)[0] + "->*"
}

// start sets when a fault starts: at a time within the run, or when a client (or any
// client) reaches a point, then after a delay of a few quarters of the TTL (mostly none).
func (e faultEnv) start(t *rapid.T, f *plan.FaultSpec) {
	how := 0 // at a time
	if !e.timed {
		how = rapid.IntRange(0, 2).Draw(t, "start")
	}
	switch how {
	case 0:
		f.At = plan.D(e.run * time.Duration(rapid.IntRange(0, 19).Draw(t, "at_20th")) / 20)
		return
	case 1:
		f.Trigger = "any@"
	case 2:
		f.Trigger = fmt.Sprintf("client:%d@", rapid.IntRange(0, e.clients-1).Draw(t, "trigger_client"))
	}
	f.Trigger += rapid.SampledFrom(e.points).Draw(t, "trigger_point")
	f.At = plan.D(e.ttl * time.Duration(rapid.IntRange(0, 4).Draw(t, "trigger_delay_quarters")) / 4)
}

// until sometimes makes a pause last until another client (or any client, when the
// pause strikes any) reaches a point, its grant, its write or its release among them,
// two to six TTLs at most: the orders a timed pause reaches only by luck, a holder's
// late extend or release after another client took the lock, or took it and gave it back.
func (e faultEnv) until(t *rapid.T, f *plan.FaultSpec) {
	if e.clients < 2 || rapid.IntRange(0, 2).Draw(t, "until") != 2 {
		return
	}
	who := "any"
	if c, ok := strings.CutPrefix(f.Target, "client:"); ok {
		n, _ := strconv.Atoi(c)
		other := rapid.IntRange(0, e.clients-2).Draw(t, "until_client")
		if other >= n {
			other++ // anyone but the paused client
		}
		who = "client:" + strconv.Itoa(other)
	}
	f.Until = who + "@" + rapid.SampledFrom(e.reachable).Draw(t, "until_point")
	f.Duration = plan.D(e.ttlQuarters(t, 8, 24))
}

// ttlQuarters is lo to hi quarters of the TTL.
func (e faultEnv) ttlQuarters(t *rapid.T, lo, hi int) time.Duration {
	return e.ttl * time.Duration(rapid.IntRange(lo, hi).Draw(t, "ttl_quarters")) / 4
}

// jump is a clock jump of half a TTL to three TTLs, forward or (less often) back, in
// whole milliseconds (what emulated server clocks need).
func (e faultEnv) jump(t *rapid.T) time.Duration {
	d := (e.ttl * time.Duration(rapid.IntRange(1, 6).Draw(t, "jump_half_ttls")) / 2).Round(time.Millisecond)
	if rapid.IntRange(0, 3).Draw(t, "jump_back") == 3 {
		d = -d
	}
	return d
}

// latency sets a delay of a quarter of the TTL to twice the TTL, sometimes with jitter.
func (e faultEnv) latency(t *rapid.T, f *plan.FaultSpec) {
	l := e.ttlQuarters(t, 1, 8).Round(time.Millisecond)
	f.Latency = plan.D(l)
	if rapid.Bool().Draw(t, "jitter") {
		f.Jitter = plan.D((l / 10).Round(time.Millisecond))
	}
}

// faultKinds lists a plan's fault kinds, e.g. "client-pause,server-clock", or "none".
func faultKinds(p plan.Plan) string {
	if len(p.Faults) == 0 {
		return NoFaults
	}
	kinds := make([]string, len(p.Faults))
	for i, f := range p.Faults {
		kinds[i] = f.Kind
	}
	return strings.Join(kinds, ",")
}
