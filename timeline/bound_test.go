package timeline

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/histories/synth"
	"github.com/locklab/locklab/internal/browsertest"
	"github.com/locklab/locklab/linearizability"
)

// crowd is a run of n clients, each taking lock k{c mod keys} once in turn (4 ms apart),
// writing and releasing it.
func crowd(n, keys int) histories.History {
	var ops []histories.Op
	for c := range n {
		t, key := int64(4*c), fmt.Sprintf("k%d", c%keys)
		for _, op := range []histories.Op{acquire(2*c, c, t, t+1, int64(c+1)), write(2*c+1, c, t+1, t+2, int64(c+1), int64(c+1), histories.OK),
			release(2*c, c, t+2, t+3, histories.OK)} {
			op.Key = key
			ops = append(ops, op)
		}
	}
	return single(ops)
}

func TestManyClientsDrawAtMostTheBoundOfLanes(t *testing.T) {
	const n, keys = 200, 100
	run := Run{History: crowd(n, keys), Result: allOK()}
	m := build(run)
	if len(m.clients) != maxClientLanes {
		t.Fatalf("%d client lanes, want %d", len(m.clients), maxClientLanes)
	}
	for i, l := range m.clients {
		if l.client != i {
			t.Fatalf("lane %d is client %d: want the first clients with something in the view, by id", i, l.client)
		}
	}
	hidden := n - maxClientLanes
	if o := m.omitted; o == nil || o.clients != hidden || o.allClients != n || o.ops != 3*hidden || o.sections != hidden {
		t.Fatalf("omitted %+v, want %d of %d clients with %d operations and %d sections", m.omitted, hidden, n, 3*hidden, hidden)
	}
	// The drawn clients use k0..k64: the first maxKeysDrawn of them are drawn.
	if len(m.keys) != maxKeysDrawn || !m.keys["k0"] || !m.keys[fmt.Sprintf("k%d", maxKeysDrawn-1)] || m.keys[fmt.Sprintf("k%d", maxKeysDrawn)] {
		t.Errorf("keys drawn %v, want k0..k%d", slices.Sorted(maps.Keys(m.keys)), maxKeysDrawn-1)
	}
	for _, l := range leasesOn(m, "lock-0") {
		if !m.keys[l.key] {
			t.Errorf("a lease of %s, a key not drawn", l.key)
		}
	}
	keyed := 0 // the clients whose key is not drawn: one lease and one write each
	for c := range n {
		if c%keys >= maxKeysDrawn {
			keyed++
		}
	}
	svg := renderString(t, run)
	wellFormed(t, svg)
	if got := strings.Count(svg, `class="lane client"`); got != maxClientLanes {
		t.Errorf("%d client lanes in the picture, want %d", got, maxClientLanes)
	}
	for _, want := range []string{
		fmt.Sprintf("not drawn: %d of %d clients, with %d operations, %d critical sections in the view", hidden, n, 3*hidden, hidden),
		fmt.Sprintf("not drawn on the server and store lanes: %d of %d keys, with %d leases and %d store operations in the view",
			keys-maxKeysDrawn, keys, keyed, keyed),
	} {
		if !contains(svg, want) {
			t.Errorf("no line %q", want)
		}
	}
}

// The clients the first violation names keep their lanes, whatever their ids.
func TestViolationsClientsKeepTheirLanes(t *testing.T) {
	h := crowd(200, 200)
	h.Ops = append(h.Ops, acquire(1000, 150, 500, 501, 0), acquire(1001, 199, 502, 503, 0)) // two grants of k0
	res := allOK()
	res.Properties[0] = linearizability.PropertyResult{Property: linearizability.P1, Verdict: linearizability.Illegal, At: 503 * ms, Until: 504 * ms,
		Explanation: `process 1001 (client 199) acquired lock "k0" at 0.503 s while process 1000 (client 150) had believed it held "k0" since 0.501 s`}
	m := build(Run{History: h, Result: res})
	if len(m.clients) > maxClientLanes {
		t.Errorf("%d lanes", len(m.clients))
	}
	for _, c := range []int{150, 199} {
		if m.client(c) == nil {
			t.Errorf("client %d, named by the violation, has no lane", c)
		}
	}
	if !m.keys["k0"] {
		t.Error("the violation's key is not drawn")
	}
}

