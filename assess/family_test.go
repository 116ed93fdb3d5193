package assess

import (
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// TestFamilies: what the registrations say decides each lock's family and reference.
func TestFamilies(t *testing.T) {
	reg := locks.All()
	for _, c := range []struct {
		impl string
		want Family
		ref  string
	}{
		{"setnx", Family{KindLease, false}, "setnx"},
		{"redislock", Family{KindLease, false}, "setnx"},
		{"fenced", Family{KindLease, true}, "fenced"},
		{"watchdog", Family{KindRenewing, false}, "watchdog"},
		{"rueidislock", Family{KindRenewing, false}, "watchdog"},
		{"redsync", Family{KindRedlock, false}, "redlock"},
		{"etcd", Family{KindConsensus, true}, "etcd"},
		{"etcd-process", Family{KindConsensus, true}, "etcd"},
		{"zookeeper", Family{KindConsensus, true}, "etcd"},
		{"zookeeper-process", Family{KindConsensus, true}, "etcd"},
	} {
		impl, err := reg.Get(c.impl)
		if err != nil {
			t.Fatal(err)
		}
		if got := FamilyOf(impl); got != c.want {
			t.Errorf("FamilyOf(%s) = %v, want %v", c.impl, got, c.want)
		}
		if got := ReferenceFor(c.want); got != c.ref {
			t.Errorf("ReferenceFor(%v) = %q, want %q", c.want, got, c.ref)
		}
	}
	// A renewing lock that fences has no reference of its own: watchdog, its kind's.
	if got := ReferenceFor(Family{KindRenewing, true}); got != "watchdog" {
		t.Errorf("renewing with fences: reference %q, want watchdog", got)
	}
}

// TestReferencesAreOfTheirFamily: every reference of the table is registered, is not a
// mutant, and is itself of the family it stands for.
func TestReferencesAreOfTheirFamily(t *testing.T) {
	reg := locks.All()
	for _, r := range References() {
		impl, err := reg.Get(r.Impl)
		if err != nil {
			t.Errorf("reference %s: %v", r.Impl, err)
			continue
		}
		if impl.Mutant {
			t.Errorf("reference %s is a mutant", r.Impl)
		}
		if got := FamilyOf(impl); got != r.Family {
			t.Errorf("reference %s is a %v, the table says %v", r.Impl, got, r.Family)
		}
		if r.Why == "" {
			t.Errorf("reference %s: no words on what it is", r.Impl)
		}
	}
}

func TestParseKindAndClass(t *testing.T) {
	for _, k := range Kinds() {
		if got, err := ParseKind(string(k)); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
	if _, err := ParseKind("zookeeper"); err == nil || !strings.Contains(err.Error(), "renewing") {
		t.Errorf("ParseKind(zookeeper): %v, want an error listing the kinds", err)
	}
	if _, err := ParseClass("fatal"); err == nil || !strings.Contains(err.Error(), "avoidable") {
		t.Errorf("ParseClass(fatal): %v, want an error listing the classes", err)
	}
}

// TestClaimedTakesTheFamilysPromises: a lock that says it renews is held to what the
// family's reference keeps (watchdog keeps P1 under a pause of the holder's steps); one
// that says it is a plain lease lock is not; a mutant keeps its own rules only.
func TestClaimedTakesTheFamilysPromises(t *testing.T) {
	reg := locks.All()
	p := scenarioPlan(t, reg, "pause-past-ttl")
	redislock, _ := reg.Get("redislock")
	if _, ok := Claimed(reg, p, redislock, FamilyOf(redislock))["P1"]; ok {
		t.Errorf("P1 claimed for a lease lock under pause-past-ttl")
	}
	rule, ok := Claimed(reg, p, redislock, Family{KindRenewing, false})["P1"]
	if !ok || !strings.Contains(rule, "watchdog") {
		t.Errorf("P1 for a lock said to renew: rule %q, want one of watchdog's", rule)
	}
	mutant, _ := reg.Get("unsafe-release")
	for prop, rule := range Claimed(reg, p, mutant, FamilyOf(mutant)) {
		if strings.Contains(rule, "setnx") {
			t.Errorf("mutant held to setnx's rule for %s: %s", prop, rule)
		}
	}
}

func scenarioPlan(t *testing.T, reg *lockimpl.Registry, name string) plan.Plan {
	return scenarioPlans(t, reg, name)[0]
}

// scenarioPlans are the catalog's scenarios of these names, in order.
func scenarioPlans(t *testing.T, reg *lockimpl.Registry, names ...string) []plan.Plan {
	t.Helper()
	all, err := plan.Scenarios(reg)
	if err != nil {
		t.Fatal(err)
	}
	var out []plan.Plan
	for _, name := range names {
		i := slices.IndexFunc(all, func(p plan.Plan) bool { return p.Name == name })
		if i < 0 {
			t.Fatalf("no scenario %s", name)
		}
		out = append(out, all[i])
	}
	return out
}

// TestProcessClientsMeetTheirReferenceOutOfProcess: a lock whose clients are processes is
// compared with its reference run out of process (registered once); an in-process lock
// with the reference itself.
func TestProcessClientsMeetTheirReferenceOutOfProcess(t *testing.T) {
	reg := locks.All()
	node, _ := reg.Get("node-ioredis")
	redislock, _ := reg.Get("redislock")
	for range 2 {
		got, err := processReference(reg, node, "setnx")
		if err != nil || got != "setnx-process" {
			t.Fatalf("node-ioredis: reference %q, %v; want setnx-process", got, err)
		}
	}
	if ref, err := reg.Get("setnx-process"); err != nil || !ref.Process || FamilyOf(ref) != FamilyOf(node) {
		t.Errorf("setnx-process: %+v, %v", ref, err)
	}
	if got, _ := processReference(reg, redislock, "setnx"); got != "setnx" {
		t.Errorf("redislock: reference %q, want setnx", got)
	}
	wp, _ := reg.Get("watchdog-process")
	if got, _ := processReference(reg, wp, "watchdog"); got != "watchdog-process" {
		t.Errorf("watchdog-process: reference %q, want watchdog-process", got)
	}
}
