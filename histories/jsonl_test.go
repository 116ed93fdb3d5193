package histories

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleHistory() History {
	return History{
		Meta: Meta{Fencing: "full", TTL: 500 * time.Millisecond, Impl: "fenced", Seed: 7, Servers: []string{"lock-0", "lock-1", "lock-2"}, ExpiryLag: 500 * time.Millisecond},
		Ops: []Op{
			{Process: 0, Client: 0, Key: "k", Kind: Acquire, Input: Input{TTL: 500 * time.Millisecond}, Output: Output{Token: "t1", Fence: 1, Validity: 499 * time.Millisecond, Granted: time.Second, Nodes: []int{0, 2}}, Outcome: OK, Call: 10, Return: 20},
			{Process: 0, Client: 0, Key: "k", Kind: Read, Input: Input{Fence: 1}, Output: Output{Value: 0}, Outcome: OK, Call: 30, Return: 40},
			{Process: 0, Client: 0, Key: "k", Kind: Write, Input: Input{Fence: 1, Value: 1, Base: 0}, Outcome: Unknown, Output: Output{Error: "i/o timeout"}, Call: 50, Return: 60},
			{Process: 1, Client: 0, Key: "k", Kind: Crash, Outcome: OK, Call: 70, Return: 70},
		},
		Faults: []FaultWindow{{Kind: "client-pause", Target: "client 0", Start: 35, End: 45, Detail: "1s"}},
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := sampleHistory()
	if err := Save(dir, want); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, filepath.Join(dir, HistoryFile)} {
		got, err := Load(path)
		if err != nil {
			t.Fatalf("Load(%s): %v", path, err)
		}
		if !reflect.DeepEqual(got.Meta, want.Meta) || len(got.Ops) != len(want.Ops) || len(got.Faults) != 1 {
			t.Fatalf("Load(%s) = %+v, want %+v", path, got, want)
		}
		for i := range want.Ops {
			if !reflect.DeepEqual(got.Ops[i], want.Ops[i]) {
				t.Fatalf("op %d: got %+v, want %+v", i, got.Ops[i], want.Ops[i])
			}
		}
		if got.Faults[0] != want.Faults[0] {
			t.Fatalf("fault: got %+v, want %+v", got.Faults[0], want.Faults[0])
		}
	}
}

