package plan

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration written as a string in plans ("500ms", "2s"). A value that
// does not parse is kept as an error and reported by Plan.Validate with its field and
// line, which encoding/json cannot do for errors raised while decoding.
type Duration struct {
	d   time.Duration
	bad string
}

// D makes a Duration.
func D(d time.Duration) Duration { return Duration{d: d} }

// D is the duration.
func (d Duration) D() time.Duration { return d.d }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.d.String()) }

// UnmarshalJSON reads a duration string such as "1.5s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		*d = Duration{bad: fmt.Sprintf("want a duration string such as \"500ms\", got %s", b)}
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		*d = Duration{bad: fmt.Sprintf("bad duration %q (want e.g. \"500ms\" or \"2s\")", s)}
		return nil
	}
	*d = Duration{d: v}
	return nil
}
