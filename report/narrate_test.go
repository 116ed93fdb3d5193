package report

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
)

func TestNarrateTellsTheProtagonistsAndSummarisesTheRest(t *testing.T) {
	ms := func(n int) int64 { return int64(n) * int64(time.Millisecond) }
	ttl := 500 * time.Millisecond
	ops := []histories.Op{
		{Client: 0, Process: 0, Key: "k0", Kind: histories.Acquire, Input: histories.Input{TTL: ttl}, Output: histories.Output{Fence: 1}, Outcome: histories.OK, Call: ms(1), Return: ms(2)},
	}
	// Client 1 goes round and round while client 0 is paused.
	for i := range 5 {
		at := ms(510 + 30*i)
		ops = append(ops,
			histories.Op{Client: 1, Process: 1, Key: "k0", Kind: histories.Acquire, Input: histories.Input{TTL: ttl}, Output: histories.Output{Fence: int64(2 + i)}, Outcome: histories.OK, Call: at, Return: at + ms(1)},
			histories.Op{Client: 1, Process: 2, Key: "k0", Kind: histories.Write, Input: histories.Input{Value: int64(i + 1), Base: int64(i), Fence: int64(2 + i)}, Outcome: histories.OK, Call: at + ms(5), Return: at + ms(6)},
			histories.Op{Client: 1, Process: 1, Key: "k0", Kind: histories.Release, Outcome: histories.OK, Call: at + ms(7), Return: at + ms(8)},
		)
	}
	ops = append(ops, histories.Op{Client: 0, Process: 3, Key: "k0", Kind: histories.Write, Input: histories.Input{Value: 1, Base: 0, Fence: 1}, Outcome: histories.Fail, Call: ms(1500), Return: ms(1501)})
	histories.SortOps(ops)
	h := histories.History{
		Meta:   histories.Meta{Fencing: "full", TTL: ttl},
		Ops:    ops,
		Faults: []histories.FaultWindow{{Kind: "client-pause", Target: "client:0", Start: ms(3), End: ms(1500), Detail: "1.5s at before-write"}},
	}
	var b strings.Builder
	Narrate(&b, h)
	story := b.String()
	for _, want := range []string{
		"client 0 acquired k0 with fence 1: lease 500ms, until about 0.501 s if the server's clock keeps time",
		"client-pause on client:0 begins (1.5s at before-write)",
		"client 1 acquired k0 with fence 2",
		"more steps of other clients",
		"client 1 writes 5 over the 4 it read with fence 6: the store accepts",
		"client 0 writes 1 over the 0 it read with fence 1: the store refuses the stale fence",
	} {
		if !strings.Contains(story, want) {
			t.Errorf("narration lacks %q:\n%s", want, story)
		}
	}
	if strings.Contains(story, "client 1 writes 3 over") {
		t.Errorf("narration should summarise client 1's middle rounds:\n%s", story)
	}
}
