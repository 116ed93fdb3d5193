package runner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/timeline"
)

// TestEveryClientOfAPlanHasALane: the timeline bounds its client lanes, but never below
// what a plan may run (plan.MaxClients workers and a job queue's producer), so that a
// recorded run's picture keeps a lane per client.
func TestEveryClientOfAPlanHasALane(t *testing.T) {
	var ops []histories.Op
	for c := range plan.MaxClients + 1 {
		at := int64(c) * 1e6
		ops = append(ops, histories.Op{Process: c, Client: c, Key: "k0", Kind: histories.Acquire, Outcome: histories.Fail, Call: at, Return: at + 1e5})
	}
	var b bytes.Buffer
	if err := timeline.Render(&b, timeline.Run{History: histories.History{Meta: histories.Meta{Fencing: "off"}, Ops: ops}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `class="lane client"`); n != plan.MaxClients+1 {
		t.Errorf("%d client lanes for %d clients", n, plan.MaxClients+1)
	}
	if strings.Contains(b.String(), `class="omitted"`) {
		t.Error("the picture of a plan's clients leaves some out")
	}
}
