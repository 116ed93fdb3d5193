package online_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/histories/synth"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/linearizability/online"
)

// sorted checks h's operations, in call order, through online.Sorted.
func sorted(h histories.History) (linearizability.Result, online.Status, error) {
	return online.Sorted(h.Meta, h.Faults, 64, online.Options{Workers: 2}, func(yield func(histories.Op) error) error {
		for _, op := range h.Ops {
			if err := yield(op); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestSortedSameVerdicts: a history of many reader batches (the reader's batches are
// reused once added) gives the offline check's verdicts, and a planted illegal read is
// found.
func TestSortedSameVerdicts(t *testing.T) {
	h, err := synth.Legal{Seed: 3, Clients: 40, Keys: 10, Ops: 30_000, Unknown: 0.01, Fencing: "full"}.History()
	if err != nil {
		t.Fatal(err)
	}
	histories.SortOps(h.Ops)
	illegal := histories.History{Meta: h.Meta, Ops: slices.Clone(h.Ops)}
	for i := len(illegal.Ops) / 2; i < len(illegal.Ops); i++ {
		if op := &illegal.Ops[i]; op.Kind == histories.Read && op.Outcome == histories.OK {
			op.Output.Value += 1000 // a value nobody wrote
			break
		}
	}
	for name, h := range map[string]histories.History{"legal": h, "illegal": illegal} {
		want, err := linearizability.Check(h, linearizability.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := sorted(h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Verdict != want.Verdict || st.Ops != int64(len(h.Ops)) {
			t.Fatalf("%s: Sorted says %s after %d operations, the offline check %s", name, got.Verdict, st.Ops, want.Verdict)
		}
	}
	if res, _, _ := sorted(illegal); !res.Violation() {
		t.Fatalf("the planted read was not found: %s", res.String())
	}
}

// TestSortedNamesTheOperation: an operation out of call order, or invalid, is an error
// that says which one (counting from 1) and stops the read.
func TestSortedNamesTheOperation(t *testing.T) {
	h, err := synth.Legal{Seed: 1, Clients: 4, Keys: 2, Ops: 5_000, Fencing: "full"}.History()
	if err != nil {
		t.Fatal(err)
	}
	histories.SortOps(h.Ops)
	late := slices.Clone(h.Ops)
	late[2999].Call = late[2997].Call - 1
	late[2999].Return = max(late[2999].Return, late[2999].Call)
	bad := slices.Clone(h.Ops)
	bad[2999].Process = -1
	for _, c := range []struct {
		ops  []histories.Op
		want string
	}{
		{late, "operation 3000 called at"},
		{bad, "operation 3000: negative process"},
	} {
		_, st, err := sorted(histories.History{Meta: h.Meta, Ops: c.ops})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("error %v, want one saying %q", err, c.want)
		}
		if st.Ops > 3000 {
			t.Fatalf("%d operations added after the error at the 3,000th", st.Ops)
		}
	}
}
