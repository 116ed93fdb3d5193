package runner

import "context"

// Slots bounds how many runs have servers and clients at once (a campaign's --parallel),
// their checks left out: a run holds a slot from the start of its servers until they are
// stopped, and is checked after it gave the slot back, so that a check that takes its
// whole timeout keeps no other plan from running. nil bounds nothing.
type Slots struct{ c chan struct{} }

// NewSlots makes n slots (at least one).
func NewSlots(n int) *Slots { return &Slots{c: make(chan struct{}, max(n, 1))} }

// take waits for a free slot, or for ctx to end.
func (s *Slots) take(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case s.c <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// give hands a slot back.
func (s *Slots) give() {
	if s != nil {
		<-s.c
	}
}
