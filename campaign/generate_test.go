package campaign

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/workload"
)

// draws is how many plans the generator tests draw: no server is needed, a draw is cheap.
const draws = 3000

// TestGeneratedPlansAreValid: every plan drawn from the whole space passes Validate, and
// its values stay in the documented ranges.
func TestGeneratedPlansAreValid(t *testing.T) {
	reg := locks.All()
	gen, err := PlanGen(reg, Space{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range draws {
		p := gen.Example(i + 1)
		if err := p.Validate(reg); err != nil {
			t.Fatalf("draw %d: %v\n%s", i, err, p.MarshalIndent())
		}
		topo, _ := cluster.ParseTopology(p.Topology)
		impl, _ := reg.Get(p.Impl)
		switch {
		case p.Clients < 2 || p.Clients > 8, p.Keys < 1 || p.Keys > 3:
			t.Fatalf("draw %d: %d clients, %d keys", i, p.Clients, p.Keys)
		case p.TTL.D() < 200*time.Millisecond || p.TTL.D() > time.Second:
			t.Fatalf("draw %d: ttl %s", i, p.TTL.D())
		case p.Think.D() <= p.Retry.D():
			t.Fatalf("draw %d: think %s not longer than retry %s", i, p.Think.D(), p.Retry.D())
		case len(p.Faults) > DefaultMaxFaults:
			t.Fatalf("draw %d: %d faults", i, len(p.Faults))
		case !impl.Fencing && p.Fencing != "off":
			t.Fatalf("draw %d: fencing %s on %s", i, p.Fencing, p.Impl)
		case topo.Kind == cluster.Nodes && (topo.Nodes < 3 || topo.Nodes > 5):
			t.Fatalf("draw %d: topology %s", i, p.Topology)
		case p.Seed == 0:
			t.Fatalf("draw %d: seed 0", i)
		}
		nodes := append(lockNodes(topo), "store")
		for _, f := range p.Faults {
			// Server targets and link ends name servers of the topology (cluster.Start's names).
			if strings.HasPrefix(f.Kind, "server-") && !slices.Contains(nodes, f.Target) {
				t.Fatalf("draw %d: %s on %s, which %s has not", i, f.Kind, f.Target, p.Topology)
			}
			if _, to, ok := strings.Cut(f.Target, "->"); ok && to != "*" && !slices.Contains(nodes, to) {
				t.Fatalf("draw %d: link %s on %s", i, f.Target, p.Topology)
			}
			// A consensus member's peer links (cluster.PeerLink) start at its peers.
			if from, _, ok := strings.Cut(f.Target, "->"); ok && !strings.HasPrefix(from, "client:") && !slices.Contains(nodes, from) &&
				(from != "peers" || !cluster.Consensus(topo.Kind)) {
				t.Fatalf("draw %d: link %s on %s", i, f.Target, p.Topology)
			}
			if f.Kind == "failover" && topo.Kind != cluster.Replicated && topo.Kind != cluster.RedisCluster {
				t.Fatalf("draw %d: failover on %s", i, p.Topology)
			}
			if f.Kind == "server-clock" && f.Mode == faults.ClockModeFaketime && p.ServerClock != cluster.ClockFaketime {
				t.Fatalf("draw %d: faketime clock fault without server_clock faketime", i)
			}
		}
	}
}

// TestGeneratorCoversEverything: over many draws every fault kind, implementation,
// topology kind, fencing mode, client point and lock step, trigger form, persistence and
// clock mode occurs, and so do plans without faults, calm plans and plans whose work
// outlasts the lease.
func TestGeneratorCoversEverything(t *testing.T) {
	reg := locks.All()
	gen, err := PlanGen(reg, Space{})
	if err != nil {
		t.Fatal(err)
	}
	// One draw in four on the docker backend, where servers can also be partitioned.
	onDocker, err := PlanGen(reg, Space{Backend: plan.BackendDocker})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := range draws {
		p := gen.Example(i + 1)
		if i%4 == 3 {
			p = onDocker.Example(i + 1)
		}
		topo, _ := cluster.ParseTopology(p.Topology)
		for _, f := range p.Faults {
			if err := faults.OnBackend(f.Kind, p.Backend); err != nil {
				t.Fatalf("draw %d: %v", i, err)
			}
		}
		if p.Backend == plan.BackendDocker && topo.Kind == cluster.Etcd {
			t.Fatalf("draw %d: etcd on the docker backend", i)
		}
		seen["impl "+p.Impl]++
		seen["topology "+topo.Kind]++
		seen["fencing "+p.Fencing]++
		seen["persistence "+p.Persistence]++
		seen["faults "+string(rune('0'+len(p.Faults)))]++
		if p.Calm() {
			seen["calm"]++
		}
		if p.Work.D() > p.TTL.D() {
			seen["work beyond ttl"]++
		}
		for _, f := range p.Faults {
			seen["kind "+f.Kind]++
			if f.Point != "" {
				seen["point "+f.Point]++
			}
			if who, point, ok := strings.Cut(f.Trigger, "@"); ok {
				seen["trigger "+point]++
				seen["trigger "+strings.TrimRight(who, "0123456789")]++
			}
			if f.Kind == "server-clock" {
				seen["clock "+f.Mode]++
			}
			if f.Kind == "failover" {
				seen["failover "+f.Mode]++
			}
		}
	}
	want := []string{"faults 0", "faults 1", "faults 4", "calm", "work beyond ttl", "topology single", "topology replicated", "topology nodes",
		"persistence none", "persistence aof-everysec", "persistence aof-always", "clock faketime", "clock emulated",
		"failover manual", "failover sentinel", "topology cluster", "trigger any", "trigger client:"}
	for _, k := range faults.Kinds() {
		want = append(want, "kind "+k.Name)
	}
	for _, i := range reg.List() {
		want = append(want, "impl "+i.Name)
		for _, s := range i.Steps {
			want = append(want, "point "+s)
		}
	}
	for _, f := range fencingModes() {
		want = append(want, "fencing "+f)
	}
	for _, pt := range workload.Points() {
		want = append(want, "point "+pt, "trigger "+pt)
	}
	want = append(want, "trigger "+lockimpl.StepGranted)
	for _, w := range want {
		if seen[w] == 0 {
			t.Errorf("%d draws never gave %s", draws, w)
		}
	}
	t.Logf("fault kinds drawn: %v", kindCounts(seen))
}

func kindCounts(seen map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range seen {
		if kind, ok := strings.CutPrefix(k, "kind "); ok {
			out[kind] = n
		}
	}
	return out
}

// TestEveryFaultKindHasAGenerator: a kind added to the faults package without a generator
// fails here, not in a campaign.
func TestEveryFaultKindHasAGenerator(t *testing.T) {
	gens := faultGens()
	for _, k := range faults.Kinds() {
		if _, ok := gens[k.Name]; !ok {
			t.Errorf("fault kind %s has no generator", k.Name)
		}
	}
	for name := range gens {
		if !slices.Contains(kindNames(), name) {
			t.Errorf("generator for unknown fault kind %s", name)
		}
	}
}

// TestSpaceRestrictsTheDraws: a space's lists bound what is drawn, and a calm space draws
// only calm plans with the minimum number of faults.
func TestSpaceRestrictsTheDraws(t *testing.T) {
	reg := locks.All()
	s := Space{Impls: []string{"fenced"}, Faults: []string{"failover", "client-pause"}, Fencings: []string{"full"}, MinFaults: 1, MaxFaults: 2, Calm: true, Careful: true}
	gen, err := PlanGen(reg, s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		p := gen.Example(i + 1)
		if p.Impl != "fenced" || p.Fencing != "full" || !p.Calm() || p.Careless || len(p.Faults) < 1 || len(p.Faults) > 2 {
			t.Fatalf("draw %d outside the space: %s", i, p.MarshalIndent())
		}
		for _, f := range p.Faults {
			if f.Kind != "failover" && f.Kind != "client-pause" {
				t.Fatalf("draw %d: fault %s", i, f.Kind)
			}
		}
		if err := p.Validate(reg); err != nil {
			t.Fatalf("draw %d: %v", i, err)
		}
	}
	none, err := PlanGen(reg, Space{Faults: []string{NoFaults}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if p := none.Example(i + 1); len(p.Faults) != 0 {
			t.Fatalf("--faults none drew %s", faultKinds(p))
		}
	}
	// Every class's space holds plans.
	for _, c := range Classes(reg) {
		g, err := PlanGen(reg, c.Space)
		if err != nil {
			t.Fatalf("class %s: %v", c.ID, err)
		}
		for i := range 100 {
			if p := g.Example(i + 1); !c.Matches(p) {
				t.Fatalf("class %s drew a plan outside itself: %s", c.ID, p.MarshalIndent())
			}
		}
	}
}

// TestSpaceTTLFixesTheTTL: a space's TTL is every plan's, and what the generator derives
// from the TTL follows it: work up to three TTLs, client pauses up to three TTLs, a run
// with no fault 1–3 s scaled by TTL ÷ 600 ms (at least 300 ms).
func TestSpaceTTLFixesTheTTL(t *testing.T) {
	reg := locks.All()
	const ttl = 100 * time.Millisecond
	gen, err := PlanGen(reg, Space{TTL: plan.D(ttl)})
	if err != nil {
		t.Fatal(err)
	}
	faultFree := 0
	for i := range 500 {
		p := gen.Example(i + 1)
		if err := p.Validate(reg); err != nil {
			t.Fatalf("draw %d: %v", i, err)
		}
		if p.TTL.D() != ttl || p.Work.D() > 3*ttl {
			t.Fatalf("draw %d: ttl %s, work %s; want ttl %s, work at most 3×", i, p.TTL.D(), p.Work.D(), ttl)
		}
		if len(p.Faults) == 0 {
			faultFree++
		}
		if d := p.Duration.D(); len(p.Faults) == 0 && (d < 300*time.Millisecond || d > 500*time.Millisecond) {
			t.Fatalf("draw %d: a run of %s with no fault; want 300–500ms at a 100ms TTL", i, d)
		}
		for _, f := range p.Faults {
			most := 3 * ttl
			if f.Until != "" {
				most = 6 * ttl // a pause that lasts until another client reaches a point
			}
			if f.Kind == "client-pause" && f.Duration.D() > most {
				t.Fatalf("draw %d: a client pause of %s (until %q), over %s", i, f.Duration.D(), f.Until, most)
			}
		}
	}
	if faultFree == 0 {
		t.Error("no fault-free plan among 500: the run length was not tested")
	}
}

// TestPausesLastUntilAnotherClient: some pauses end when another client reaches a point
// (any client for a pause that strikes any), its release among the points, so that a
// campaign draws the orders a timed pause reaches only by luck.
func TestPausesLastUntilAnotherClient(t *testing.T) {
	reg := locks.All()
	gen, err := PlanGen(reg, Space{Impls: []string{"setnx"}, Faults: []string{"client-pause"}, MinFaults: 1})
	if err != nil {
		t.Fatal(err)
	}
	untils, releases := 0, 0
	for i := range 300 {
		p := gen.Example(i + 1)
		if err := p.Validate(reg); err != nil {
			t.Fatalf("draw %d: %v", i, err)
		}
		for _, f := range p.Faults {
			if f.Until == "" {
				continue
			}
			untils++
			who, point, _ := strings.Cut(f.Until, "@")
			if f.Target == "any" && who != "any" || f.Target != "any" && (who == f.Target || !strings.HasPrefix(who, "client:")) {
				t.Errorf("draw %d: a pause of %s until %s", i, f.Target, f.Until)
			}
			if point == workload.AfterRelease {
				releases++
			}
		}
	}
	if untils < 30 || releases == 0 {
		t.Errorf("%d pauses until another client in 300 plans, %d of them until a release", untils, releases)
	}
}

// TestSpaceExtendRaisesTheExtends: a space that asks every section to extend draws only
// plans that do, and may then pause a client right before its extend; a probability
// outside 0..1 is refused.
func TestSpaceExtendRaisesTheExtends(t *testing.T) {
	reg := locks.All()
	gen, err := PlanGen(reg, Space{Impls: []string{"setnx"}, Faults: []string{"client-pause"}, MinFaults: 1, Extend: []float64{1}})
	if err != nil {
		t.Fatal(err)
	}
	beforeExtend := 0
	for i := range 300 {
		p := gen.Example(i + 1)
		if p.Extend != 1 {
			t.Fatalf("draw %d: extend %g, want 1", i, p.Extend)
		}
		for _, f := range p.Faults {
			if f.Point == "before-extend" {
				beforeExtend++
			}
		}
	}
	if beforeExtend == 0 {
		t.Error("no pause before an extend in 300 draws")
	}
	if _, err := PlanGen(reg, Space{Extend: []float64{1.5}}); err == nil || !strings.Contains(err.Error(), "extend 1.5: want a probability from 0 to 1") {
		t.Errorf("extend 1.5: %v", err)
	}
}

// TestSpaceErrorsNameTheKnownValues: a typo in a space is an error that lists what exists.
func TestSpaceErrorsNameTheKnownValues(t *testing.T) {
	reg := locks.All()
	for _, c := range []struct {
		s    Space
		want string
	}{
		{Space{Impls: []string{"fenced", "nope"}}, `unknown lock implementation "nope" (known:`},
		{Space{Faults: []string{"client-paws"}}, `unknown fault kind "client-paws" (known: client-pause`},
		{Space{Faults: []string{"none", "client-pause"}}, `cannot be combined`},
		{Space{Fencings: []string{"fool"}}, `unknown fencing mode "fool" (known: off, writes, full)`},
		{Space{Impls: []string{"setnx"}, Fencings: []string{"full"}}, `setnx grants no fencing tokens`},
		{Space{Impls: []string{"redlock"}, Faults: []string{"failover"}, MinFaults: 1}, `redlock runs on no topology where fault kinds failover exist`},
		{Space{TTL: plan.D(1500 * time.Microsecond)}, `ttl 1.5ms: want whole milliseconds`},
		{Space{TTL: plan.D(-time.Second)}, `ttl -1s: want whole milliseconds`},
		{Space{TTL: plan.D(100 * time.Millisecond), Calm: true}, `calm workloads need a ttl of at least 200ms`},
	} {
		_, err := PlanGen(reg, c.s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("space %+v: error %v, want it to contain %q", c.s, err, c.want)
		}
	}
}

// TestPlanGenIsDeterministic: the same seed draws the same plan.
func TestPlanGenIsDeterministic(t *testing.T) {
	gen, err := PlanGen(locks.All(), Space{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if a, b := gen.Example(i+1), gen.Example(i+1); !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d drew two plans:\n%s\n%s", i+1, a.MarshalIndent(), b.MarshalIndent())
		}
	}
}

// TestGeneratorFailsOverARedisCluster: a space of fenced with failovers draws Redis
// Clusters, with each of the cluster's failover modes (graceful at a time only).
func TestGeneratorFailsOverARedisCluster(t *testing.T) {
	gen, err := PlanGen(locks.All(), Space{Impls: []string{"fenced"}, Faults: []string{"failover"}, MinFaults: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := range 400 {
		p := gen.Example(i + 1)
		for _, f := range p.Faults {
			seen[p.Topology+" "+f.Mode]++
			if f.Mode == faults.FailoverGraceful && f.Point != "" {
				t.Fatalf("draw %d: graceful failover at point %s", i, f.Point)
			}
		}
	}
	for _, mode := range []string{faults.FailoverCluster, faults.FailoverForce, faults.FailoverTakeover, faults.FailoverGraceful} {
		if seen["cluster:3x1 "+mode] == 0 {
			t.Errorf("400 draws never failed over cluster:3x1 in mode %s: %v", mode, seen)
		}
	}
}

// TestGeneratorWaitsAndCutsOneReplica: a Wait space draws WAIT 1 on primaries with two
// replicas, failovers that cut one replica at a point in every mode but manual, and
// leaves out the locks that cannot WAIT; every plan validates.
func TestGeneratorWaitsAndCutsOneReplica(t *testing.T) {
	reg := locks.All()
	gen, err := PlanGen(reg, Space{Impls: []string{"fenced", "redsync"}, Faults: []string{"failover"}, MinFaults: 1, Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := range 300 {
		p := gen.Example(i + 1)
		if err := p.Validate(reg); err != nil {
			t.Fatalf("draw %d: %v", i, err)
		}
		if p.Impl != "fenced" || p.WaitReplicas != 1 || (p.Topology != "replicated:3" && p.Topology != "cluster:3x2") {
			t.Fatalf("draw %d: %s on %s waiting for %d replicas, want fenced waiting for 1 on a primary with two replicas", i, p.Impl, p.Topology, p.WaitReplicas)
		}
		for _, f := range p.Faults {
			if f.Cut != "one" || f.Point == "" || f.Mode == faults.FailoverManual {
				t.Fatalf("draw %d: failover %+v, want cut one at a point, not manual", i, f)
			}
			seen[p.Topology]++
		}
	}
	if seen["replicated:3"] == 0 || seen["cluster:3x2"] == 0 {
		t.Errorf("300 draws failed over %v, want both topologies", seen)
	}
	if _, err := PlanGen(reg, Space{Impls: []string{"redsync"}, Faults: []string{"failover"}, Wait: true}); err == nil || !strings.Contains(err.Error(), "redsync cannot WAIT") {
		t.Errorf("redsync alone with Wait: %v, want a refusal", err)
	}
}

// TestLockNodesAreTheClustersNames: the server names the generator targets are the names
// cluster.Start gives the lock servers of each topology kind.
func TestLockNodesAreTheClustersNames(t *testing.T) {
	for _, topo := range []cluster.Topology{{Kind: cluster.Single, Nodes: 1}, {Kind: cluster.Nodes, Nodes: 3}, {Kind: cluster.Replicated, Nodes: 3}, {Kind: cluster.RedisCluster, Nodes: 6, Replicas: 1}} {
		c := clustertest.Start(t, topo)
		var got []string
		for _, n := range c.Lock {
			got = append(got, n.Name())
		}
		if want := lockNodes(topo); !slices.Equal(got, want) {
			t.Errorf("%s: cluster names its lock servers %v, the generator %v", topo, got, want)
		}
		if c.Store.Name() != "store" {
			t.Errorf("%s: the store is named %s", topo, c.Store.Name())
		}
	}
}

// TestGeneratorReachesClientProcessesAndOptions: for a client that runs as a process of
// its own the generator draws stop-the-world pauses and moves the client's own clock,
// and for a library with options it draws them; every such plan validates.
func TestGeneratorReachesClientProcessesAndOptions(t *testing.T) {
	reg := locks.All()
	gen, err := PlanGen(reg, Space{Impls: []string{"redis-py", "redsync"}, Faults: []string{"client-pause", "client-clock"}, MinFaults: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := range draws {
		p := gen.Example(i + 1)
		if err := p.Validate(reg); err != nil {
			t.Fatalf("draw %d: %v", i, err)
		}
		for _, f := range p.Faults {
			if f.Kind == "client-pause" && f.Mode == "process" {
				seen[p.Impl+" stop-the-world"]++
			}
		}
		if p.ClientClock == "faketime" {
			seen[p.Impl+" client clock faketime"]++
		}
		if len(p.ImplOptions) > 0 {
			seen[p.Impl+" options"]++
		}
	}
	for _, want := range []string{"redis-py stop-the-world", "redis-py client clock faketime", "redsync options"} {
		if seen[want] == 0 {
			t.Errorf("never drew %s (seen %v)", want, seen)
		}
	}
	for _, never := range []string{"redsync stop-the-world", "redsync client clock faketime"} {
		if seen[never] > 0 {
			t.Errorf("drew %s for an in-process lock", never)
		}
	}
}
