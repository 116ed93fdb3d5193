package model

import "testing"

// TestRegisterAfter: the writes answered ok chain from the start's value to the end
// state whatever order they came in; a window whose writes do not chain (a lost update)
// ends at the value the last operation answered ok saw or wrote.
func TestRegisterAfter(t *testing.T) {
	w := func(base, value, fence int64) RegisterInput {
		return RegisterInput{Kind: Write, Base: base, Value: value, Fence: fence}
	}
	r := RegisterInput{Kind: Read, Fence: 9}
	ok := RegisterOutput{Outcome: OK}
	cases := []struct {
		name  string
		mode  Fencing
		start RegisterState
		ops   []RegisterInput
		outs  []RegisterOutput
		want  RegisterState
	}{
		{"chain out of call order", FencingWrites, RegisterState{Value: 3}, []RegisterInput{w(4, 5, 2), w(3, 4, 1)}, []RegisterOutput{ok, ok}, RegisterState{Value: 5, MaxFence: 2}},
		{"back to the start", FencingOff, RegisterState{Value: 1}, []RegisterInput{w(1, 2, 0), w(2, 1, 0)}, []RegisterOutput{ok, ok}, RegisterState{Value: 1}},
		{"rejected writes do not count", FencingFull, RegisterState{Value: 1, MaxFence: 3}, []RegisterInput{w(1, 2, 1), r}, []RegisterOutput{{Outcome: Fail}, {Outcome: OK, Value: 1}}, RegisterState{Value: 1, MaxFence: 9}},
		{"lost update", FencingOff, RegisterState{Value: 7}, []RegisterInput{w(7, 8, 0), w(8, 9, 0), w(7, 8, 0), {Kind: Read}}, []RegisterOutput{ok, ok, ok, {Outcome: OK, Value: 8}}, RegisterState{Value: 8}},
	}
	for _, c := range cases {
		if got := RegisterAfter(c.mode, c.start, c.ops, c.outs); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
