package histories

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/anishathalye/porcupine"
)

// ednHistory has one operation of every kind and outcome, a process that returns at the
// very nanosecond it calls again, a crash that takes no time and an error to escape.
func ednHistory() History {
	ttl := 500 * time.Millisecond
	return History{
		Meta: Meta{Fencing: "full", TTL: ttl, Impl: "fenced"},
		Ops: []Op{
			{Process: 0, Client: 0, Key: "k0", Kind: Acquire, Input: Input{TTL: ttl}, Output: Output{Token: "t1", Fence: 1}, Outcome: OK, Call: 10, Return: 20},
			{Process: 2, Client: 1, Key: "k0", Kind: Acquire, Input: Input{TTL: ttl}, Output: Output{Error: "fenced: acquire \"k0\": not acquired"}, Outcome: Fail, Call: 15, Return: 20},
			{Process: 1, Client: 0, Key: "k0", Kind: Read, Input: Input{Fence: 1}, Output: Output{Value: 4}, Outcome: OK, Call: 20, Return: 30},
			{Process: 0, Client: 0, Key: "k0", Kind: Extend, Input: Input{TTL: ttl, Token: "t1"}, Output: Output{Token: "t1", Fence: 1}, Outcome: OK, Call: 30, Return: 35},
			{Process: 1, Client: 0, Key: "k0", Kind: Write, Input: Input{Fence: 1, Value: 5, Base: 4}, Outcome: Unknown, Output: Output{Error: "i/o timeout\n\tafter 2s \\ retry"}, Call: 40, Return: 50},
			{Process: 2, Client: 1, Key: "k0", Kind: Acquire, Input: Input{TTL: ttl}, Outcome: Unknown, Output: Output{Error: "EOF"}, Call: 45, Return: 60},
			{Process: 0, Client: 0, Key: "k0", Kind: Release, Input: Input{Token: "t1"}, Outcome: OK, Call: 50, Return: 60},
			{Process: 5, Client: 1, Key: "k0", Kind: Crash, Outcome: OK, Call: 60, Return: 60},
			{Process: 3, Client: 0, Key: "k0", Kind: Read, Input: Input{Fence: 2}, Output: Output{Error: "stale fence"}, Outcome: Fail, Call: 70, Return: 80},
		},
		Faults: []FaultWindow{{Kind: "client-pause", Target: "client 0", Start: 35, End: 45}},
	}
}

const ednGolden = `{:index 0, :time 10, :type :invoke, :process 0, :f :acquire, :value ["k0" nil], :locklab/client 0}
{:index 1, :time 15, :type :invoke, :process 2, :f :acquire, :value ["k0" nil], :locklab/client 1}
{:index 2, :time 20, :type :ok, :process 0, :f :acquire, :value ["k0" "t1"], :fence 1, :locklab/client 0}
{:index 3, :time 20, :type :fail, :process 2, :f :acquire, :value ["k0" nil], :error "fenced: acquire \"k0\": not acquired", :locklab/client 1}
{:index 4, :time 20, :type :invoke, :process 1, :f :read, :value ["k0" nil], :fence 1, :locklab/client 0}
{:index 5, :time 30, :type :ok, :process 1, :f :read, :value ["k0" 4], :fence 1, :locklab/client 0}
{:index 6, :time 30, :type :invoke, :process 0, :f :extend, :value ["k0" "t1"], :locklab/client 0}
{:index 7, :time 35, :type :ok, :process 0, :f :extend, :value ["k0" "t1"], :fence 1, :locklab/client 0}
{:index 8, :time 40, :type :invoke, :process 1, :f :write, :value ["k0" 5], :fence 1, :locklab/base 4, :locklab/client 0}
{:index 9, :time 45, :type :invoke, :process 2, :f :acquire, :value ["k0" nil], :locklab/client 1}
{:index 10, :time 50, :type :info, :process 1, :f :write, :value ["k0" 5], :fence 1, :locklab/base 4, :error "i/o timeout\n\tafter 2s \\ retry", :locklab/client 0}
{:index 11, :time 50, :type :invoke, :process 0, :f :release, :value ["k0" "t1"], :locklab/client 0}
{:index 12, :time 60, :type :info, :process 2, :f :acquire, :value ["k0" nil], :error "EOF", :locklab/client 1}
{:index 13, :time 60, :type :ok, :process 0, :f :release, :value ["k0" "t1"], :locklab/client 0}
{:index 14, :time 60, :type :invoke, :process 5, :f :crash, :value ["k0" nil], :locklab/client 1}
{:index 15, :time 60, :type :info, :process 5, :f :crash, :value ["k0" nil], :locklab/client 1}
{:index 16, :time 70, :type :invoke, :process 3, :f :read, :value ["k0" nil], :fence 2, :locklab/client 0}
{:index 17, :time 80, :type :fail, :process 3, :f :read, :value ["k0" nil], :fence 2, :error "stale fence", :locklab/client 0}
`

func TestWriteEDNGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteEDN(&b, ednHistory()); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != ednGolden {
		t.Errorf("WriteEDN:\n%s\nwant:\n%s", got, ednGolden)
	}
	checkJepsenHistory(t, "golden", ednHistory(), b.String())
}

func TestWriteEDNRefusesWhatJepsenRejects(t *testing.T) {
	h := ednHistory()
	after := h
	after.Ops = append(slices.Clone(h.Ops), Op{Process: 1, Client: 0, Key: "k0", Kind: Read, Outcome: OK, Call: 90, Return: 95})
	overlap := h
	overlap.Ops = append(slices.Clone(h.Ops), Op{Process: 0, Client: 0, Key: "k0", Kind: Release, Outcome: OK, Call: 55, Return: 58})
	for name, c := range map[string]struct {
		h    History
		want string
	}{
		"after unknown": {after, "op 9: process 1 acts again after op 4, whose outcome is unknown"},
		"overlap":       {overlap, "op 9: process 0 invokes it while its op 6 is still running"},
	} {
		var b bytes.Buffer
		err := WriteEDN(&b, c.h)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: WriteEDN error %v, want %q", name, err, c.want)
		}
		if b.Len() != 0 {
			t.Errorf("%s: WriteEDN wrote %d bytes of a history it refused", name, b.Len())
		}
	}
}

func TestEDNStringEscapes(t *testing.T) {
	for in, want := range map[string]string{
		``:                `""`,
		`plain`:           `"plain"`,
		`say "hi"`:        `"say \"hi\""`,
		`back\slash`:      `"back\\slash"`,
		"line\nnext\ttab": `"line\nnext\ttab"`,
		"cr\rbell\a":      `"cr\rbell\u0007"`,
		"naïve ✓":         `"naïve ✓"`,
		"bad\xffbyte":     "\"bad\uFFFDbyte\"",
	} {
		got := ednString(in)
		if got != want {
			t.Errorf("ednString(%q) = %s, want %s", in, got, want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("ednString(%q) is not valid UTF-8", in)
		}
		back, rest, err := parseEDN(got)
		if err != nil || strings.TrimSpace(rest) != "" {
			t.Errorf("reading %s back: %v, rest %q", got, err, rest)
		} else if in != "bad\xffbyte" && back != in {
			t.Errorf("reading %s back gives %q, want %q", got, back, in)
		}
	}
}

// TestWriteEDNRandomHistories exports histories like the recorder writes them (a fresh
// process after every unknown outcome and every crash, sequential processes, times that
// often coincide) and reads them back.
func TestWriteEDNRandomHistories(t *testing.T) {
	for seed := range uint64(200) {
		h := randomHistory(rand.New(rand.NewPCG(seed, 1)))
		var b bytes.Buffer
		if err := WriteEDN(&b, h); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkJepsenHistory(t, fmt.Sprintf("seed %d", seed), h, b.String())
	}
}

func randomHistory(rng *rand.Rand) History {
	kinds := []Kind{Acquire, Release, Extend, Read, Write, Crash}
	outcomes := []Outcome{OK, Fail, Unknown}
	next := 0
	var ops []Op
	for c := range 1 + rng.IntN(4) {
		proc := next
		next++
		now := int64(rng.IntN(5))
		for range rng.IntN(12) {
			op := Op{Process: proc, Client: c, Key: fmt.Sprintf("k%d", rng.IntN(2)), Kind: kinds[rng.IntN(len(kinds))], Outcome: outcomes[rng.IntN(len(outcomes))]}
			op.Call = now + int64(rng.IntN(3))
			op.Return = op.Call + int64(rng.IntN(3))
			if op.Kind == Crash {
				op.Outcome, op.Return = OK, op.Call
			}
			op.Input = Input{Token: fmt.Sprintf("t%d", rng.IntN(9)), Fence: int64(rng.IntN(3)), Value: int64(rng.IntN(9))}
			op.Output = Output{Token: op.Input.Token, Fence: op.Input.Fence, Value: int64(rng.IntN(9))}
			if op.Outcome != OK {
				op.Output.Error = "boom \"" + op.Key + "\"\n"
			}
			ops = append(ops, op)
			now = op.Return
			if op.Outcome == Unknown || op.Kind == Crash {
				proc = next
				next++
			}
		}
	}
	SortOps(ops)
	return History{Meta: Meta{Fencing: "off"}, Ops: ops}
}

// TestWriteEDNRealRuns exports the saved real runs of the regression corpus: the recorder
// must have moved every client to a fresh process after each unknown outcome and crash,
// or the export refuses.
func TestWriteEDNRealRuns(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "linearizability", "testdata", "corpus", "*", HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no saved runs in ../linearizability/testdata/corpus")
	}
	infos := 0
	for _, path := range paths {
		h, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteEDN(&b, h); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		infos += checkJepsenHistory(t, path, h, b.String())
	}
	if infos == 0 {
		t.Error("no saved run has an unknown outcome or a crash: the :info rule went untested")
	}
}