// Of the clients that believed they held a lock when the violation started, those of its
// key come first.
func TestViolationsBelieversOfItsKeyFirst(t *testing.T) {
	h := crowd(200, 200)
	for c := range 100 { // beliefs of other keys to the end of the run
		op := acquire(1000+c, c, 1000, 1001, 0)
		op.Key = fmt.Sprintf("x%d", c)
		h.Ops = append(h.Ops, op)
	}
	h.Ops = append(h.Ops, acquire(1200, 120, 1002, 1003, 0), acquire(1201, 150, 1004, 1005, 0))
	res := allOK()
	res.Properties[0] = linearizability.PropertyResult{Property: linearizability.P1, Verdict: linearizability.Illegal, At: 1005 * ms, Until: 1006 * ms,
		Explanation: `process 1201 (client 150) acquired lock "k0" at 1.005 s while another process believed it held it`}
	m := build(Run{History: h, Result: res})
	if m.client(150) == nil || m.client(120) == nil {
		t.Errorf("lanes %d..%d: want the named client 150 and client 120, which believed it held k0", m.clients[0].client, m.clients[len(m.clients)-1].client)
	}
}

// Clients with a fault in the view come before those that only worked; the faults of
// those left out are counted.
func TestFaultedClientsFirst(t *testing.T) {
	h := crowd(200, 10)
	for c := 100; c < 100+maxClientLanes+5; c++ {
		h.Faults = append(h.Faults, histories.FaultWindow{Kind: "client-pause", Target: fmt.Sprintf("client:%d", c), Start: 10 * ms, End: 20 * ms})
	}
	m := build(Run{History: h})
	if first, last := m.clients[0].client, m.clients[len(m.clients)-1].client; len(m.clients) != maxClientLanes || first != 100 || last != 100+maxClientLanes-1 {
		t.Errorf("%d lanes, clients %d..%d, want the first %d faulted from 100", len(m.clients), first, last, maxClientLanes)
	}
	if m.omitted.faults != 5 || !contains(m.omitted.lines()[0], ", 5 faults in the view") {
		t.Errorf("omitted %+v: %q", *m.omitted, m.omitted.lines())
	}
}

func TestNamedClientsAndKeys(t *testing.T) {
	text := `processes 2 (client 1) and 30 (client 17) were both granted fence 3 for lock "k\"0" (client x)`
	if got := namedClients(text); !slices.Equal(got, []int{1, 17}) {
		t.Errorf("clients %v", got)
	}
	if got := quoted(text + ` "unterminated`); !slices.Equal(got, []string{`k"0`}) {
		t.Errorf("keys %v", got)
	}
}

// busy is a legal run of 20,000 operations by 4 clients over about 7 s: some 4,000 of
// them fall in the 1.5 s a run without faults is drawn over.
func busy(t testing.TB) histories.History {
	return legal(t, synth.Legal{Seed: 2, Clients: 4, Keys: 1, Ops: 20000, Unknown: 0.01, Fencing: "full"})
}