func TestReadHistoryRejectsMalformed(t *testing.T) {
	var good bytes.Buffer
	if err := WriteHistory(&good, sampleHistory()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(good.String()), "\n")
	hdr := lines[0]
	cases := []struct {
		name, input string
		line        int
		reason      string
	}{
		{"empty", "", 0, "no locklab history header"},
		{"not json", "hello\n", 1, "bad header"},
		{"wrong kind", `{"locklab":"faults","version":1}` + "\n", 1, "not a locklab history file"},
		{"future version", `{"locklab":"history","version":99,"meta":{"fencing":"off"}}` + "\n", 1, "format version 99"},
		{"negative expiry lag", `{"locklab":"history","version":1,"meta":{"fencing":"off","expiry_lag":-1}}` + "\n", 1, "negative expiry_lag"},
		{"bad fencing", `{"locklab":"history","version":1,"meta":{"fencing":"maybe"}}` + "\n", 1, `unknown fencing mode "maybe"`},
		{"unknown field", hdr + "\n" + `{"process":0,"key":"k","kind":"read","outcome":"ok","bogus":1}` + "\n", 2, "unknown field"},
		{"bad kind", hdr + "\n" + lines[1] + "\n" + `{"process":0,"key":"k","kind":"steal","outcome":"ok"}` + "\n", 3, `unknown kind "steal"`},
		{"negative granted lease", hdr + "\n" + `{"process":0,"key":"k","kind":"acquire","outcome":"ok","output":{"granted":-1}}` + "\n", 2, "negative granted lease"},
		{"return before call", hdr + "\n" + `{"process":0,"key":"k","kind":"read","outcome":"ok","call":5,"return":4}` + "\n", 2, "before call time"},
		{"two values", hdr + "\n" + lines[1] + lines[1] + "\n", 2, "more than one value"},
		{"trailing brace", hdr + "\n" + lines[1] + " }\n", 2, "more than one value"},
		{"trailing bracket", hdr + "\n" + lines[1] + "]\n", 2, "more than one value"},
		{"trailing brace after the header", `{"locklab":"history","version":1,"meta":{"fencing":"off"}}}` + "\n", 1, "bad header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ReadHistory(strings.NewReader(c.input), "h.jsonl")
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a ParseError", err)
			}
			if pe.File != "h.jsonl" || pe.Line != c.line || !strings.Contains(pe.Reason, c.reason) {
				t.Fatalf("err = %q, want h.jsonl:%d: ...%s...", err, c.line, c.reason)
			}
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, HistoryFile)
	if err := os.WriteFile(path, []byte(`{"locklab":"history","version":1,"meta":{"fencing":"off"}}`+"\n{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Fatalf("err = %v, want it to name %s:2", err, path)
	}
}

func TestRecorderStreamsAndProcesses(t *testing.T) {
	rec := NewRecorder(Meta{Fencing: "off"})
	a, b := rec.Stream(0), rec.Stream(1)
	if a.Process() == b.Process() {
		t.Fatal("two streams share a process id")
	}
	p := a.Process()
	a.Record(Acquire, "k", Input{}, Output{}, Unknown, a.Now())
	if a.Process() == p {
		t.Fatal("process id unchanged after an unknown outcome")
	}
	b.Record(Acquire, "k", Input{}, Output{}, Fail, b.Now())
	a.Crash("k")
	w := rec.FaultStart("client-pause", "client 0", "")
	h := rec.History()
	if len(h.Ops) != 3 || len(h.Faults) != 1 || h.Faults[w].End < h.Faults[w].Start {
		t.Fatalf("history = %+v", h)
	}
	for i := 1; i < len(h.Ops); i++ {
		if h.Ops[i].Call < h.Ops[i-1].Call {
			t.Fatal("history not ordered by call time")
		}
	}
}

// FuzzReadHistory: any input yields a history or a clear error, never a panic.
func FuzzReadHistory(f *testing.F) {
	var good bytes.Buffer
	if err := WriteHistory(&good, sampleHistory()); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes())
	f.Add([]byte(`{"locklab":"history","version":1,"meta":{"fencing":"off"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		meta, ops, err := ReadHistory(bytes.NewReader(data), "fuzz")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Reason == "" {
				t.Fatalf("error without place and reason: %v", err)
			}
			return
		}
		for _, op := range ops {
			if verr := op.Validate(); verr != nil {
				t.Fatalf("accepted an invalid op: %v", verr)
			}
		}
		// What was read must survive a round trip.
		var buf bytes.Buffer
		if err := WriteHistory(&buf, History{Meta: meta, Ops: ops}); err != nil {
			t.Fatal(err)
		}
		if _, again, err := ReadHistory(&buf, "again"); err != nil || len(again) != len(ops) {
			t.Fatalf("round trip: %d ops, err %v", len(again), err)
		}
	})
}

// FuzzReadFaults: likewise for fault windows.
func FuzzReadFaults(f *testing.F) {
	f.Add([]byte(`{"locklab":"faults","version":1}` + "\n" + `{"kind":"client-pause","target":"client 0","start":1,"end":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		faults, err := ReadFaults(bytes.NewReader(data), "fuzz")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error without place: %v", err)
			}
			return
		}
		for _, w := range faults {
			if verr := w.Validate(); verr != nil {
				t.Fatalf("accepted an invalid window: %v", verr)
			}
		}
	})
}

// TestReadFaultsRejectsTrailingData: a window line with anything after its value (a
// stray brace, which encoding/json's More does not see) is an error naming file and line.
func TestReadFaultsRejectsTrailingData(t *testing.T) {
	in := `{"locklab":"faults","version":1}` + "\n" + `{"kind":"client-pause","target":"client 0","start":1,"end":2} }` + "\n"
	_, err := ReadFaults(strings.NewReader(in), "f.jsonl")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != "f.jsonl" || pe.Line != 2 || !strings.Contains(pe.Reason, "more than one value") {
		t.Fatalf("err = %v, want f.jsonl:2: ...more than one value...", err)
	}
}
