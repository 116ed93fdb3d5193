package linearizability

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/histories/synth"
)

// TestTimeoutIsUnknownAndNamesTheKey: a search that runs out of time makes its property
// unknown, never ok, and the result names the key it could not decide, not the others.
func TestTimeoutIsUnknownAndNamesTheKey(t *testing.T) {
	h, err := synth.Adversarial{Concurrent: 40, Keys: 5, Fencing: "off"}.History()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(h, Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := res.Property(P2)
	if res.Verdict != Unknown || p2.Verdict != Unknown {
		t.Fatalf("verdict %s, P2 %s: want unknown\n%s", res.Verdict, p2.Verdict, res)
	}
	if len(p2.Undecided) != 1 || p2.Undecided[0] != (Undecided{Key: "k0", Ops: 41, Unknown: 40}) {
		t.Fatalf("undecided %+v, want key k0 alone", p2.Undecided)
	}
	for _, want := range []string{`key "k0" (41 ops, 40 of unknown outcome)`, "the other 4 keys are linearizable"} {
		if !strings.Contains(p2.Explanation, want) {
			t.Errorf("explanation %q lacks %q", p2.Explanation, want)
		}
	}
	for _, p := range []Property{P1, P3} {
		if pr, _ := res.Property(p); pr.Verdict != OK {
			t.Errorf("%s %s: the legal keys' lock history is decided ok", p, pr.Verdict)
		}
	}
}

// TestEachPropertyHasItsOwnTimeout: on one core the adversarial key of P2, the largest
// partition, is searched first and spends its whole timeout; P1's and P3's partitions,
// queued behind it, still get a timeout of their own and are decided ok (with one
// deadline for all they would start after it had passed, and be unknown).
func TestEachPropertyHasItsOwnTimeout(t *testing.T) {
	h, err := synth.Adversarial{Concurrent: 40, Keys: 5, Fencing: "off"}.History()
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one worker: the searches run one after another
	res, err := Check(h, Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if p2, _ := res.Property(P2); p2.Verdict != Unknown {
		t.Fatalf("P2 %s: the adversarial key cannot be decided in 200ms\n%s", p2.Verdict, res)
	}
	for _, p := range []Property{P1, P3} {
		if pr, _ := res.Property(p); pr.Verdict != OK {
			t.Errorf("%s %s (%s): searched after P2's timeout, it still has its own", p, pr.Verdict, pr.Explanation)
		}
	}
}

// TestAdversarialDecidedIsIllegal: the same shape small enough to decide is illegal.
func TestAdversarialDecidedIsIllegal(t *testing.T) {
	h, err := synth.Adversarial{Concurrent: 6, Keys: 3, Fencing: "full"}.History()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p2, _ := res.Property(P2); p2.Verdict != Illegal || !strings.Contains(p2.Explanation, "read -1") {
		t.Fatalf("P2 %s: %s", p2.Verdict, p2.Explanation)
	}
}

// TestPartitionsAreCheckedAtScale: many keys, searched in parallel, all decided ok.
func TestPartitionsAreCheckedAtScale(t *testing.T) {
	h, err := synth.Legal{Seed: 2, Clients: 400, Keys: 100, Ops: 40_000, Unknown: 0.02, Fencing: "full"}.History()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != OK {
		t.Fatalf("%s", res)
	}
	if p1, _ := res.Property(P1); p1.Ops < 20_000 {
		t.Fatalf("P1 checked on %d ops only", p1.Ops)
	}
}

// TestOneBadKeyAmongMany: a violation on one key of a hundred is found and explained,
// whatever order the partitions were searched in.
func TestOneBadKeyAmongMany(t *testing.T) {
	h, err := synth.Legal{Seed: 4, Clients: 400, Keys: 100, Ops: 40_000, Fencing: "off"}.History()
	if err != nil {
		t.Fatal(err)
	}
	bad := -1
	for i, op := range h.Ops {
		if op.Key == "k57" && op.Kind == histories.Read && op.Output.Value > 2 {
			h.Ops[i].Output.Value += 1000 // a value nobody wrote
			bad = i
			break
		}
	}
	res, err := Check(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := res.Property(P2)
	if p2.Verdict != Illegal || p2.At != h.Ops[bad].Call || !strings.Contains(p2.Explanation, `"k57"`) {
		t.Fatalf("P2 %s at %d (want %d): %s", p2.Verdict, p2.At, h.Ops[bad].Call, p2.Explanation)
	}
}
