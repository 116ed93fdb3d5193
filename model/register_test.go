package model

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func TestRegister(t *testing.T) {
	const a, b = 1, 2
	tests := []struct {
		name  string
		mode  Fencing
		ops   []porcupine.Operation
		legal bool
	}{
		{"read-modify-write in turns", FencingOff, []porcupine.Operation{
			readOp(a, 0, OK, 0, 0, 10),
			writeOp(a, 0, 1, 0, OK, 20, 30),
			readOp(b, 0, OK, 1, 40, 50),
			writeOp(b, 0, 2, 1, OK, 60, 70),
		}, true},
		{"concurrent read may see the old or the new value", FencingOff, []porcupine.Operation{
			writeOp(a, 0, 1, 0, OK, 0, 30),
			readOp(b, 0, OK, 0, 5, 10),
			readOp(b, 0, OK, 1, 12, 40),
		}, true},
		{"lost update", FencingOff, []porcupine.Operation{
			readOp(a, 0, OK, 0, 0, 10),
			readOp(b, 0, OK, 0, 5, 15),
			writeOp(b, 0, 1, 0, OK, 20, 30),
			writeOp(a, 0, 1, 0, OK, 40, 50), // same value, but it overwrote b's 1, not the 0 it read
		}, false},
		{"stale read", FencingOff, []porcupine.Operation{
			writeOp(a, 0, 1, 0, OK, 0, 10),
			readOp(b, 0, OK, 0, 20, 30),
		}, false},
		{"fencing off never rejects a write", FencingOff, []porcupine.Operation{
			writeOp(a, 1, 1, 0, Fail, 0, 10),
		}, false},
		{"fencing off never rejects a read", FencingOff, []porcupine.Operation{
			readOp(a, 1, Fail, 0, 0, 10),
		}, false},

		{"unknown write, later read of the old value", FencingOff, []porcupine.Operation{
			writeOp(a, 0, 1, 0, Unknown, 0, inf),
			readOp(b, 0, OK, 0, 20, 30),
		}, true},
		{"unknown write, later read of the new value", FencingOff, []porcupine.Operation{
			writeOp(a, 0, 1, 0, Unknown, 0, inf),
			readOp(b, 0, OK, 1, 20, 30),
		}, true},
		{"unknown write may land late", FencingOff, []porcupine.Operation{
			writeOp(a, 0, 1, 0, Unknown, 0, inf),
			readOp(b, 0, OK, 0, 20, 30),
			readOp(b, 0, OK, 1, 40, 50),
		}, true},
		{"unknown write cannot be undone", FencingOff, []porcupine.Operation{
			writeOp(a, 0, 1, 0, Unknown, 0, inf),
			readOp(b, 0, OK, 1, 20, 30),
			readOp(b, 0, OK, 0, 40, 50),
		}, false},
		{"unknown write seen after it could only have been a lost update", FencingOff, []porcupine.Operation{
			writeOp(b, 0, 5, 0, OK, 0, 10),
			writeOp(a, 0, 7, 0, Unknown, 20, inf), // base 0, but the store holds 5
			readOp(b, 0, OK, 7, 40, 50),
		}, false},

		{"writes: stale write rejected", FencingWrites, []porcupine.Operation{
			writeOp(b, 2, 1, 0, OK, 0, 10),
			writeOp(a, 1, 2, 1, Fail, 20, 30),
		}, true},
		{"writes: stale write accepted", FencingWrites, []porcupine.Operation{
			writeOp(b, 2, 1, 0, OK, 0, 10),
			writeOp(a, 1, 2, 1, OK, 20, 30),
		}, false},
		{"writes: equal fence accepted", FencingWrites, []porcupine.Operation{
			writeOp(b, 2, 1, 0, OK, 0, 10),
			writeOp(b, 2, 2, 1, OK, 20, 30),
		}, true},
		{"writes: current write rejected", FencingWrites, []porcupine.Operation{
			writeOp(b, 2, 1, 0, OK, 0, 10),
			writeOp(a, 3, 2, 1, Fail, 20, 30),
		}, false},
		{"writes: reads are not fenced", FencingWrites, []porcupine.Operation{
			writeOp(b, 2, 1, 0, OK, 0, 10),
			readOp(a, 1, OK, 1, 20, 30),
		}, true},
		{"writes: a read is never rejected", FencingWrites, []porcupine.Operation{
			writeOp(b, 2, 1, 0, OK, 0, 10),
			readOp(a, 1, Fail, 0, 20, 30),
		}, false},
		{"writes: concurrent writes ordered by the accepted fence", FencingWrites, []porcupine.Operation{
			writeOp(a, 1, 1, 0, Fail, 0, 30), // rejected: b's fence 2 came first
			writeOp(b, 2, 1, 0, OK, 5, 20),
		}, true},

		{"full: stale read rejected", FencingFull, []porcupine.Operation{
			readOp(b, 2, OK, 0, 0, 10),
			readOp(a, 1, Fail, 0, 20, 30),
		}, true},
		{"full: stale read accepted", FencingFull, []porcupine.Operation{
			readOp(b, 2, OK, 0, 0, 10),
			readOp(a, 1, OK, 0, 20, 30),
		}, false},
		{"full: a read raises the fence for writes", FencingFull, []porcupine.Operation{
			readOp(b, 2, OK, 0, 0, 10),
			writeOp(a, 1, 1, 0, OK, 20, 30),
		}, false},
		{"full: unknown read may or may not have raised the fence (write rejected)", FencingFull, []porcupine.Operation{
			readOp(b, 3, Unknown, 0, 0, inf),
			writeOp(a, 2, 1, 0, Fail, 20, 30),
		}, true},
		{"full: unknown read may or may not have raised the fence (write accepted)", FencingFull, []porcupine.Operation{
			readOp(b, 3, Unknown, 0, 0, inf),
			writeOp(a, 2, 1, 0, OK, 20, 30),
		}, true},
		{"full: unknown write with a stale fence cannot have been applied", FencingFull, []porcupine.Operation{
			writeOp(b, 2, 1, 0, OK, 0, 10),
			writeOp(a, 1, 5, 1, Unknown, 20, inf),
			readOp(b, 2, OK, 5, 40, 50),
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, RegisterModel(tt.mode), tt.ops, tt.legal) })
	}
}