// checkJepsenHistory reads every line of an exported history back and checks what Jepsen
// tools rely on: dense indices, times that never decrease, one completion per invocation
// on the same process with the same :f, a :fail with its invocation's value, no process
// acting after :info, and every operation of h exported once with its own times and key.
// It returns the number of :info completions.
func checkJepsenHistory(t *testing.T, name string, h History, text string) (infos int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	if len(lines) != 2*len(h.Ops) {
		t.Fatalf("%s: %d lines for %d operations", name, len(lines), len(h.Ops))
	}
	running := map[int64]map[string]any{}
	retired := map[int64]bool{}
	calls := map[[2]int64]int{} // (process, call time) of every invocation
	last := int64(-1)
	for i, line := range lines {
		v, rest, err := parseEDN(line)
		m, ok := v.(map[string]any)
		if err != nil || !ok || strings.TrimSpace(rest) != "" {
			t.Fatalf("%s: line %d %q: not one EDN map (%v)", name, i+1, line, err)
		}
		idx, tm, proc := m[":index"].(int64), m[":time"].(int64), m[":process"].(int64)
		typ, f := m[":type"], m[":f"]
		if idx != int64(i) {
			t.Fatalf("%s: line %d has :index %d", name, i+1, idx)
		}
		if tm < last {
			t.Fatalf("%s: line %d goes back in time: %d after %d", name, i+1, tm, last)
		}
		last = tm
		if retired[proc] {
			t.Fatalf("%s: line %d: process %d acts after :info", name, i+1, proc)
		}
		val, ok := m[":value"].([]any)
		if !ok || len(val) != 2 {
			t.Fatalf("%s: line %d: :value %v is not a [key x] tuple", name, i+1, m[":value"])
		}
		if typ == ":invoke" {
			if running[proc] != nil {
				t.Fatalf("%s: line %d: process %d invokes while running", name, i+1, proc)
			}
			running[proc] = m
			calls[[2]int64{proc, tm}]++
			continue
		}
		inv := running[proc]
		if inv == nil {
			t.Fatalf("%s: line %d: completion without invocation", name, i+1)
		}
		delete(running, proc)
		if inv[":f"] != f {
			t.Fatalf("%s: line %d: completion %v of invocation %v", name, i+1, f, inv[":f"])
		}
		if !reflect.DeepEqual(inv[":value"].([]any)[0], val[0]) {
			t.Fatalf("%s: line %d: key %v, invoked with %v", name, i+1, val[0], inv[":value"])
		}
		switch typ {
		case ":fail":
			if !reflect.DeepEqual(inv[":value"], m[":value"]) {
				t.Fatalf("%s: line %d: :fail value %v differs from its invocation's %v", name, i+1, m[":value"], inv[":value"])
			}
		case ":info":
			retired[proc] = true
			infos++
		case ":ok":
		default:
			t.Fatalf("%s: line %d: type %v", name, i+1, typ)
		}
	}
	if len(running) != 0 {
		t.Fatalf("%s: invocations without completion: %v", name, running)
	}
	for _, op := range h.Ops {
		k := [2]int64{int64(op.Process), op.Call}
		if calls[k] == 0 {
			t.Fatalf("%s: %+v was not exported", name, op)
		}
		calls[k]--
	}
	return infos
}

// keyword is the keywords the export may write: :name or :namespace/name.
var keyword = regexp.MustCompile(`^:[a-z][a-z0-9-]*(/[a-z][a-z0-9-]*)?$`)

