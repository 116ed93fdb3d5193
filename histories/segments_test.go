package histories

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func segmentOps(n int) []Op {
	ops := make([]Op, n)
	for i := range ops {
		ops[i] = Op{Process: i % 3, Client: i % 3, Key: "k", Kind: Acquire, Outcome: Fail, Call: int64(i) * 10, Return: int64(i)*10 + 5, Input: Input{TTL: time.Second}}
	}
	return ops
}

// TestSegmentsReadBackAsOneHistory: segments of 3 operations hold the history whole, in
// order; Load, Scan and Head read a directory of segments as a history.
func TestSegmentsReadBackAsOneHistory(t *testing.T) {
	dir := t.TempDir()
	meta := Meta{Fencing: "full", TTL: time.Second, Impl: "fenced"}
	w, err := NewSegmentWriter(dir, meta, 3)
	if err != nil {
		t.Fatal(err)
	}
	ops := segmentOps(10)
	for _, op := range ops {
		if err := w.Write(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	faults := []FaultWindow{{Kind: "server-pause", Target: "lock-0", Start: 12, End: 40}}
	if err := SaveFaults(dir, faults); err != nil {
		t.Fatal(err)
	}
	segs, _ := Segments(dir)
	if len(segs) != 4 || w.Ops() != 10 {
		t.Fatalf("%d segments for 10 operations of 3 a segment (%d written)", len(segs), w.Ops())
	}
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h.Ops, ops) || h.Meta.Impl != "fenced" || len(h.Faults) != 1 {
		t.Fatalf("loaded %d ops, meta %+v, %d faults", len(h.Ops), h.Meta, len(h.Faults))
	}
	var scanned []Op
	fs, err := Scan(dir, func(Meta) error { return nil }, func(op Op) error { scanned = append(scanned, op); return nil })
	if err != nil || !reflect.DeepEqual(scanned, ops) || len(fs) != 1 {
		t.Fatalf("scanned %d ops, %d faults, %v", len(scanned), len(fs), err)
	}
	m, fs, err := Head(dir)
	if err != nil || m.Fencing != "full" || len(fs) != 1 {
		t.Fatalf("head: %+v %d %v", m, len(fs), err)
	}
	if size, segmented, err := Size(dir); err != nil || !segmented || size == 0 {
		t.Fatalf("size %d segmented %v: %v", size, segmented, err)
	}
}

// TestSegmentErrorsSayWhere: a corrupt operation in a later segment is an error naming
// that segment and line; a segment with another run's meta is refused.
func TestSegmentErrorsSayWhere(t *testing.T) {
	dir := t.TempDir()
	w, _ := NewSegmentWriter(dir, Meta{Fencing: "off"}, 2)
	for _, op := range segmentOps(4) {
		_ = w.Write(op)
	}
	_ = w.Close()
	other := t.TempDir()
	w2, _ := NewSegmentWriter(other, Meta{Fencing: "full"}, 2)
	_ = w2.Write(segmentOps(1)[0])
	_ = w2.Close()
	segs, _ := Segments(dir)
	data, _ := os.ReadFile(filepath.Join(other, "history-000001.jsonl.gz"))
	if err := os.WriteFile(segs[1], data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	if err == nil || !containsAll(err.Error(), "history-000002.jsonl.gz", "meta differs") {
		t.Fatalf("got %v, want the second segment's meta refused", err)
	}
	if _, err := NewSegmentWriter(t.TempDir(), Meta{}, 0); err == nil {
		t.Fatal("0 operations per segment accepted")
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestOrdererHandsOutInCallOrder: operations added in return order from many clients
// come out in SortOps' order, never one called at or after the watermark.
func TestOrdererHandsOutInCallOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var all []Op
	for c := range 5 {
		at := int64(r.IntN(10))
		for range 200 {
			d := int64(1 + r.IntN(20))
			all = append(all, Op{Process: c, Client: c, Key: "k", Kind: Read, Outcome: OK, Call: at, Return: at + d})
			at += d + int64(r.IntN(5))
		}
	}
	byReturn := slices.Clone(all)
	slices.SortFunc(byReturn, func(a, b Op) int { return int(a.Return - b.Return) })
	var o Orderer
	var out []Op
	for i, op := range byReturn {
		o.Add(op)
		// What a live run knows: nothing called before the earliest call still to come is missing.
		upTo := int64(1 << 62)
		for _, later := range byReturn[i+1:] {
			upTo = min(upTo, later.Call)
		}
		got := o.Take(upTo, nil)
		for _, g := range got {
			if g.Call >= upTo {
				t.Fatalf("handed out an operation called at %d with the watermark at %d", g.Call, upTo)
			}
		}
		out = append(out, got...)
	}
	out = o.Take(1<<62, out)
	want := slices.Clone(all)
	SortOps(want)
	if !reflect.DeepEqual(out, want) {
		t.Fatal("operations not handed out in call order")
	}
}
