package bridge

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testdata is where tla/check.sh saves the counterexamples.
const testdata = "../testdata"

// expectation is one line of tla/expectations.tsv.
type expectation struct{ spec, expect string }

// readExpectations reads tla/expectations.tsv: config → spec and expected invariant.
func readExpectations(t *testing.T) map[string]expectation {
	t.Helper()
	f, err := os.Open("../expectations.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]expectation{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			cols := strings.Split(line, "\t")
			if len(cols) != 4 {
				t.Fatalf("expectations.tsv: want 4 columns, got %q", line)
			}
			out[cols[0]] = expectation{spec: cols[1], expect: cols[2]}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func traceFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testdata, "*.trace"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces in %s (%v)", testdata, err)
	}
	return files
}

// Every saved trace parses, its header agrees with expectations.tsv, and its config loads.
func TestEverySavedTraceParses(t *testing.T) {
	exp := readExpectations(t)
	for _, path := range traceFiles(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".trace")
		t.Run(name, func(t *testing.T) {
			cx, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			tr := cx.Trace
			want, ok := exp[name]
			switch {
			case !ok:
				t.Fatalf("%s is not in expectations.tsv", name)
			case tr.Config != name || tr.Spec != want.spec || tr.Invariant != want.expect:
				t.Errorf("header: config %s, spec %s, invariant %s; want %s, %s, %s", tr.Config, tr.Spec, tr.Invariant, name, want.spec, want.expect)
			case tr.States[0].Event.Name != "init" || tr.States[0].Action != "Initial predicate":
				t.Errorf("state 1: event %s, action %q; want <<\"init\">>, Initial predicate", tr.States[0].Event, tr.States[0].Action)
			case filepath.Base(cx.Config.File) != name+".cfg":
				t.Errorf("config file %s, want %s.cfg", cx.Config.File, name)
			}
			for _, st := range tr.States {
				if st.Event.Name == "" || st.Event.Line <= st.Line || st.Vars["event"] == "" {
					t.Errorf("state %d (line %d): event %s at line %d", st.N, st.Line, st.Event, st.Event.Line)
				}
			}
		})
	}
}