// parseEDN reads one EDN value of the kinds the export writes: maps, vectors, keywords
// (as ":name" strings), integers, strings and nil. It returns the rest of the input.
func parseEDN(s string) (any, string, error) {
	s = strings.TrimLeft(s, " ,\t\n")
	if s == "" {
		return nil, s, fmt.Errorf("unexpected end")
	}
	switch c := s[0]; {
	case c == '{':
		m := map[string]any{}
		s = s[1:]
		for {
			s = strings.TrimLeft(s, " ,")
			if strings.HasPrefix(s, "}") {
				return m, s[1:], nil
			}
			k, rest, err := parseEDN(s)
			if err != nil {
				return nil, rest, err
			}
			ks, ok := k.(string)
			if !ok || !strings.HasPrefix(ks, ":") {
				return nil, rest, fmt.Errorf("map key %v is not a keyword", k)
			}
			v, rest, err := parseEDN(rest)
			if err != nil {
				return nil, rest, err
			}
			if _, dup := m[ks]; dup {
				return nil, rest, fmt.Errorf("duplicate key %s", ks)
			}
			m[ks], s = v, rest
		}
	case c == '[':
		var vs []any
		s = s[1:]
		for {
			s = strings.TrimLeft(s, " ,")
			if strings.HasPrefix(s, "]") {
				return vs, s[1:], nil
			}
			v, rest, err := parseEDN(s)
			if err != nil {
				return nil, rest, err
			}
			vs, s = append(vs, v), rest
		}
	case c == '"':
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '"':
				return b.String(), s[i+1:], nil
			case '\\':
				i++
				if i == len(s) {
					return nil, "", fmt.Errorf("unterminated escape")
				}
				switch s[i] {
				case '"', '\\':
					b.WriteByte(s[i])
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				case 'u':
					if i+4 >= len(s) {
						return nil, "", fmt.Errorf("short \\u escape")
					}
					r, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
					if err != nil {
						return nil, "", err
					}
					b.WriteRune(rune(r))
					i += 4
				default:
					return nil, "", fmt.Errorf("bad escape \\%c", s[i])
				}
			case '\n', '\t', '\r':
				return nil, "", fmt.Errorf("raw control character in a string")
			default:
				b.WriteByte(s[i])
			}
		}
		return nil, "", fmt.Errorf("unterminated string")
	case c == ':':
		end := strings.IndexAny(s, " ,}]")
		if end < 0 {
			end = len(s)
		}
		if !keyword.MatchString(s[:end]) {
			return nil, s, fmt.Errorf("bad keyword %q", s[:end])
		}
		return s[:end], s[end:], nil
	}
	end := strings.IndexAny(s, " ,}]")
	if end < 0 {
		end = len(s)
	}
	tok := s[:end]
	if tok == "nil" {
		return nil, s[end:], nil
	}
	n, err := strconv.ParseInt(tok, 10, 64)
	if err != nil {
		return nil, s, fmt.Errorf("bad token %q", tok)
	}
	return n, s[end:], nil
}

// TestEDNKnossosCrossCheck judges the exported corpus the way docs/export.md tells Knossos
// users to: Knossos's mutex model on the acquires and releases of each key, and its
// cas-register model (initial value 0) on the reads of each key and its writes read as
// :cas [base value]. Knossos itself is Clojure; here Porcupine runs the same two models
// with Knossos's reading of a history (a :fail never happened, an :info may take effect at
// any time after its invocation, or never). On every saved run they must agree with P1
// and P2 as linearizability.Check judged them when the run was saved.
func TestEDNKnossosCrossCheck(t *testing.T) {
	expects, err := filepath.Glob(filepath.Join("..", "linearizability", "testdata", "corpus", "*", "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(expects) == 0 {
		t.Fatal("no saved runs in ../linearizability/testdata/corpus")
	}
	for _, path := range expects {
		dir := filepath.Dir(path)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]string
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		h, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteEDN(&b, h); err != nil {
			t.Fatal(err)
		}
		mutex, cas := knossosVerdicts(t, b.String())
		if mutex != (want["P1"] != "illegal") {
			t.Errorf("%s: Knossos's mutex says valid=%v, P1 was %s", filepath.Base(dir), mutex, want["P1"])
		}
		if cas != (want["P2"] != "illegal") {
			t.Errorf("%s: Knossos's cas-register says valid=%v, P2 was %s", filepath.Base(dir), cas, want["P2"])
		}
	}
}

