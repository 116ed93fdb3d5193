package runner

import (
	"context"
	"flag"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
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
func planGen(impl string, fencings ...string) *rapid.Generator[plan.Plan] {
	return rapid.Custom(func(t *rapid.T) plan.Plan {
		p := plan.Default()
		p.Name = "property"
		p.Impl = impl
		p.Fencing = rapid.SampledFrom(fencings).Draw(t, "fencing")
		p.Clients = rapid.IntRange(2, 8).Draw(t, "clients")
		p.Keys = rapid.IntRange(1, 4).Draw(t, "keys")
		ttl := time.Duration(rapid.IntRange(400, 1000).Draw(t, "ttl_ms")) * time.Millisecond
		p.TTL = plan.D(ttl)
		p.Work = plan.D(time.Duration(rapid.Int64Range(0, int64(ttl/20)).Draw(t, "work")))
		p.Retry = plan.D(time.Duration(rapid.IntRange(1, 10).Draw(t, "retry_ms")) * time.Millisecond)
		p.Think = plan.D(p.Retry.D() + time.Duration(rapid.IntRange(0, 10).Draw(t, "think_extra_ms"))*time.Millisecond)
		p.Duration = plan.D(time.Duration(rapid.IntRange(300, 800).Draw(t, "duration_ms")) * time.Millisecond)
		p.Careless = rapid.Bool().Draw(t, "careless")
		p.Extend = rapid.SampledFrom([]float64{0, 0.5, 1}).Draw(t, "extend")
		p.Seed = rapid.Int64().Draw(t, "seed")
		return p
	})
}

// TestCorrectLocksAreSafe: with no faults and critical sections well inside the TTL, every
// correct implementation in the registry (ours, the libraries', the subprocess client)
// keeps P1, P2, P3 and L1 for every generated plan (no false alarms). Multi-node locks
// run on three nodes, etcd and ZooKeeper on one member; fencing modes beyond off only for locks that
// grant fences.
func TestCorrectLocksAreSafe(t *testing.T) {
	reg := locks.All()
	for _, impl := range reg.List() {
		if impl.Mutant {
			continue
		}
		fencings := []string{"off"}
		if impl.Fencing {
			fencings = append(fencings, "writes", "full")
		}
		t.Run(impl.Name, func(t *testing.T) {
			backend := clustertest.Backend(t)
			var runs, ops, extends atomic.Int64
			rapid.Check(t, func(rt *rapid.T) {
				p := planGen(impl.Name, fencings...).Draw(rt, "plan")
				switch impl.Topology {
				case cluster.Nodes:
					p.Topology = "nodes:3"
				case cluster.Etcd, cluster.ZooKeeper:
					// A 3-member cluster plays the catalog in matrix's TestConsensusRows.
					p.Topology = impl.Topology + ":1"
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				rep, h, err := runHistory(ctx, p, reg, Options{Backend: backend})
				if err != nil {
					rt.Fatalf("run: %v", err)
				}
				if rep.Perturbed != "" {
					// The machine, not the plan, timed this run (the matrix counts such runs
					// as undecided): a lease outlived by a harness stall is no verdict on the
					// lock, and neither is a run that recorded nothing. The draw decides
					// nothing and does not count.
					rt.Skipf("perturbed run: %s", rep.Perturbed)
				}
				runs.Add(1)
				ops.Add(int64(rep.Ops))
				extends.Add(int64(countKind(h, histories.Extend)))
				for _, pr := range rep.Result.Properties {
					if pr.Verdict == lin.Illegal || pr.Verdict == lin.Unknown {
						rt.Fatalf("%s %s with plan %s:\n%s", pr.Property, pr.Verdict, p.MarshalIndent(), rep.Result)
					}
				}
				if pr, _ := rep.Result.Property(lin.P1); pr.Ops == 0 {
					rt.Fatalf("no lock operations were recorded")
				}
			})
			t.Logf("%s: %d generated plans run, %d operations checked (%d extends), no violation", impl.Name, runs.Load(), ops.Load(), extends.Load())
		})
	}
}

// runHistory runs p and also returns its history, read back from the run directory.
func runHistory(ctx context.Context, p plan.Plan, reg *lockimpl.Registry, opts Options) (Report, histories.History, error) {
	r, err := p.Resolve(reg)
	if err != nil {
		return Report{}, histories.History{}, err
	}
	dir, err := os.MkdirTemp("", "locklab-property-")
	if err != nil {
		return Report{}, histories.History{}, err
	}
	defer os.RemoveAll(dir)
	opts.Dir = dir
	rep, err := Run(ctx, r, opts)
	if err != nil {
		return rep, histories.History{}, err
	}
	h, err := histories.Load(dir)
	return rep, h, err
}

func countKind(h histories.History, kind histories.Kind) int {
	n := 0
	for _, op := range h.Ops {
		if op.Kind == kind {
			n++
		}
	}
	return n
}
