package histories

import (
	"sync"
	"testing"
)

// TestStreamingRecorderKeepsNothing: a streaming recorder hands every operation to its
// sink and keeps none, so that a run of days records in constant memory.
func TestStreamingRecorderKeepsNothing(t *testing.T) {
	var mu sync.Mutex
	seen := 0
	rec := NewStreamingRecorder(Meta{Fencing: "off"}, func(op Op) {
		mu.Lock()
		seen++
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := rec.Stream(c)
			for range 10000 {
				s.Record(Effect, "j", Input{}, Output{Value: 1}, OK, s.Now())
			}
		}()
	}
	wg.Wait()
	if seen != 40000 {
		t.Errorf("the sink saw %d operations, want 40000", seen)
	}
	for _, s := range rec.streams {
		if len(s.chunks) != 0 {
			t.Fatalf("a stream kept %d chunks", len(s.chunks))
		}
	}
	if h := rec.History(); len(h.Ops) != 0 {
		t.Errorf("History has %d operations, want none", len(h.Ops))
	}
}
