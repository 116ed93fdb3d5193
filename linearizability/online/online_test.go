package online_test

import (
	"path/filepath"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/histories/synth"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/linearizability/online"
)

// sameVerdicts fails t unless the online check of h, replayed advancing every `every`
// operations, gives every property the verdict the offline check gives. It returns the
// replay's status.
func sameVerdicts(t interface {
	Helper()
	Fatalf(string, ...any)
}, h histories.History, every int) online.Status {
	t.Helper()
	opts := linearizability.Options{Timeout: 20 * time.Second}
	want, err := linearizability.Check(h, opts)
	if err != nil {
		t.Fatalf("offline check: %v", err)
	}
	// Windows as small as the cuts allow, and the default's.
	var first online.Status
	for i, min := range []int{1, 0} {
		got, st, err := online.Replay(h, every, online.Options{Check: opts, Workers: 2, MinWindow: min})
		if err != nil {
			t.Fatalf("online check: %v", err)
		}
		for _, w := range want.Properties {
			g, _ := got.Property(w.Property)
			if g.Verdict != w.Verdict {
				t.Fatalf("min window %d: %s: online %s (%s), offline %s (%s); %d windows, largest %d ops",
					min, w.Property, g.Verdict, g.Explanation, w.Verdict, w.Explanation, st.Windows, st.LargestWindow)
			}
		}
		if got.Verdict != want.Verdict {
			t.Fatalf("min window %d: overall: online %s, offline %s", min, got.Verdict, want.Verdict)
		}
		if i == 0 {
			first = st
		}
	}
	return first
}

// TestCorpusSameVerdicts replays every recorded run of the regression corpus.
func TestCorpusSameVerdicts(t *testing.T) {
	dirs, err := filepath.Glob("../testdata/corpus/*/history.jsonl")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			h, err := histories.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if hasJobs(h) {
				if _, _, err := online.Replay(h, 1, online.Options{}); err == nil {
					t.Fatal("a job-queue history was checked online without an error")
				}
				return
			}
			for _, every := range []int{1, 7, 1 << 30} {
				st := sameVerdicts(t, h, every)
				if every == 1 && st.Windows < 2 && len(h.Ops) > 100 {
					t.Logf("%d ops in %d windows", len(h.Ops), st.Windows)
				}
			}
		})
	}
}

func hasJobs(h histories.History) bool {
	for _, op := range h.Ops {
		if op.Kind.IsJob() {
			return true
		}
	}
	return false
}

// TestSynthSameVerdicts replays synthetic histories: legal ones, with unknown outcomes, in
// every fencing mode, and adversarial ones.
func TestSynthSameVerdicts(t *testing.T) {
	for _, fencing := range []string{"off", "writes", "full"} {
		for _, unknown := range []float64{0, 0.05} {
			h, err := synth.Legal{Seed: 3, Clients: 8, Keys: 4, Ops: 4000, Unknown: unknown, Fencing: fencing}.History()
			if err != nil {
				t.Fatal(err)
			}
			st := sameVerdicts(t, h, 3)
			if unknown == 0 && st.Windows < 100 {
				t.Errorf("fencing %s: 4000 legal operations in %d windows: the cuts do not happen", fencing, st.Windows)
			}
		}
		h, err := synth.Adversarial{Concurrent: 6, Keys: 3, Fencing: fencing}.History()
		if err != nil {
			t.Fatal(err)
		}
		sameVerdicts(t, h, 1)
	}
}

// TestCutsBoundWhatIsKept: a long legal history is checked in windows that stay small, so
// what the checker keeps does not grow with the history.
func TestCutsBoundWhatIsKept(t *testing.T) {
	h, err := synth.Legal{Seed: 9, Clients: 8, Keys: 8, Ops: 40000, Fencing: "full"}.History()
	if err != nil {
		t.Fatal(err)
	}
	res, st, err := online.Replay(h, 16, online.Options{})
	if err != nil || res.Verdict != linearizability.OK {
		t.Fatalf("%v %v", res, err)
	}
	// A window is cut once it holds 256 operations (the default) at the first instant
	// that allows it: with 4 clients on a key that comes within a few operations.
	if st.LargestWindow > 400 || st.Windows < int64(len(h.Ops)/400) {
		t.Errorf("%d windows, the largest %d operations, of %d operations: windows grow with the history", st.Windows, st.LargestWindow, len(h.Ops))
	}
	if st.Pending != 0 || st.Queued != 0 {
		t.Errorf("after Close: %d pending, %d queued", st.Pending, st.Queued)
	}
}

// TestRandomHistoriesSameVerdicts: simulated runs of a lock service and a store, with the
// bugs and faults that break each property (leases that expire under a paused holder, a
// release that frees another's lease, fences that restart, a store that ignores fences,
// outcomes unknown, crashes, faults that hold commands back), give the same verdicts
// online and offline, whatever the history and however often the checker advances.
func TestRandomHistoriesSameVerdicts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := simulate(t)
		sameVerdicts(t, h, rapid.IntRange(1, 20).Draw(t, "every"))
	})
}

// TestLateOperationIsAnError: an operation added after its key was cut past its call is
// reported, never silently dropped.
func TestLateOperationIsAnError(t *testing.T) {
	c, err := online.New(histories.Meta{Fencing: "off", TTL: time.Second}, online.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms := int64(time.Millisecond)
	ok := func(call, ret int64, kind histories.Kind) histories.Op {
		return histories.Op{Process: 0, Key: "k", Kind: kind, Outcome: histories.OK, Call: call * ms, Return: ret * ms}
	}
	for _, op := range []histories.Op{ok(1, 2, histories.Acquire), ok(3, 4, histories.Release)} {
		if err := c.Add(op); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(10*ms, nil)
	if err := c.Add(ok(5, 11, histories.Acquire)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Close(nil); err == nil {
		t.Fatal("an operation called before the cut and added after it gave no error")
	}
}

// TestViolationReportedAtOnce: a violation in the middle of a long history is reported
// by its window, before the history ends, with the window's operations.
func TestViolationReportedAtOnce(t *testing.T) {
	h, err := synth.Legal{Seed: 5, Clients: 4, Keys: 2, Ops: 6000, Fencing: "off"}.History()
	if err != nil {
		t.Fatal(err)
	}
	// Plant a read of a value nobody wrote in the middle.
	var planted int64
	for i := len(h.Ops) / 2; i < len(h.Ops); i++ {
		if h.Ops[i].Kind == histories.Read && h.Ops[i].Outcome == histories.OK {
			h.Ops[i].Output.Value = -7
			planted = h.Ops[i].Return
			break
		}
	}
	var found []online.Violation
	res, _, err := online.Replay(h, 1, online.Options{Workers: 1, MinWindow: 1, Violation: func(v online.Violation) { found = append(found, v) }})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := res.Property(linearizability.P2); p.Verdict != linearizability.Illegal {
		t.Fatalf("P2 %s, want illegal", p.Verdict)
	}
	if len(found) != 1 {
		t.Fatalf("%d violations reported, want 1", len(found))
	}
	w := found[0].Window
	if first, last := w.Ops[0].Call, w.Ops[len(w.Ops)-1].Return; planted < first || planted > last || len(w.Ops) > 100 {
		t.Errorf("window [%d, %d] of %d ops does not hold the planted read at %d, or is not small", first, last, len(w.Ops), planted)
	}
}
