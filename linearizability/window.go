package linearizability

import (
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/model"
)

// A window is a stretch of one key's history checked on its own, while the run goes on
// (package linearizability/online, whose Cutter says where a window may end): at an
// instant t that no operation of the window spans, so that every order of the whole
// history is an order of the window followed by an order of the rest, and at which every
// property's state is the same in each of those orders, so that the next window can start
// from it (Carry). Checking the windows one after the other then gives the verdicts of
// checking the whole history at once:
//
//   - P1: nobody believes at t, so the lock is free in every order. An operation of
//     unknown outcome ends no belief it did not end by its call (an extend's keeps it, a
//     release's is over) and starts none, so it is placed in its window.
//   - P3: the largest fence granted so far, which every legal order grants last.
//   - P6: a lease's answers come while its holder believes; nobody does at t.
//   - L1: the moments the key's earlier holders let go (Carry keeps the two that can
//     matter: the latest deadline and the latest moment), and its first attempt; an
//     acquire or extend of unknown outcome may take effect until a fault that held its
//     command back ends, so no window ends after one while such a fault is active.
//   - P2: the store's value and largest fence, the same in every order when each store
//     operation of unknown outcome is inert (model.Inert); any other may still take
//     effect later, as Porcupine may place it offline, so its window lasts until the
//     history ends.
//
// Job operations (P4, P5) are about the whole run's ledger and have no windows.

// Carry is what the windows of one key before a window left behind: the state its
// properties start from. The zero Carry is a key nothing happened to yet.
type Carry struct {
	Register  model.RegisterState // P2: the store's state
	LastFence int64               // P3: the largest fence granted
	// L1: when the key was first tried, and the two let-go moments of its earlier holders
	// that can excuse a later refusal (the latest deadline, the latest moment).
	attempted bool
	firstTry  int64
	letGos    []letGo
}

func (c Carry) zero() bool {
	return c.Register == (model.RegisterState{}) && c.LastFence == 0 && !c.attempted && len(c.letGos) == 0
}

// CarryAfter is what window h, one key's window that Cut allowed, leaves behind for the
// next one, given what the windows before it left (from).
func CarryAfter(h histories.History, from Carry) Carry {
	mode, _ := model.ParseFencing(h.Meta.Fencing)
	next := from
	var stores []model.RegisterInput
	var outs []model.RegisterOutput
	for _, op := range h.Ops {
		switch {
		case op.Kind.IsStore():
			stores = append(stores, op.RegisterInput())
			outs = append(outs, model.RegisterOutput{Outcome: model.Outcome(op.Outcome), Value: op.Output.Value})
		case op.Kind == histories.Acquire && op.Outcome == histories.OK:
			next.LastFence = max(next.LastFence, op.Output.Fence)
		}
	}
	if len(stores) > 0 {
		next.Register = model.RegisterAfter(mode, from.Register, stores, outs)
	}
	if t, ok := firstAttempt(h); ok && (!next.attempted || t < next.firstTry) {
		next.attempted, next.firstTry = true, t
	}
	gs := append([]letGo(nil), from.letGos...)
	for _, bs := range beliefs(h) {
		gs = append(gs, endedLetGos(h, bs)...)
	}
	for _, us := range unknownLetGos(h) {
		gs = append(gs, us...)
	}
	next.letGos = frontierOf(gs)
	return next
}

// firstAttempt is when the history's first acquire (or extend of unknown outcome) was
// called: before it nobody can have held the lock.
func firstAttempt(h histories.History) (int64, bool) {
	var t int64
	found := false
	for _, op := range h.Ops {
		if op.Kind == histories.Acquire || (op.Kind == histories.Extend && op.Outcome == histories.Unknown) {
			if !found || op.Call < t {
				t, found = op.Call, true
			}
		}
	}
	return t, found
}

// frontierOf keeps of gs the two that can matter to any later refusal: at + max(g.ttl,
// ttl) is largest where at + g.ttl is or where at is.
func frontierOf(gs []letGo) []letGo {
	if len(gs) == 0 {
		return nil
	}
	f := newFrontier(gs)
	a, b := gs[f.byDeadline[len(gs)-1]], gs[f.byAt[len(gs)-1]]
	a.op, b.op = -1, -1 // an index into an earlier window's history
	if a == b {
		return []letGo{a}
	}
	return []letGo{a, b}
}

// carriedBest is the carried let-go moment that lets a lease live longest for a refusal
// with ttl.
func (c Carry) carriedBest(ttl time.Duration) (letGo, bool) {
	if len(c.letGos) == 0 {
		return letGo{}, false
	}
	return newFrontier(c.letGos).best(c.letGos, len(c.letGos), ttl)
}
