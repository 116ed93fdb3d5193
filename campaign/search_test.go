package campaign

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/internal/rapidshrink"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/timeline"
)

// TestPlanSequenceIsDeterministic: the same campaign seed gives the same plans, another
// seed other plans, and the shards of a campaign split its sequence without overlap.
func TestPlanSequenceIsDeterministic(t *testing.T) {
	reg := locks.All()
	gen, err := PlanGen(reg, Space{})
	if err != nil {
		t.Fatal(err)
	}
	gen2, _ := PlanGen(reg, Space{}) // a fresh generator draws the same plans too
	same := 0
	for i := range 40 {
		a, b := PlanAt(gen, 7, i), PlanAt(gen2, 7, i)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("plan %d of seed 7 differs between two draws:\n%s\n%s", i, a.MarshalIndent(), b.MarshalIndent())
		}
		if planKey(a) == planKey(PlanAt(gen, 8, i)) {
			same++
		}
	}
	if same > 2 {
		t.Errorf("seeds 7 and 8 drew %d equal plans of 40", same)
	}

	// Three shards with 5 plans each take plans 0..14, each once.
	var got []int
	for i := range 3 {
		s := &searcher{o: SearchOptions{Shard: Shard{i, 3}, MaxRuns: 5}, start: time.Now()}
		for {
			k, ok := s.next(context.Background())
			if !ok {
				break
			}
			if k%3 != i {
				t.Fatalf("shard %d/3 got plan %d", i, k)
			}
			got = append(got, k)
		}
	}
	slices.Sort(got)
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}; !slices.Equal(got, want) {
		t.Errorf("shards took %v, want %v", got, want)
	}
	for _, bad := range []string{"", "3/3", "-1/2", "1", "a/b", "0/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	if s, err := ParseShard("2/5"); err != nil || s != (Shard{2, 5}) {
		t.Errorf("ParseShard(2/5) = %v, %v", s, err)
	}
}

// TestRapidDrawsTheExampleFirst: rapid's check seeded with SeedFor(seed, i) draws plan i
// first, so that a failure found by the campaign is the failure rapid starts shrinking
// from. And rapid's shrinker, driven through rapidshrink, reduces a plan that fails
// whenever it has a client pause to one pause and the fewest clients, keys and shortest
// times; the rapid flags are back as they were afterwards.
func TestRapidDrawsTheExampleFirst(t *testing.T) {
	reg := locks.All()
	gen, err := PlanGen(reg, Space{Impls: []string{"fenced"}})
	if err != nil {
		t.Fatal(err)
	}
	checksBefore := flagValue(t, "rapid.checks")

	// Find a plan of the sequence with a client pause among several faults.
	i := 0
	for ; i < 1000; i++ {
		p := PlanAt(gen, 3, i)
		if len(p.Faults) >= 3 && slices.ContainsFunc(p.Faults, func(f plan.FaultSpec) bool { return f.Kind == "client-pause" }) {
			break
		}
	}
	orig := PlanAt(gen, 3, i)
	var calls []plan.Plan
	hasPause := func(p plan.Plan) bool {
		calls = append(calls, p)
		return slices.ContainsFunc(p.Faults, func(f plan.FaultSpec) bool { return f.Kind == "client-pause" })
	}
	failed, err := rapidshrink.Shrink(gen, SeedFor(3, i), 20*time.Second, "pause", hasPause)
	if err != nil || !failed {
		t.Fatalf("rapidshrink.Shrink: failed %v, err %v", failed, err)
	}
	if first := named(calls[0], 3, i); !reflect.DeepEqual(first, orig) {
		t.Fatalf("rapid's first draw is not plan %d:\n%s\nwant\n%s", i, first.MarshalIndent(), orig.MarshalIndent())
	}
	var last plan.Plan
	for _, c := range calls {
		if hasPauseNoRecord(c) {
			last = c
		}
	}
	if len(last.Faults) != 1 || last.Faults[0].Kind != "client-pause" || last.Clients != 2 || last.Keys != 1 {
		t.Errorf("shrunk plan from %d faults, %d clients: %s", len(orig.Faults), orig.Clients, last.MarshalIndent())
	}
	if got := flagValue(t, "rapid.checks"); got != checksBefore {
		t.Errorf("rapid.checks is %s after the shrink, was %s", got, checksBefore)
	}
	t.Logf("shrunk in %d calls from %s to %s", len(calls), describePlan(orig), describePlan(last))
}

