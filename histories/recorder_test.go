package histories

import (
	"fmt"
	"reflect"
	"strings"
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
		if len(s.kept.chunks) != 0 {
			t.Fatalf("a stream kept %d chunks", len(s.kept.chunks))
		}
	}
	if h := rec.History(); len(h.Ops) != 0 {
		t.Errorf("History has %d operations, want none", len(h.Ops))
	}
}

// TestHistoryGivesBackWhatWasRecorded: every field of every operation comes back from
// History as it was recorded: more operations than a chunk holds, more text than a
// chunk holds, and the operations a stream keeps whole (with nodes, with a long error).
// The fields are filled in by reflection, so that a field added to Op later is checked too.
func TestHistoryGivesBackWhatWasRecorded(t *testing.T) {
	rec := NewRecorder(Meta{})
	s := rec.Stream(0)
	var want []Op
	for i := range 3000 { // several chunks
		op := filledOp(t, i)
		switch {
		case i%500 == 7:
			op.Output.Error = strings.Repeat("e", maxChunk+1)
			op.Output.Nodes = nil
		case i%3 != 0:
			op.Output.Nodes = nil
			if i%5 == 1 { // numbers left out when zero, and negative ones
				op.Input = Input{Token: op.Input.Token, Value: -int64(i)}
				op.Output = Output{Fence: -1, Error: op.Output.Error}
			}
		}
		op.Call, op.Return = int64(2*i), int64(2*i+1) // History's order is the recorded one
		s.add(op)
		want = append(want, op)
	}
	if got := rec.History().Ops; !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("operation %d comes back as\n%+v\nwant\n%+v", i, got[i], want[i])
			}
		}
		t.Fatalf("%d operations come back, want %d", len(got), len(want))
	}
}

// filledOp is an Op whose every field holds a value derived from seed.
func filledOp(t *testing.T, seed int) Op {
	t.Helper()
	var op Op
	n := seed * 100
	var fill func(v reflect.Value, path string)
	fill = func(v reflect.Value, path string) {
		n++
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		case reflect.Int, reflect.Int64:
			v.SetInt(int64(n))
		case reflect.String:
			v.SetString(fmt.Sprintf("%s-%d", path, n))
		case reflect.Slice:
			if v.Type().Elem().Kind() != reflect.Int {
				t.Fatalf("filledOp: field %s is a %s, which it cannot fill", path, v.Type())
			}
			v.Set(reflect.ValueOf([]int{n % 3, n % 5}))
		default:
			t.Fatalf("filledOp: field %s is a %s, which it cannot fill", path, v.Type())
		}
	}
	fill(reflect.ValueOf(&op).Elem(), "op")
	return op
}
