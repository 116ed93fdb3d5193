package linearizability

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
)

// verdicts is the verdict per property, in report order.
type verdicts map[Property]Verdict

func checkOrFail(t *testing.T, h histories.History, opts Options) Result {
	t.Helper()
	res, err := Check(h, opts)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return res
}

func TestCheckVerdicts(t *testing.T) {
	const a, b = 0, 1
	tests := []struct {
		name    string
		h       histories.History
		want    verdicts
		overall Verdict
	}{
		{"empty history", history("off", time.Second),
			verdicts{P1: NA, P2: NA, P3: NA, L1: NA}, OK},
		{"careful handover with fencing", history("full", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 10, fence(1)),
			op(a, histories.Read, "res", histories.OK, 20, 30, fence(1), got(0)),
			op(a, histories.Write, "res", histories.OK, 40, 50, fence(1), write(1, 0)),
			op(b, histories.Acquire, "k", histories.Fail, 45, 55),
			op(a, histories.Release, "k", histories.OK, 60, 80),
			op(b, histories.Acquire, "k", histories.OK, 70, 90, fence(2)), // overlaps a's release
			op(b, histories.Read, "res", histories.OK, 100, 110, fence(2), got(1)),
			op(b, histories.Write, "res", histories.OK, 120, 130, fence(2), write(2, 1)),
			op(b, histories.Release, "k", histories.OK, 140, 150),
		), verdicts{P1: OK, P2: OK, P3: OK, L1: OK}, OK},
		{"lock only, no fences", history("off", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 10),
			op(a, histories.Release, "k", histories.OK, 20, 30),
		), verdicts{P1: OK, P2: NA, P3: NA, L1: OK}, OK},
		{"Kleppmann's pause, fencing off", kleppmann("off", histories.OK),
			verdicts{P1: Illegal, P2: Illegal, P3: OK, L1: OK}, Illegal},
		{"Kleppmann's pause, fencing full", kleppmann("full", histories.Fail),
			verdicts{P1: Illegal, P2: OK, P3: OK, L1: OK}, Illegal},
		{"fence granted twice", history("off", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 10, fence(3)),
			op(a, histories.Release, "k", histories.OK, 20, 30),
			op(b, histories.Acquire, "k", histories.OK, 40, 50, fence(3)),
		), verdicts{P1: OK, P2: NA, P3: Illegal, L1: OK}, Illegal},
		{"release by the lock process after an unknown store read", history("full", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 10, fence(1)),
			op(7, histories.Read, "res", histories.Unknown, 20, 500, fence(1), client(a)),
			op(a, histories.Release, "k", histories.OK, 510, 520),
			op(b, histories.Acquire, "k", histories.OK, 530, 540, fence(2)),
		), verdicts{P1: OK, P2: OK, P3: OK, L1: OK}, OK},
		{"stuck lock", history("off", 100*time.Millisecond,
			op(a, histories.Acquire, "k", histories.OK, 0, 10),
			op(a, histories.Crash, "k", histories.OK, 20, 20),
			op(b, histories.Acquire, "k", histories.Fail, 1000, 1010),
		), verdicts{P1: OK, P2: NA, P3: NA, L1: Illegal}, Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := checkOrFail(t, tt.h, Options{})
			for _, p := range []Property{P1, P2, P3, L1} {
				pr, ok := res.Property(p)
				if !ok {
					t.Fatalf("no result for %s", p)
				}
				if pr.Verdict != tt.want[p] {
					t.Errorf("%s = %s (%s), want %s", p, pr.Verdict, pr.Explanation, tt.want[p])
				}
				if (pr.Verdict == Illegal) != (pr.Explanation != "") && pr.Verdict != NA {
					t.Errorf("%s %s has explanation %q", p, pr.Verdict, pr.Explanation)
				}
			}
			if res.Verdict != tt.overall || res.Violation() != (tt.overall == Illegal) {
				t.Errorf("overall %s (violation %v), want %s", res.Verdict, res.Violation(), tt.overall)
			}
		})
	}
}

func TestCheckErrors(t *testing.T) {
	good := op(0, histories.Acquire, "k", histories.OK, 0, 10)
	bad := op(0, histories.Acquire, "k", histories.OK, 10, 5)
	tests := []struct {
		name string
		h    histories.History
		want string
	}{
		{"unknown fencing mode", history("on", time.Second, good), `unknown fencing mode "on"`},
		{"no fencing mode", history("", time.Second, good), `unknown fencing mode ""`},
		{"return before call", history("off", time.Second, good, bad), "op 1: return time"},
		{"fault ends before it starts", histories.History{Meta: histories.Meta{Fencing: "off"},
			Faults: []histories.FaultWindow{{Kind: "pause", Start: 10, End: 5}}}, "fault 0: end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Check(tt.h, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestTimeoutIsUnknown runs a large history full of concurrency and unknown outcomes with
// a timeout far too small to finish: the verdict must be unknown, never ok. The same
// history with the default timeout is ok, so the unknown is the timeout's doing.
func TestTimeoutIsUnknown(t *testing.T) {
	h := generate(7, 16, 2, 20000, 0.3)
	res := checkOrFail(t, h, Options{Timeout: time.Nanosecond})
	for _, p := range []Property{P1, P2} {
		if pr, _ := res.Property(p); pr.Verdict != Unknown || !strings.Contains(pr.Explanation, "did not decide within 1ns") {
			t.Errorf("%s = %s (%q), want unknown", p, pr.Verdict, pr.Explanation)
		}
	}
	if pr, _ := res.Property(P3); pr.Verdict == Illegal {
		t.Errorf("P3 = illegal on a legal history: %s", pr.Explanation)
	}
	if res.Verdict != Unknown || !res.Unknown() || res.Violation() {
		t.Errorf("overall %s, want unknown", res.Verdict)
	}

	res = checkOrFail(t, h, Options{})
	if res.Verdict != OK {
		t.Errorf("with the default timeout: %s", res)
	}
}

func TestResultJSONAndString(t *testing.T) {
	res := checkOrFail(t, kleppmann("off", histories.OK), Options{})
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Verdict != Illegal || len(back.Properties) != len(AllProperties()) || back.Properties[1].Explanation != res.Properties[1].Explanation {
		t.Errorf("JSON round trip lost data: %s", data)
	}
	if !strings.Contains(string(data), `"verdict":"illegal"`) || !strings.Contains(string(data), `"elapsed_ns":`) {
		t.Errorf("unexpected JSON: %s", data)
	}

	for i, p := range AllProperties() {
		if res.Properties[i].Property != p {
			t.Errorf("Properties[%d] is %s, want %s (the order of AllProperties)", i, res.Properties[i].Property, p)
		}
	}
	if P3.Name() != "fence monotonicity" {
		t.Errorf("P3.Name() = %q", P3.Name())
	}

	lines := strings.Split(strings.TrimSuffix(res.String(), "\n"), "\n")
	if len(lines) != 1+len(AllProperties()) {
		t.Fatalf("String() has %d lines, want a header and %d properties:\n%s", len(lines), len(AllProperties()), res)
	}
	if lines[0] != "illegal (fencing off)" {
		t.Errorf("header = %q", lines[0])
	}
	for i, p := range []string{"P1  illegal", "P2  illegal", "P3  ok", "L1  ok", "P4  n/a", "P5  n/a", "P6  ok"} {
		if !strings.HasPrefix(strings.TrimSpace(lines[i+1]), p) {
			t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i+1], p)
		}
	}
}
