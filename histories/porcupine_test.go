package histories

import (
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/model"
)

// rmwHistory: client 0 (lock process 0, store process 4) acquires; its read has an
// unknown outcome so its store operations go on as process 5, which writes; lock process 0
// releases. Client 1 (process 1) then acquires and its acquire is unknown, so it goes on
// as process 3 and acquires again. This is how histories.Stream numbers processes.
func rmwHistory() History {
	return History{
		Meta: Meta{Fencing: "full"},
		Ops: []Op{
			{Process: 0, Client: 0, Key: "k", Kind: Acquire, Outcome: OK, Output: Output{Fence: 1}, Call: 0, Return: 10},
			{Process: 4, Client: 0, Key: "s", Kind: Read, Input: Input{Fence: 1}, Outcome: Unknown, Call: 20, Return: 30},
			{Process: 5, Client: 0, Key: "s", Kind: Write, Input: Input{Fence: 1, Value: 1, Base: 0}, Outcome: OK, Call: 40, Return: 50},
			{Process: 0, Client: 0, Key: "k", Kind: Release, Outcome: OK, Call: 60, Return: 70},
			{Process: 1, Client: 1, Key: "k", Kind: Acquire, Outcome: Unknown, Call: 65, Return: 75},
			{Process: 3, Client: 1, Key: "k", Kind: Acquire, Outcome: OK, Output: Output{Fence: 2}, Call: 80, Return: 90},
			{Process: 3, Client: 1, Key: "k", Kind: Crash, Outcome: OK, Call: 95, Return: 95},
		},
	}
}

func TestLanes(t *testing.T) {
	got := Lanes(rmwHistory().Ops)
	want := map[int]int{0: 0, 4: 1, 5: 2, 1: 3, 3: 4}
	for p, l := range want {
		if got[p] != l {
			t.Errorf("lane of process %d = %d, want %d", p, got[p], l)
		}
	}
}

func TestLockOperations(t *testing.T) {
	h := rmwHistory()
	ops := LockOperations(h)
	if len(ops) != 4 {
		t.Fatalf("got %d lock operations, want 4 (the unknown acquire left out)", len(ops))
	}
	release := ops[1]
	if in := release.Input.(model.LockInput); in.Kind != model.Release || in.Process != 0 || in.Key != "k" {
		t.Errorf("release input = %+v, want a release of k by process 0", in)
	}
	if m := release.Metadata.(OpMeta); m.Index != 3 || m.Process != 0 || m.Client != 0 {
		t.Errorf("release metadata = %+v, want op 3 of process 0, client 0", m)
	}
	if release.ClientId != 0 || release.Return != 70 {
		t.Errorf("release lane %d return %d, want lane 0 return 70", release.ClientId, release.Return)
	}
	for _, op := range ops {
		if op.Metadata.(OpMeta).Outcome == Unknown {
			t.Errorf("unknown acquire %+v kept: it changes no belief", op)
		}
	}
	if out := ops[2].Output.(model.LockOutput); out.Outcome != model.OK || out.Fence != 2 {
		t.Errorf("acquire output = %+v, want ok with fence 2", out)
	}
	// The unknown read did not change the lock process: the release is the holder's.
	if !porcupine.CheckOperations(model.LockModel(model.LockOptions{Exclusion: true}), ops) {
		t.Error("the converted lock history should be legal")
	}
}

func TestFenceOperations(t *testing.T) {
	ops := FenceOperations(rmwHistory())
	if len(ops) != 2 {
		t.Fatalf("got %d fence operations, want the 2 acquires ok", len(ops))
	}
	for i, want := range []int64{1, 2} {
		if got := ops[i].Output.(model.LockOutput).Fence; got != want {
			t.Errorf("fence %d = %d, want %d", i, got, want)
		}
	}
}

func TestStoreOperations(t *testing.T) {
	ops := StoreOperations(rmwHistory())
	if len(ops) != 2 {
		t.Fatalf("got %d store operations, want 2", len(ops))
	}
	if ops[0].Return != Infinity {
		t.Errorf("unknown read returns at %d, want Infinity", ops[0].Return)
	}
	wantIn := model.RegisterInput{Key: "s", Kind: model.Write, Process: 5, Fence: 1, Value: 1, Base: 0}
	if in := ops[1].Input.(model.RegisterInput); in != wantIn {
		t.Errorf("write input = %+v, want %+v", in, wantIn)
	}
	if !porcupine.CheckOperations(model.RegisterModel(model.FencingFull), ops) {
		t.Error("the converted store history should be legal")
	}
}

func TestOpMetaString(t *testing.T) {
	m := OpMeta{Index: 4, Process: 1, Client: 1, Call: 65_000_000, Return: 1_075_000_000, Outcome: Unknown}
	if got, want := m.String(), "op 4: process 1 (client 1), called at 0.065 s, gave up at 1.075 s with outcome unknown"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