func TestTraceEventsAndInvariant(t *testing.T) {
	tr, err := ReadTrace(filepath.Join(testdata, "LeaseLock_pause_off.trace"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Invariant != "StoreSafety" || tr.Spec != "LeaseLock" || tr.ConfigPath != "tla/LeaseLock_pause_off.cfg" {
		t.Errorf("invariant %s, spec %s, config %s", tr.Invariant, tr.Spec, tr.ConfigPath)
	}
	var names []string
	for _, st := range tr.States {
		names = append(names, st.Event.Name)
	}
	want := []string{"init", "acquire", "tick", "tick", "check-ok", "read", "check-ok", "pause",
		"tick", "resume", "acquire", "check-ok", "read", "write", "check-ok", "write"}
	if !slices.Equal(names, want) {
		t.Errorf("events %v\nwant   %v", names, want)
	}
	// State 14: c1's stale write of 1 with fence 1, the first lost update.
	st := tr.States[13]
	if st.N != 14 || st.Action != "Write" || st.Line != 227 || st.Event.Line != 239 ||
		st.Event.String() != `<<"write", c1, 1, 1>>` || st.Vars["store"] != "1" || st.Vars["accepted"] != "1" ||
		st.Vars["pc"] != `(c1 :> "rel" @@ c2 :> "chkW")` {
		t.Errorf("state 14 = %+v", st)
	}
}

// Values TLC wraps onto several lines are joined; tuples hold records and sets.
func TestTraceValues(t *testing.T) {
	tr, err := ReadTrace(filepath.Join(testdata, "Redlock3_restart.trace"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tr.States[0].Vars["key"], "<< [owner |-> None, exp |-> 0], [owner |-> None, exp |-> 0], [owner |-> None, exp |-> 0] >>"; got != want {
		t.Errorf("key = %q, want %q", got, want)
	}
	last := tr.States[len(tr.States)-1].Event
	if last.Name != "acquired" || !slices.Equal(last.Args, []string{"c2", "{1, 3}", "3"}) {
		t.Errorf("last event %s: args %q", last, last.Args)
	}
	fo, err := ReadTrace(filepath.Join(testdata, "Failover_async_mutex.trace"))
	if err != nil {
		t.Fatal(err)
	}
	if ev := fo.States[3].Event; ev.Name != "promote-replica" || !slices.Equal(ev.Args, []string{"r1", "[owner |-> None, tok |-> 0, ctr |-> 0]"}) {
		t.Errorf("state 4 event %s: args %q", ev, ev.Args)
	}
}

// validTrace is a small well-formed trace; the error cases below break one line of it.
const validTrace = `# TLC counterexample: config LeaseLock_x (tla/LeaseLock_x.cfg), spec LeaseLock, invariant MutualExclusion violated.
Error: Invariant MutualExclusion is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
/\ now = 0
/\ event = <<"init">>

State 2: <Acquire line 104, col 5 to line 115, col 81 of module LeaseLock>
/\ now = 0
/\ event = <<"acquire", c1, 1>>
`

func TestParseTraceErrors(t *testing.T) {
	if _, err := ParseTrace(strings.NewReader(validTrace), "ok.trace"); err != nil {
		t.Fatalf("the valid trace: %v", err)
	}
	cases := []struct {
		name, old, new, want string
	}{
		{"no header", "# TLC counterexample: config LeaseLock_x (tla/LeaseLock_x.cfg), spec LeaseLock, invariant MutualExclusion violated.", "# something else",
			"bad.trace:1: no header line"},
		{"no invariant", "Error: Invariant MutualExclusion is violated.\n", "",
			"bad.trace:9: no line \"Error: Invariant ... is violated\""},
		{"other invariant", "Error: Invariant MutualExclusion", "Error: Invariant StoreSafety",
			"bad.trace:2: TLC reports invariant StoreSafety violated, the header (line 1) says MutualExclusion"},
		{"deadlock", "Error: Invariant MutualExclusion is violated.", "Error: Deadlock reached.",
			"bad.trace:2: not an invariant violation"},
		{"skipped state", "State 2:", "State 3:", "bad.trace:8: state 3 follows state 1"},
		{"no event", "/\\ event = <<\"acquire\", c1, 1>>", "/\\ other = 1", "bad.trace:8: state 2 has no event variable"},
		{"event not a tuple", `<<"acquire", c1, 1>>`, `"acquire"`, "bad.trace:10: event of state 2: \"acquire\": want a tuple"},
		{"event name not a string", `<<"acquire", c1, 1>>`, `<<acquire, c1, 1>>`, "bad.trace:10: event of state 2: <<acquire, c1, 1>>: first element acquire is not a string"},
		{"unbalanced", `<<"acquire", c1, 1>>`, `<<"acquire", [c1, 1>>`, "bad.trace:10: event of state 2: <<\"acquire\", [c1, 1>>: unbalanced"},
		{"twice", "/\\ now = 0\n/\\ event = <<\"acquire\"", "/\\ now = 0\n/\\ now = 1\n/\\ event = <<\"acquire\"", "bad.trace:10: state 2 sets now twice"},
		{"stray line", "State 2:", "garbage\nState 2:", "bad.trace:8: unexpected line \"garbage\""},
		{"variable before states", "State 1: <Initial predicate>\n", "", "bad.trace:4: variable before the first state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(validTrace, c.old, c.new, 1)
			if text == validTrace {
				t.Fatalf("case does not change the trace")
			}
			_, err := ParseTrace(strings.NewReader(text), "bad.trace")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestReadConfig(t *testing.T) {
	cfg, err := ReadConfig("../LeaseLock_pause_writes.cfg")
	if err != nil {
		t.Fatal(err)
	}
	fencing, err1 := cfg.Str("Fencing")
	careful, err2 := cfg.Bool("Careful")
	ttl, err3 := cfg.Int("TTL")
	clients, err4 := cfg.Set("Clients")
	if fencing != "writes" || !careful || ttl != 3 || !slices.Equal(clients, []string{"c1", "c2"}) {
		t.Errorf("Fencing %q, Careful %v, TTL %d, Clients %v", fencing, careful, ttl, clients)
	}
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Error(err)
		}
	}
	if _, ok := cfg.Constants["SPECIFICATION"]; ok {
		t.Error("the CONSTANTS section runs on into SPECIFICATION")
	}
	// A constant of the wrong type is reported at its line.
	if _, err := cfg.Bool("Fencing"); err == nil || !strings.Contains(err.Error(), "LeaseLock_pause_writes.cfg:12: constant Fencing") {
		t.Errorf("Bool(Fencing): %v", err)
	}
	if _, err := cfg.Int("Nope"); err == nil || !strings.Contains(err.Error(), "constant Nope is not set") {
		t.Errorf("Int(Nope): %v", err)
	}
}

func TestLoadNeedsTheConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "LeaseLock_x.trace")
	if err := os.WriteFile(path, []byte(validTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "config tla/LeaseLock_x.cfg named in its header is not in") {
		t.Errorf("Load without its config: %v", err)
	}
}