func TestWhyIllegal(t *testing.T) {
	tests := []struct {
		mode Fencing
		s    RegisterState
		in   RegisterInput
		out  RegisterOutput
		want string
	}{
		{FencingOff, RegisterState{Value: 1}, RegisterInput{Kind: Write, Value: 1, Base: 0}, RegisterOutput{Outcome: OK},
			"the store held 1, not the 0 the writer had read (lost update)"},
		{FencingWrites, RegisterState{Value: 1, MaxFence: 2}, RegisterInput{Kind: Write, Fence: 1, Value: 1, Base: 1}, RegisterOutput{Outcome: OK},
			"the store accepted fence 1 although it had already seen fence 2"},
		{FencingWrites, RegisterState{Value: 1, MaxFence: 2}, RegisterInput{Kind: Write, Fence: 2, Value: 1, Base: 1}, RegisterOutput{Outcome: Fail},
			"the store rejected fence 2 although the largest fence it had seen was 2"},
		{FencingOff, RegisterState{Value: 1}, RegisterInput{Kind: Read}, RegisterOutput{Outcome: OK, Value: 0},
			"it read 0 but the store held 1"},
		{FencingWrites, RegisterState{}, RegisterInput{Kind: Read}, RegisterOutput{Outcome: Fail},
			"the store rejected it although fencing mode writes never rejects a read"},
		{FencingFull, RegisterState{Value: 1, MaxFence: 2}, RegisterInput{Kind: Write, Fence: 3, Value: 2, Base: 1}, RegisterOutput{Outcome: OK}, ""},
	}
	for _, tt := range tests {
		if got := WhyIllegal(tt.mode, tt.s, tt.in, tt.out); got != tt.want {
			t.Errorf("WhyIllegal(%s, %+v, %+v, %+v) = %q, want %q", tt.mode, tt.s, tt.in, tt.out, got, tt.want)
		}
	}
}

func TestStepRegisterForks(t *testing.T) {
	s := RegisterState{Value: 1, MaxFence: 2}
	got := StepRegister(FencingFull, s, RegisterInput{Kind: Write, Fence: 3, Value: 2, Base: 1}, RegisterOutput{Outcome: Unknown})
	want := []RegisterState{s, {Value: 2, MaxFence: 3}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("unknown write forks into %v, want %v", got, want)
	}
	if got := StepRegister(FencingFull, s, RegisterInput{Kind: Write, Fence: 1, Value: 2, Base: 1}, RegisterOutput{Outcome: Unknown}); len(got) != 1 || got[0] != s {
		t.Errorf("unknown stale write: %v, want only %v", got, s)
	}
}

func TestParseFencing(t *testing.T) {
	for _, s := range []string{"off", "writes", "full"} {
		if f, err := ParseFencing(s); err != nil || string(f) != s {
			t.Errorf("ParseFencing(%q) = %q, %v", s, f, err)
		}
	}
	for _, s := range []string{"", "on", "Full"} {
		if _, err := ParseFencing(s); err == nil {
			t.Errorf("ParseFencing(%q) accepted", s)
		}
	}
}

func TestDescribeRegister(t *testing.T) {
	m := RegisterModel(FencingFull)
	if got, want := m.DescribeOperation(RegisterInput{Kind: Write, Process: 2, Fence: 2, Value: 1, Base: 0}, RegisterOutput{Outcome: Fail}), "p2 write 1 over 0, fence 2 → fail"; got != want {
		t.Errorf("DescribeOperation = %q, want %q", got, want)
	}
	if got, want := m.DescribeOperation(RegisterInput{Kind: Read, Process: 1}, RegisterOutput{Outcome: OK, Value: 4}), "p1 read → ok 4"; got != want {
		t.Errorf("DescribeOperation = %q, want %q", got, want)
	}
	if got, want := FencingOff.DescribeRegisterState(RegisterState{Value: 3}), "value 3"; got != want {
		t.Errorf("DescribeRegisterState = %q, want %q", got, want)
	}
}