// knossosOp is an exported operation as the two Knossos models see it.
type knossosOp struct {
	f, key string
	value  any   // the second element of :value
	base   int64 // :locklab/base of a write
	ok     bool  // false: :info
}

// knossosVerdicts reads an exported history back and checks it against emulations of
// Knossos's mutex and cas-register models, per key.
func knossosVerdicts(t *testing.T, text string) (mutexValid, casValid bool) {
	t.Helper()
	invokes := map[int64]map[string]any{}
	var lock, store []porcupine.Operation
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		v, _, err := parseEDN(line)
		if err != nil {
			t.Fatal(err)
		}
		m := v.(map[string]any)
		p := m[":process"].(int64)
		if m[":type"] == ":invoke" {
			invokes[p] = m
			continue
		}
		inv := invokes[p]
		delete(invokes, p)
		if m[":type"] == ":fail" {
			continue
		}
		ret := m[":time"].(int64)
		if m[":type"] == ":info" {
			ret = Infinity
		}
		val := m[":value"].([]any)
		o := knossosOp{f: m[":f"].(string), key: val[0].(string), value: val[1], ok: m[":type"] == ":ok"}
		o.base, _ = m[":locklab/base"].(int64)
		op := porcupine.Operation{ClientId: int(p), Input: o, Call: inv[":time"].(int64), Return: ret}
		switch o.f {
		case ":acquire", ":release":
			lock = append(lock, op)
		case ":read", ":write":
			store = append(store, op)
		}
	}
	byKey := func(ops []porcupine.Operation) [][]porcupine.Operation {
		keys := map[string]int{}
		var parts [][]porcupine.Operation
		for _, o := range ops {
			k := o.Input.(knossosOp).key
			if _, ok := keys[k]; !ok {
				keys[k] = len(parts)
				parts = append(parts, nil)
			}
			parts[keys[k]] = append(parts[keys[k]], o)
		}
		return parts
	}
	// An :info operation may also never take effect: its step can leave the state as is.
	mutex := porcupine.NondeterministicModel{
		Partition: byKey,
		Init:      func() []any { return []any{false} },
		Step: func(state, input, _ any) []any {
			locked, o := state.(bool), input.(knossosOp)
			var next []any
			if !o.ok {
				next = append(next, locked)
			}
			switch {
			case o.f == ":acquire" && !locked:
				next = append(next, true)
			case o.f == ":release" && locked:
				next = append(next, false)
			}
			return next
		},
	}
	cas := porcupine.NondeterministicModel{
		Partition: byKey,
		Init:      func() []any { return []any{int64(0)} },
		Step: func(state, input, _ any) []any {
			x, o := state.(int64), input.(knossosOp)
			var next []any
			if !o.ok {
				next = append(next, x)
			}
			switch {
			case o.f == ":read" && o.ok && o.value.(int64) == x:
				next = append(next, x)
			case o.f == ":write" && o.base == x:
				next = append(next, o.value.(int64))
			}
			return next
		},
	}
	return porcupine.CheckOperations(mutex.ToModel(), lock), porcupine.CheckOperations(cas.ToModel(), store)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteEDNReportsWriteErrors(t *testing.T) {
	if err := WriteEDN(failingWriter{}, ednHistory()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteEDN to a failing writer: %v, want the write error", err)
	}
}

// TestRecorderHistoriesExport: the recorder moves a client to a fresh process after every
// unknown outcome and crash, as Jepsen requires after :info, so what it records exports.
func TestRecorderHistoriesExport(t *testing.T) {
	rec := NewRecorder(Meta{Fencing: "off", TTL: time.Second})
	s := rec.Stream(0)
	s.Record(Acquire, "k0", Input{TTL: time.Second}, Output{Error: "timeout"}, Unknown, s.Now())
	s.Record(Acquire, "k0", Input{TTL: time.Second}, Output{Token: "t"}, OK, s.Now())
	s.Record(Read, "k0", Input{}, Output{Error: "timeout"}, Unknown, s.Now())
	s.Record(Read, "k0", Input{}, Output{Value: 3}, OK, s.Now())
	s.Crash("k0")
	s.Record(Acquire, "k0", Input{TTL: time.Second}, Output{Error: "refused"}, Fail, s.Now())
	h := rec.History()
	var b bytes.Buffer
	if err := WriteEDN(&b, h); err != nil {
		t.Fatal(err)
	}
	if infos := checkJepsenHistory(t, "recorder", h, b.String()); infos != 3 {
		t.Errorf("%d :info completions, want 3 (two unknown outcomes and a crash)\n%s", infos, b.String())
	}
}
