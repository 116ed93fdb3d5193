package synth

import (
	"reflect"
	"testing"

	"github.com/locklab/locklab/histories"
)

func TestLegalHistoryHasWhatItSays(t *testing.T) {
	l := Legal{Seed: 3, Clients: 8, Keys: 2, Ops: 5000, Unknown: 0.05, Fencing: "full"}
	h, err := l.History()
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Ops) != l.Ops {
		t.Fatalf("%d ops, want %d", len(h.Ops), l.Ops)
	}
	keys, unknown, kinds := map[string]bool{}, 0, map[histories.Kind]int{}
	for i, op := range h.Ops {
		if err := op.Validate(); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
		if i > 0 && op.Call < h.Ops[i-1].Call {
			t.Fatalf("op %d called before op %d", i, i-1)
		}
		keys[op.Key] = true
		kinds[op.Kind]++
		if op.Outcome == histories.Unknown {
			unknown++
		}
	}
	if len(keys) != 2 || unknown == 0 || kinds[histories.Acquire] == 0 || kinds[histories.Write] == 0 || kinds[histories.Release] == 0 {
		t.Fatalf("keys %v, %d unknown, kinds %v", keys, unknown, kinds)
	}
	again, _ := l.History()
	if !reflect.DeepEqual(again, h) {
		t.Fatal("the same seed gave another history")
	}
}

func TestLegalRefusesBadConfig(t *testing.T) {
	for _, l := range []Legal{
		{Clients: 0, Keys: 1, Fencing: "off"},
		{Clients: 1, Keys: 0, Fencing: "off"},
		{Clients: 1, Keys: 1, Unknown: 2, Fencing: "off"},
		{Clients: 1, Keys: 1, Fencing: "sometimes"},
	} {
		if _, err := l.History(); err == nil {
			t.Errorf("%+v: no error", l)
		}
	}
}
