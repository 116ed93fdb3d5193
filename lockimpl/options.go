package lockimpl

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// OptionKind is the type of an implementation option's value.
type OptionKind string

// The kinds of option values. In a plan a bool is a JSON bool, an int a JSON integer,
// a duration a string such as "150ms", a string one of the option's Values.
const (
	KindBool     OptionKind = "bool"
	KindInt      OptionKind = "int"
	KindDuration OptionKind = "duration"
	KindString   OptionKind = "string"
)

// Option is one setting of a library as its users configure it (a plan's impl_options).
type Option struct {
	Name string // as in the plan: lower_snake_case
	Kind OptionKind
	// Default is the value the implementation runs with when the plan leaves it unsaid
	// (bool, int, time.Duration or string, by Kind).
	Default any
	// Values are what a campaign's generator draws from; for a string option they are
	// also the only values allowed.
	Values []any
	// Min and Max bound an int or a duration (a duration in nanoseconds); both 0: any
	// non-negative value.
	Min, Max int64
	// Neutral: the value changes timing only, never what the models guarantee, so the
	// expectations hold whatever it is. A plan that sets an option that is not neutral
	// to another value than its default is judged without expectations: what that
	// setting breaks is a finding, not a failure.
	Neutral bool
	Doc     string
}

// Options are an implementation's option values, checked, with every default filled in.
type Options map[string]any

// value is the option's value in opts, its default when opts lacks it (a Config built
// by hand, as tests do).
func (o Option) value(opts Options) any {
	if v, ok := opts[o.Name]; ok {
		return v
	}
	return o.Default
}

// Bool is the value of a bool option in opts.
func (o Option) Bool(opts Options) bool { v, _ := o.value(opts).(bool); return v }

// Int is the value of an int option in opts.
func (o Option) Int(opts Options) int { v, _ := o.value(opts).(int); return v }

// Duration is the value of a duration option in opts.
func (o Option) Duration(opts Options) time.Duration {
	v, _ := o.value(opts).(time.Duration)
	return v
}

// String is the value of a string option in opts.
func (o Option) String(opts Options) string { v, _ := o.value(opts).(string); return v }

// Option is the option of that name.
func (i Impl) Option(name string) (Option, bool) {
	k := slices.IndexFunc(i.Options, func(o Option) bool { return o.Name == name })
	if k < 0 {
		return Option{}, false
	}
	return i.Options[k], true
}

// ResolveOptions checks a plan's impl_options against the implementation's options and
// returns every value with the defaults filled in. An error names the option.
func (i Impl) ResolveOptions(raw map[string]json.RawMessage) (Options, error) {
	out := Options{}
	for _, o := range i.Options {
		out[o.Name] = o.Default
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		o, ok := i.Option(name)
		if !ok {
			return nil, &OptionError{Name: name, Reason: fmt.Sprintf("%s has no option %q (%s)", i.Name, name, i.optionNames())}
		}
		v, err := o.Parse(raw[name])
		if err != nil {
			return nil, &OptionError{Name: name, Reason: err.Error()}
		}
		out[name] = v
	}
	return out, nil
}

func (i Impl) optionNames() string {
	if len(i.Options) == 0 {
		return "it takes none"
	}
	names := make([]string, len(i.Options))
	for k, o := range i.Options {
		names[k] = o.Name
	}
	return "options: " + strings.Join(names, ", ")
}

// OptionError is an impl_options value that is wrong.
type OptionError struct{ Name, Reason string }

func (e *OptionError) Error() string { return e.Reason }

// Parse decodes one JSON value of the option.
func (o Option) Parse(data json.RawMessage) (any, error) {
	want := func() error {
		return fmt.Errorf("option %s: want %s, got %s", o.Name, o.describeKind(), strings.TrimSpace(string(data)))
	}
	switch o.Kind {
	case KindBool:
		var b bool
		if json.Unmarshal(data, &b) != nil {
			return nil, want()
		}
		return b, nil
	case KindInt:
		var f float64
		if json.Unmarshal(data, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, want()
		}
		return int(f), o.checkRange(int64(f), strconv.FormatInt(int64(f), 10))
	case KindDuration:
		var s string
		if json.Unmarshal(data, &s) != nil {
			return nil, want()
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, want()
		}
		return d, o.checkRange(int64(d), d.String())
	case KindString:
		var s string
		if json.Unmarshal(data, &s) != nil || !slices.Contains(o.Values, any(s)) {
			return nil, want()
		}
		return s, nil
	}
	return nil, fmt.Errorf("option %s: unknown kind %q", o.Name, o.Kind)
}

func (o Option) checkRange(v int64, shown string) error {
	lo, hi := o.Min, o.Max
	if lo == 0 && hi == 0 {
		hi = math.MaxInt64
	}
	if v < lo || v > hi {
		return fmt.Errorf("option %s: %s is out of range (%s)", o.Name, shown, o.describeRange())
	}
	return nil
}

func (o Option) describeRange() string {
	show := func(v int64) string {
		if o.Kind == KindDuration {
			return time.Duration(v).String()
		}
		return strconv.FormatInt(v, 10)
	}
	if o.Min == 0 && o.Max == 0 {
		return "at least 0"
	}
	return show(o.Min) + " to " + show(o.Max)
}