func TestBusyRunNarrowedAroundItsStart(t *testing.T) {
	run := Run{History: busy(t), Result: allOK()}
	m := build(run)
	ops := run.History.Ops
	if m.view.from != 0 || m.view.to >= quietWindow {
		t.Fatalf("view %+v, want the start of the run, narrower than %d", m.view, quietWindow)
	}
	if n := marksIn(ops, m.view); n > maxOpsDrawn || marksIn(ops, span{0, m.view.to + 1}) <= maxOpsDrawn {
		t.Errorf("%d marks in the view %+v: want at most %d, and more a nanosecond later", n, m.view, maxOpsDrawn)
	}
	if m.before != nil || m.after == nil {
		t.Fatalf("summaries before %v after %v, want after only", m.before, m.after)
	}
	if m.after.ops+overlapping(ops, m.view) != len(ops) {
		t.Errorf("%d operations after the view and %d in it, of %d", m.after.ops, overlapping(ops, m.view), len(ops))
	}
	svg := renderString(t, run)
	wellFormed(t, svg)
	if !contains(svg, m.after.String()) || !contains(svg, "narrowed around the start of the run to hold at most 2000 operations") {
		t.Error("no summary line or no note on the narrowing")
	}
	if n := strings.Count(svg, `class="mark`); n > 2*maxOpsDrawn {
		t.Errorf("%d marks drawn", n)
	}
}

// A violation that lasts 2 s holds more than the budget: the view is narrowed around its
// start.
func TestBusyRunNarrowedAroundTheViolation(t *testing.T) {
	h := busy(t)
	at := h.Ops[len(h.Ops)/2].Return
	res := allOK()
	res.Properties[0] = linearizability.PropertyResult{Property: linearizability.P1, Verdict: linearizability.Illegal, At: at, Until: at + 2000*ms,
		Explanation: `process 7 (client 3) acquired lock "k0" while process 2 (client 2) believed it held it`}
	run := Run{History: h, Result: res}
	m := build(run)
	if !m.view.contains(at) || m.before == nil || m.after == nil {
		t.Fatalf("view %+v, before %v, after %v: want the violation at %d, cropped on both sides", m.view, m.before, m.after, at)
	}
	if n := marksIn(h.Ops, m.view); n > maxOpsDrawn {
		t.Errorf("%d marks in the view", n)
	}
	if m.before.ops+m.after.ops+overlapping(h.Ops, m.view) != len(h.Ops) {
		t.Errorf("%d before, %d after, %d in the view, of %d", m.before.ops, m.after.ops, overlapping(h.Ops, m.view), len(h.Ops))
	}
	svg := renderString(t, run)
	if !contains(svg, `class="band first"`) || !contains(svg, "narrowed around the first violation") {
		t.Error("no violation band or no note")
	}
}

// overlapping counts the operations that overlap s: those the picture draws in part.
func overlapping(ops []histories.Op, s span) int {
	n := 0
	for _, op := range ops {
		if s.overlaps(op.Call, op.Return) {
			n++
		}
	}
	return n
}

// The narrowest view is drawn even when more operations than the budget are in flight
// at the moment the story turns on.
func TestNarrowestView(t *testing.T) {
	var ops []histories.Op
	for i := range maxOpsDrawn + 10 {
		ops = append(ops, write(i, i%4, 0, 10, 1, 0, histories.OK)) // all at 0
	}
	view, ok := narrow(ops, span{0, 10 * ms}, focus{span: span{0, 10 * ms}})
	if !ok || view.to-view.from < minView/2 || !view.contains(0) {
		t.Errorf("view %+v (narrowed %v), want the moment 0, %d ns at least", view, ok, minView/2)
	}
}

// TestBoundedPictureInBrowser: a synthetic history of 200,000 operations by 1,000
// clients draws a picture that opens in Chromium, with what it left out said.
func TestBoundedPictureInBrowser(t *testing.T) {
	h := legal(t, synth.Legal{Seed: 3, Clients: 1000, Keys: 250, Ops: 200_000, Unknown: 0.01, Fencing: "full"})
	path := filepath.Join(t.TempDir(), File)
	if err := Write(path, Run{History: h, Result: allOK()}); err != nil {
		t.Fatal(err)
	}
	b := browsertest.Open(t, path)
	b.MustHave("svg#timeline", "g.lane.client", "g.lane.server", "g.lease", "g.crop text.omitted", "g.legend")
	if n := b.Count("g.lane.client"); n != maxClientLanes {
		t.Errorf("%d client lanes, want %d", n, maxClientLanes)
	}
	b.Screenshot()
}
