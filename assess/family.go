package assess

import (
	"fmt"
	"slices"

	"github.com/locklab/locklab/campaign/expect"
	"github.com/locklab/locklab/cluster"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
)

// Kind is how a lock keeps its lease: what decides which faults can break it.
type Kind string

// The kinds of lock locklab knows.
const (
	// KindLease: a lease on one primary (SET NX PX or the like) that ends by its TTL unless
	// its holder extends it.
	KindLease Kind = "lease"
	// KindRenewing: a lease that the client renews by itself while its process lives (a
	// watchdog, a session keepalive).
	KindRenewing Kind = "renewing"
	// KindRedlock: a lease granted by a majority of independent servers.
	KindRedlock Kind = "redlock"
	// KindConsensus: a lease on a consensus store (etcd, ZooKeeper), granted by a replicated log.
	KindConsensus Kind = "consensus"
)

// Kinds are every kind, in the order the report lists them.
func Kinds() []Kind { return []Kind{KindLease, KindRenewing, KindRedlock, KindConsensus} }

// ParseKind reads a kind's name.
func ParseKind(s string) (Kind, error) {
	k := Kind(s)
	if !slices.Contains(Kinds(), k) {
		return "", fmt.Errorf("unknown lock kind %q (want %s, %s, %s or %s)", s, KindLease, KindRenewing, KindRedlock, KindConsensus)
	}
	return k, nil
}

// Family is a lock's kind and whether it grants fencing tokens: locks of one family break
// under the same faults, so a violation that every lock of the family shows is the
// family's, not the lock's.
type Family struct {
	Kind   Kind `json:"kind"`
	Fences bool `json:"fences"`
}

func (f Family) String() string {
	fences := "without fencing tokens"
	if f.Fences {
		fences = "with fencing tokens"
	}
	return fmt.Sprintf("%s lock %s", f.Kind, fences)
}

// FamilyOf is the family of impl from what its registration says: its topology (nodes:
// Redlock, etcd or zookeeper: consensus), whether it renews by itself, whether it fences. A client
// registered from its command says only whether it fences and extends in its hello; a
// renewing one is named by the caller (assess --kind).
func FamilyOf(impl lockimpl.Impl) Family {
	f := Family{Kind: KindLease, Fences: impl.Fencing}
	switch {
	case cluster.Consensus(impl.Topology):
		f.Kind = KindConsensus
	case impl.Topology == cluster.Nodes:
		f.Kind = KindRedlock
	case impl.Renews:
		f.Kind = KindRenewing
	}
	return f
}

// Reference is a lock of locklab's own that stands for its family: what a correct lock
// of the family achieves. A violation that the family's reference does not show on the
// same plan is avoidable; one it shows too is inherent to the family.
type Reference struct {
	Family Family
	Impl   string
	Why    string
}

// References is the table of reference locks, one per family that locklab has one for
// (docs/assess.md shows the same table).
func References() []Reference {
	return []Reference{
		{Family{KindLease, false}, "setnx", "SET NX PX with a random token, release and extend checked by a Lua script: the textbook lease lock"},
		{Family{KindLease, true}, "fenced", "setnx with an INCR fencing token granted in the same script: the textbook lock with Kleppmann's fencing"},
		{Family{KindRenewing, false}, "watchdog", "setnx renewed every third of the TTL by a background task while the holder lives, as Redisson's watchdog"},
		{Family{KindRedlock, false}, "redlock", "Redlock as the Redis docs describe it: a majority of N independent nodes, the validity counted from before the first request"},
		{Family{KindConsensus, true}, "etcd", "etcd's concurrency.Mutex on a session lease kept alive by the client; its fence is the key's create revision"},
	}
}

// ReferenceFor is the reference of family f: the one of f itself, else one of the same
// kind (a renewing lock that fences is compared with watchdog on everything but P3);
// "" when locklab has none.
func ReferenceFor(f Family) string {
	refs := References()
	if i := slices.IndexFunc(refs, func(r Reference) bool { return r.Family == f }); i >= 0 {
		return refs[i].Impl
	}
	if i := slices.IndexFunc(refs, func(r Reference) bool { return r.Family.Kind == f.Kind }); i >= 0 {
		return refs[i].Impl
	}
	return ""
}

// Claimed is which properties the models claim for plan p of impl, a lock of family f,
// with the rule that claims each: the rules of impl itself (campaign/expect), and those
// of its family's reference on the same plan, as a lock that says it is of the family
// promises what the family's textbook lock keeps. A client of its own process keeps its
// own (no P1 claim: expect.Claims says why).
func Claimed(reg *lockimpl.Registry, p plan.Plan, impl lockimpl.Impl, f Family) map[lin.Property]string {
	out := expect.ExpectedBy(p, impl)
	if impl.Mutant {
		return out
	}
	ref, err := reg.Get(ReferenceFor(f))
	if err != nil || ref.Name == impl.Name || (ref.Fencing && !impl.Fencing) {
		return out
	}
	ref.Process = impl.Process
	rp := p
	rp.Impl, rp.ImplOptions = ref.Name, nil
	for prop, rule := range expect.ExpectedBy(rp, ref) {
		if _, ok := out[prop]; !ok {
			out[prop] = rule + " (" + ref.Name + "'s, for the " + string(f.Kind) + " family)"
		}
	}
	return out
}
