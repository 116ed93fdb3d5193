package runner

import (
	"context"
	"testing"
)

// TestSlotsBoundTheRuns: n slots let n runs in, the next waits until one is given back
// or its context ends; nil slots bound nothing.
func TestSlotsBoundTheRuns(t *testing.T) {
	s := NewSlots(2)
	ctx := context.Background()
	for range 2 {
		if err := s.take(ctx); err != nil {
			t.Fatal(err)
		}
	}
	full, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.take(full); err == nil {
		t.Fatal("a third run took one of two slots")
	}
	s.give()
	if err := s.take(ctx); err != nil {
		t.Fatalf("a slot given back cannot be taken: %v", err)
	}
	var none *Slots
	for range 3 {
		if err := none.take(full); err != nil {
			t.Fatalf("nil slots: %v", err)
		}
		none.give()
	}
}