func (o Option) describeKind() string {
	switch o.Kind {
	case KindBool:
		return "true or false"
	case KindInt:
		return "an integer, " + o.describeRange()
	case KindDuration:
		return `a duration such as "150ms", ` + o.describeRange()
	case KindString:
		vals := make([]string, len(o.Values))
		for k, v := range o.Values {
			vals[k] = strconv.Quote(fmt.Sprint(v))
		}
		return "one of " + strings.Join(vals, ", ")
	}
	return string(o.Kind)
}

// Format shows a value of the option as a plan writes it.
func (o Option) Format(v any) string {
	if d, ok := v.(time.Duration); ok {
		return strconv.Quote(d.String())
	}
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// JSON is v as the JSON value a plan holds.
func (o Option) JSON(v any) json.RawMessage {
	return json.RawMessage(o.Format(v))
}

// Validate checks the declaration itself: a known kind, a default and draw values of
// that kind and within range. Register calls it, so a broken declaration (one of a
// client's hello, say) is an error when the implementation is registered.
func (o Option) Validate() error {
	if o.Name == "" {
		return fmt.Errorf("option without a name")
	}
	check := func(v any) error {
		if _, err := o.Parse(o.JSON(v)); err != nil {
			return err
		}
		switch o.Kind {
		case KindBool:
			_, ok := v.(bool)
			if !ok {
				return fmt.Errorf("option %s: value %v is not a bool", o.Name, v)
			}
		case KindInt:
			if _, ok := v.(int); !ok {
				return fmt.Errorf("option %s: value %v is not an int", o.Name, v)
			}
		case KindDuration:
			if _, ok := v.(time.Duration); !ok {
				return fmt.Errorf("option %s: value %v is not a duration", o.Name, v)
			}
		}
		return nil
	}
	if o.Kind == KindString && !slices.Contains(o.Values, o.Default) {
		return fmt.Errorf("option %s: default %v is not among its values", o.Name, o.Default)
	}
	for _, v := range append([]any{o.Default}, o.Values...) {
		if err := check(v); err != nil {
			return err
		}
	}
	return nil
}

// IsDefault reports whether every option of opts has its default value.
func (i Impl) IsDefault(opts Options, neutralToo bool) bool {
	for _, o := range i.Options {
		if v, ok := opts[o.Name]; ok && v != o.Default && (neutralToo || !o.Neutral) {
			return false
		}
	}
	return true
}

// Wire is opts as a JSON object for a client in another language: durations in
// milliseconds (a float), everything else as it is.
func (o Options) Wire() ([]byte, error) {
	m := make(map[string]any, len(o))
	for k, v := range o {
		if d, ok := v.(time.Duration); ok {
			m[k] = float64(d) / float64(time.Millisecond)
			continue
		}
		m[k] = v
	}
	return json.Marshal(m)
}

// WireOption is an option as a client in another language declares it in its hello
// line: durations (default, values, min, max) in milliseconds.
type WireOption struct {
	Name    string            `json:"name"`
	Kind    OptionKind        `json:"kind"`
	Default json.RawMessage   `json:"default"`
	Values  []json.RawMessage `json:"values,omitempty"`
	Min     float64           `json:"min,omitempty"`
	Max     float64           `json:"max,omitempty"`
	Neutral bool              `json:"neutral,omitempty"`
	Doc     string            `json:"doc,omitempty"`
}

// Option converts a declaration from the wire, checked as Register checks it.
func (w WireOption) Option() (Option, error) {
	o := Option{Name: w.Name, Kind: w.Kind, Neutral: w.Neutral, Doc: w.Doc, Min: int64(w.Min), Max: int64(w.Max)}
	if w.Kind == KindDuration {
		o.Min, o.Max = int64(w.Min*float64(time.Millisecond)), int64(w.Max*float64(time.Millisecond))
	}
	parse := func(raw json.RawMessage) (any, error) {
		if o.Kind == KindString {
			// Values are not known yet: take the string as it is.
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return nil, fmt.Errorf("option %s: want a string, got %s", o.Name, raw)
			}
			return s, nil
		}
		return o.fromWire(raw)
	}
	var err error
	for _, raw := range w.Values {
		v, err := parse(raw)
		if err != nil {
			return Option{}, err
		}
		o.Values = append(o.Values, v)
	}
	if len(w.Default) == 0 {
		return Option{}, fmt.Errorf("option %s: no default", o.Name)
	}
	if o.Default, err = parse(w.Default); err != nil {
		return Option{}, err
	}
	return o, o.Validate()
}

// fromWire decodes one value as a client's environment or hello carries it.
func (o Option) fromWire(raw json.RawMessage) (any, error) {
	if o.Kind != KindDuration {
		return o.Parse(raw)
	}
	var ms float64
	if err := json.Unmarshal(raw, &ms); err != nil {
		return nil, fmt.Errorf("option %s: want milliseconds, got %s", o.Name, raw)
	}
	d := time.Duration(ms * float64(time.Millisecond))
	return d, o.checkRange(int64(d), d.String())
}

// OptionsFromWire decodes Options.Wire's object for the implementation: how a process
// serving it (locklab-lockserve) reads the values it was started with.
func (i Impl) OptionsFromWire(data []byte) (Options, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("options %s: %w", data, err)
	}
	out := Options{}
	for name, v := range raw {
		o, ok := i.Option(name)
		if !ok {
			return nil, fmt.Errorf("%s has no option %q (%s)", i.Name, name, i.optionNames())
		}
		val, err := o.fromWire(v)
		if err != nil {
			return nil, err
		}
		out[name] = val
	}
	return out, nil
}
