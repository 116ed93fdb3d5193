package campaign

import (
	"fmt"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
)

// MaxScheduled bounds the faults Schedule draws for one run: each is a goroutine of the
// run's fault schedule from its start (72 hours at one fault a minute is 4,320).
const MaxScheduled = 10000

// Schedule draws the faults of a long run of p (locklab soak --draw-faults) from a
// campaign's space: one fault in each slot of length every, from the run's start to its
// end, of one of kinds (none: every kind p's implementation and topology offer on p's
// backend), drawn as a campaign draws a plan's faults but always at a time (a point's
// trigger would fire in the first slot), and placed so that the fault, the two TTLs after
// it and a failover's promotion end within its slot. It returns p with those faults, and
// the servers or client under libfaketime where a drawn clock fault
// needs them. The drawn faults replace p's own (which could strike the same server at
// the same time). The same seed draws the same faults.
func Schedule(reg *lockimpl.Registry, p plan.Plan, kinds []string, every time.Duration, seed int64) (plan.Plan, error) {
	p.Faults = nil // replaced: they need not fit the run any more
	r, err := p.Resolve(reg)
	if err != nil {
		return p, err
	}
	slots := int(p.Duration.D() / max(every, 1))
	switch {
	case every <= 0:
		return p, fmt.Errorf("draw faults every %s: want a positive interval", every)
	case slots == 0:
		return p, fmt.Errorf("draw faults every %s: longer than the run (%s)", every, p.Duration.D())
	case slots > MaxScheduled:
		return p, fmt.Errorf("draw faults every %s over %s: %d faults, more than %d; draw them less often", every, p.Duration.D(), slots, MaxScheduled)
	}
	sp, err := Space{Impls: []string{r.Impl.Name}, Faults: kinds, Backend: p.Backend, Topologies: []string{r.Topology.Kind}, MinFaults: 1}.resolve(reg)
	if err != nil {
		return p, fmt.Errorf("draw faults: %w", err)
	}
	drawn := sp.impls[0].topos[0].kinds
	env := faultEnv{impl: r.Impl, topo: r.Topology, clients: p.Clients, ttl: p.TTL.D(), run: every / 2, backend: p.Backend,
		points: p.Points(r.Impl), reachable: p.Reachable(r.Impl), timed: true}
	gens := faultGens()
	gen := rapid.Custom(func(t *rapid.T) plan.FaultSpec {
		kind := rapid.SampledFrom(drawn).Draw(t, "kind")
		return gens[kind].draw(t, env)
	})
	out := p
	out.Faults = make([]plan.FaultSpec, 0, slots)
	for slot := range slots {
		f, err := fitted(gen, seed, slot, every, env.ttl)
		if err != nil {
			return p, err
		}
		f.At = plan.D(f.At.D() + time.Duration(slot)*every)
		if needsPersistence(out, r.Topology, f) {
			out.Persistence = persistences().Example(int(seed % (1 << 30)))
		}
		out.Faults = append(out.Faults, f)
		fakeClocks(&out, r.Impl, f)
	}
	if err := out.Validate(reg); err != nil {
		return p, fmt.Errorf("draw faults: the plan with them: %w", err)
	}
	return out, nil
}

// fitted draws slot's fault, moved earlier in the slot when it would end past it; a few
// other draws are tried when one cannot fit at all.
func fitted(gen *rapid.Generator[plan.FaultSpec], seed int64, slot int, every, ttl time.Duration) (plan.FaultSpec, error) {
	var tried []string
	for attempt := range 8 {
		f := gen.Example(int(seed%(1<<30)) + slot*8 + attempt)
		need := max(f.Duration.D()+2*ttl, promotion(f))
		if need > every {
			tried = append(tried, fmt.Sprintf("%s (%s)", f.Kind, need))
			continue
		}
		f.At = plan.D(min(f.At.D(), every-need))
		return f, nil
	}
	return plan.FaultSpec{}, fmt.Errorf("draw faults every %s: slot %d's faults need longer (%s, with two TTLs after each); draw them less often", every, slot, strings.Join(tried, ", "))
}
