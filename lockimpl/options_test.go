package lockimpl

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestOptionsResolve(t *testing.T) {
	impl := Impl{Name: "x", Options: []Option{
		{Name: "tries", Kind: KindInt, Default: 1, Values: []any{1, 3}, Min: 1, Max: 32},
		{Name: "delay", Kind: KindDuration, Default: 10 * time.Millisecond, Values: []any{time.Millisecond}, Neutral: true},
		{Name: "strategy", Kind: KindString, Default: "none", Values: []any{"none", "linear"}},
		{Name: "flag", Kind: KindBool, Default: false, Values: []any{true}},
	}}
	for _, o := range impl.Options {
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	opts, err := impl.ResolveOptions(map[string]json.RawMessage{"tries": json.RawMessage("3"), "delay": json.RawMessage(`"2ms"`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := impl.Options[0].Int(opts); got != 3 {
		t.Errorf("tries = %d", got)
	}
	if got := impl.Options[1].Duration(opts); got != 2*time.Millisecond {
		t.Errorf("delay = %s", got)
	}
	if got := impl.Options[2].String(opts); got != "none" {
		t.Errorf("strategy default = %q", got)
	}
	if impl.IsDefault(opts, false) {
		t.Error("tries 3 is not the default")
	}
	neutralOnly, _ := impl.ResolveOptions(map[string]json.RawMessage{"delay": json.RawMessage(`"2ms"`)})
	if !impl.IsDefault(neutralOnly, false) || impl.IsDefault(neutralOnly, true) {
		t.Error("a neutral option alone keeps the defaults for the expectations, not otherwise")
	}
	for raw, want := range map[string]string{
		`{"nope":1}`:         `has no option "nope"`,
		`{"tries":1.5}`:      "want an integer",
		`{"tries":0}`:        "out of range",
		`{"delay":"soon"}`:   "want a duration",
		`{"delay":"-1ms"}`:   "out of range",
		`{"strategy":"odd"}`: `one of "none", "linear"`,
		`{"flag":"yes"}`:     "true or false",
	} {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		if _, err := impl.ResolveOptions(m); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to say %q", raw, err, want)
		}
	}
	// A value travels to a client and back.
	wire, err := opts.Wire()
	if err != nil {
		t.Fatal(err)
	}
	back, err := impl.OptionsFromWire(wire)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range opts {
		if back[k] != v {
			t.Errorf("%s: %v after the wire, want %v", k, back[k], v)
		}
	}
}

func TestOptionDeclarations(t *testing.T) {
	for _, w := range []WireOption{
		{Name: "t", Kind: KindDuration, Default: json.RawMessage("150"), Values: []json.RawMessage{json.RawMessage("50")}},
		{Name: "b", Kind: KindBool, Default: json.RawMessage("true")},
	} {
		if _, err := w.Option(); err != nil {
			t.Errorf("%s: %v", w.Name, err)
		}
	}
	for _, w := range []WireOption{
		{Name: "", Kind: KindBool, Default: json.RawMessage("true")},
		{Name: "k", Kind: "float", Default: json.RawMessage("1")},
		{Name: "s", Kind: KindString, Default: json.RawMessage(`"a"`), Values: []json.RawMessage{json.RawMessage(`"b"`)}},
		{Name: "n", Kind: KindInt},
	} {
		if _, err := w.Option(); err == nil {
			t.Errorf("%+v: accepted", w)
		}
	}
	r := NewRegistry()
	bad := Impl{Name: "bad", New: newSetNX, Options: []Option{{Name: "x", Kind: KindInt, Default: "one"}}}
	if err := r.Register(bad); err == nil {
		t.Error("an option whose default is not of its kind registered")
	}
}