func hasPauseNoRecord(p plan.Plan) bool {
	return slices.ContainsFunc(p.Faults, func(f plan.FaultSpec) bool { return f.Kind == "client-pause" })
}

func flagValue(t *testing.T, name string) string {
	t.Helper()
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("flag %s not registered", name)
	}
	return f.Value.String()
}

// TestSearchFindsShrinksAndReplaysCheckThenSet is the campaign end to end on real
// servers: a class search for the check-then-set mutant finds it within a bounded number
// of runs, confirms it, shrinks it with rapid (every candidate confirmed by a re-run),
// saves the smallest plan with its report, and that plan reproduces at least once in
// eight replays (a race of two clients does not show in every run).
func TestSearchFindsShrinksAndReplaysCheckThenSet(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	reg := locks.All()
	class, err := ClassByID(reg, "check-then-set")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	// A detection needs a race between two clients' GET and SET in a plan whose faults
	// cannot explain it, and a re-run that races again: no gate can force the race without
	// being the hint the search must do without. So the search goes on until it has one
	// (it stops at its first confirmed detection: about 6 runs on an idle machine), and a
	// run the load perturbed counts for nothing; what did not come is said.
	// Bounded by the plans, not by a wall-clock budget a loaded machine would exhaust
	// (clustertest.Context's 20 s cut the search short after 10 plans, 7 of them perturbed).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sum, err := Search(ctx, SearchOptions{
		Registry: reg, Class: &class, StopAtDetection: true, Seed: 1, MaxRuns: 60, Parallel: 2,
		Out: out, Confirm: 1, ShrinkTime: 25 * time.Second, Backend: clustertest.Backend(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Detected {
		t.Fatalf("no confirmed check-then-set detection in %d runs (interrupted: %v): %d detections did not reproduce in their re-run, %d runs perturbed by the machine's load, %d errors: %+v",
			sum.Runs, sum.Interrupted, sum.Unconfirmed["check-then-set"], sum.Perturbed, sum.Errors, sum.RunErrors)
	}
	var f *Failure
	for _, x := range sum.Failures {
		if slices.Contains(x.Classes, "check-then-set") && x.Saved != "" {
			f = x
		}
	}
	if f == nil {
		t.Fatalf("no saved failure: %+v", sum.Failures)
	}
	if _, counted := sum.FirstDetection["check-then-set"]; f.Reproduced < 1 || !slices.Contains(f.Confirmed, "check-then-set") || !counted {
		t.Errorf("detection not confirmed: %+v", f)
	}
	// Shrinking must have made the plan smaller (unless it was as small as a plan gets),
	// not merely kept it.
	if f.Shrunk == nil || f.ShrinkCandidates == 0 {
		t.Fatalf("failure not shrunk: %+v", f)
	}
	o, sh := f.Original, *f.Shrunk
	minimal := o.Faults == 0 && o.Clients == 2 && o.Keys == 1
	smaller := sh.Faults < o.Faults || sh.Clients < o.Clients || sh.Keys < o.Keys || sh.Duration.D() < o.Duration.D() || sh.Ops < o.Ops
	if sh.Faults > o.Faults || sh.Clients > o.Clients || sh.Keys > o.Keys || (!smaller && !minimal) {
		t.Errorf("shrinking did not make the plan smaller: original %s, shrunk %s", o, sh)
	}
	t.Logf("found after %d runs (%s); %s reproduced %d/%d; shrunk with %d candidates, %d runs in %s: %s",
		sum.FirstDetection["check-then-set"].Runs, sum.FirstDetection["check-then-set"].After.D(), f.Target, f.Reproduced, f.Confirms,
		f.ShrinkCandidates, f.ShrinkRuns, f.ShrinkTime.D(), f.SizeNote())
	for _, name := range []string{SummaryFile, filepath.Join(f.Report, runner.ResultFile), filepath.Join(f.Report, runner.PlanFile),
		filepath.Join(f.Report, runner.HTMLFile), filepath.Join(f.Report, timeline.File)} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("missing %s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, ShrinkDir, "00000")); err == nil {
		t.Errorf("shrink candidates left behind")
	}

	// Replay the saved plan, as `locklab replay` does.
	p, err := plan.Read(filepath.Join(out, f.Saved), reg)
	if err != nil {
		t.Fatal(err)
	}
	// Replays until one reproduces it; a replay the load perturbed decides nothing and is
	// not counted among the 8.
	reproduced, decided, perturbed := false, 0, 0
	for decided < 8 && perturbed < 40 && !reproduced {
		r, err := p.Resolve(reg)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := runner.Run(clustertest.Context(t), r, runner.Options{Backend: clustertest.Backend(t)})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Perturbed != "" {
			perturbed++
			continue
		}
		decided++
		pr, _ := rep.Result.Property(f.Target)
		reproduced = pr.Verdict == lin.Illegal
	}
	if !reproduced {
		t.Errorf("the saved plan did not reproduce %s in %d replays the load did not perturb (%d perturbed):\n%s", f.Target, decided, perturbed, p.MarshalIndent())
	}
}

// TestAFailedRunKeepsItsDirectory: a plan that could not run is counted as an error, and
// its directory keeps the plan, the error and whatever the run left.
func TestAFailedRunKeepsItsDirectory(t *testing.T) {
	b, err := cluster.NewExternalBackend(cluster.ExternalOptions{Lock: []string{"127.0.0.1:1"}, Store: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := t.TempDir()
	sum, err := Search(context.Background(), SearchOptions{
		Space: Space{Impls: []string{"setnx"}, Faults: []string{NoFaults}}, Seed: 1, MaxRuns: 1, Out: out, Backend: b,
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != 1 || len(sum.RunErrors) != 1 {
		t.Fatalf("errors %d, %+v: want the one run to fail", sum.Errors, sum.RunErrors)
	}
	dir := filepath.Join(out, filepath.FromSlash(sum.RunErrors[0].Dir))
	for _, f := range []string{runner.PlanFile, ErrorFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the failed run's directory lacks %s: %v", f, err)
		}
	}
}

// TestSearchFindsFailoverClasses: random search finds each failover class with its
// points (the grant lost with a Redis Cluster's primary; the grant a replica acknowledged
// with WAIT, lost when the lagging replica is promoted) and confirms it in a re-run. A
// failover at a point makes the loss by construction once the point is reached; the
// search is bounded by its plans, and says what did not come.
func TestSearchFindsFailoverClasses(t *testing.T) {
	for _, id := range []string{"cluster-failover-loss", "failover-wait-lagging"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			reg := locks.All()
			class, err := ClassByID(reg, id)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			sum, err := Search(ctx, SearchOptions{
				Registry: reg, Class: &class, StopAtDetection: true, Seed: 1, MaxRuns: 30, Parallel: 2,
				Out: t.TempDir(), Confirm: 1, ShrinkTime: time.Second, Backend: clustertest.Backend(t),
			})
			if err != nil {
				t.Fatal(err)
			}
			if !sum.Detected {
				t.Fatalf("no confirmed %s detection in %d runs (interrupted: %v): %d detections did not reproduce, %d runs perturbed, %d errors: %+v",
					id, sum.Runs, sum.Interrupted, sum.Unconfirmed[id], sum.Perturbed, sum.Errors, sum.RunErrors)
			}
			t.Logf("detected after %d runs", sum.Runs)
		})
	}
}
