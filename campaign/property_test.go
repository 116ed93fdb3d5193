package campaign

import (
	"context"
	"flag"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/locklab/locklab/cluster/clustertest"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
)

// Each generated plan is a real run of about a second, so the property tests draw fewer
// plans than rapid's default 100 unless -rapid.checks says otherwise.
const defaultChecks = "20"

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == f.DefValue {
		_ = f.Value.Set(defaultChecks) // the flag exists and takes an int: cannot fail
	}
	os.Exit(m.Run())
}

// planGen draws a fault-free plan for impl whose critical sections stay well inside the
// lease: 2–8 clients, 1–4 keys, work at most a twentieth of the TTL.
func planGen(impl string, fencings ...string) *rapid.Generator[Plan] {
	return rapid.Custom(func(t *rapid.T) Plan {
		p := DefaultPlan()
		p.Name = "property"
		p.Impl = impl
		p.Fencing = rapid.SampledFrom(fencings).Draw(t, "fencing")
		p.Clients = rapid.IntRange(2, 8).Draw(t, "clients")
		p.Keys = rapid.IntRange(1, 4).Draw(t, "keys")
		ttl := time.Duration(rapid.IntRange(400, 1000).Draw(t, "ttl_ms")) * time.Millisecond
		p.TTL = D(ttl)
		p.Work = D(time.Duration(rapid.Int64Range(0, int64(ttl/20)).Draw(t, "work")))
		p.Retry = D(time.Duration(rapid.IntRange(1, 10).Draw(t, "retry_ms")) * time.Millisecond)
		p.Think = D(p.Retry.D() + time.Duration(rapid.IntRange(0, 10).Draw(t, "think_extra_ms"))*time.Millisecond)
		p.Duration = D(time.Duration(rapid.IntRange(300, 800).Draw(t, "duration_ms")) * time.Millisecond)
		p.Careless = rapid.Bool().Draw(t, "careless")
		p.Extend = rapid.SampledFrom([]float64{0, 0.5, 1}).Draw(t, "extend")
		p.Seed = rapid.Int64().Draw(t, "seed")
		return p
	})
}

// TestCorrectLocksAreSafe: with no faults and critical sections well inside the TTL, the
// correct implementations keep P1, P2, P3 and L1 for every generated plan (no false alarms).
func TestCorrectLocksAreSafe(t *testing.T) {
	reg := lockimpl.Builtin()
	for _, c := range []struct {
		impl     string
		fencings []string
	}{
		{"setnx", []string{"off"}},
		{"fenced", []string{"off", "writes", "full"}},
	} {
		t.Run(c.impl, func(t *testing.T) {
			backend := clustertest.Backend(t)
			var runs, ops atomic.Int64
			rapid.Check(t, func(rt *rapid.T) {
				p := planGen(c.impl, c.fencings...).Draw(rt, "plan")
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				rep, err := Run(ctx, p, Options{Registry: reg, Backend: backend})
				if err != nil {
					rt.Fatalf("run: %v", err)
				}
				runs.Add(1)
				ops.Add(int64(rep.Ops))
				for _, pr := range rep.Result.Properties {
					if pr.Verdict == lin.Illegal || pr.Verdict == lin.Unknown {
						rt.Fatalf("%s %s with plan %s:\n%s", pr.Property, pr.Verdict, p.MarshalIndent(), rep.Result)
					}
				}
				if pr, _ := rep.Result.Property(lin.P1); pr.Ops == 0 {
					rt.Fatalf("no lock operations were recorded")
				}
			})
			t.Logf("%s: %d generated plans run, %d operations checked, no violation", c.impl, runs.Load(), ops.Load())
		})
	}
}
