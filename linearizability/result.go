package linearizability

import (
	"fmt"
	"strings"
	"time"
)

// Property names one checked property of docs/design.md.
type Property string

// The properties, in report order.
const (
	P1 Property = "P1" // mutual exclusion of beliefs (Porcupine, lock model)
	P2 Property = "P2" // safety of the protected resource (Porcupine, locked register)
	P3 Property = "P3" // fence monotonicity (Porcupine, lock model with fences)
	L1 Property = "L1" // progress (checked directly on the history)
	P4 Property = "P4" // at most once: no job's side effect twice (job-queue workload, on the ledger)
	P5 Property = "P5" // at least once: every enqueued job's side effect by the end (job-queue workload)
	P6 Property = "P6" // honest answers: no extend or release ok after another process's grant (on the history)
)

// AllProperties lists the properties in report order, the order of Result.Properties.
func AllProperties() []Property { return []Property{P1, P2, P3, L1, P4, P5, P6} }

// JoinProperties is ps as text, "P1,P2" with sep ",".
func JoinProperties(ps []Property, sep string) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, sep)
}

// Name is the property's name for people, e.g. "mutual exclusion" for P1.
func (p Property) Name() string {
	switch p {
	case P1:
		return "mutual exclusion"
	case P2:
		return "resource safety"
	case P3:
		return "fence monotonicity"
	case L1:
		return "progress"
	case P4:
		return "at most once"
	case P5:
		return "at least once"
	case P6:
		return "honest answers"
	}
	return string(p)
}

// Verdict is the outcome of checking one property, or of a whole history.
type Verdict string

// NA means the history has nothing the property is about (no store operations for P2, no
// fence granted for P3, no lock operations for P1 and L1). Unknown means the checker ran out
// of time: it is never read as OK.
const (
	OK      Verdict = "ok"
	Illegal Verdict = "illegal"
	Unknown Verdict = "unknown"
	NA      Verdict = "n/a"
)

// PropertyResult is the verdict on one property.
type PropertyResult struct {
	Property    Property `json:"property"`
	Verdict     Verdict  `json:"verdict"`
	Explanation string   `json:"explanation,omitempty"` // illegal: the first violation in plain language; unknown, n/a: why
	// Shape (illegal only) is what the first violation is made of, in a few words without
	// times, processes or keys ("acquire ok while another believed"): the same for every
	// run that breaks the property the same way, so findings can be grouped by it.
	Shape string `json:"shape,omitempty"`
	// At and Until (illegal only) are the span of the first violation, in ns since the
	// run's base: where a picture of the run puts it.
	At      int64         `json:"at_ns,omitempty"`
	Until   int64         `json:"until_ns,omitempty"`
	Ops     int           `json:"ops"`        // operations the property was checked on
	Elapsed time.Duration `json:"elapsed_ns"` // checking time, explanation included
	// Undecided (unknown only) are the keys Porcupine ran out of time on.
	Undecided []Undecided `json:"undecided,omitempty"`
}

// Result is the verdict on a whole history.
type Result struct {
	Verdict    Verdict          `json:"verdict"` // illegal if any property is, else unknown if any is, else ok
	Fencing    string           `json:"fencing"` // the store's fencing mode the history was checked with
	Properties []PropertyResult `json:"properties"`
	HTML       string           `json:"html,omitempty"` // path of the visualisation, when one was written
	// HTMLOmitted is how many keys the visualisation leaves out: those Porcupine could
	// not decide in time, and legal ones beyond what a browser can show.
	HTMLOmitted int `json:"html_omitted,omitempty"`
}

// Violation reports whether some property is illegal.
func (r Result) Violation() bool { return r.Verdict == Illegal }

// Unknown reports whether no property is illegal but some could not be decided in time.
func (r Result) Unknown() bool { return r.Verdict == Unknown }

// Property returns the result for p, if it was checked.
func (r Result) Property(p Property) (PropertyResult, bool) {
	for _, pr := range r.Properties {
		if pr.Property == p {
			return pr, true
		}
	}
	return PropertyResult{}, false
}

// overall combines per-property verdicts: any illegal wins, then any unknown; n/a counts as ok.
func overall(props []PropertyResult) Verdict {
	v := OK
	for _, p := range props {
		switch p.Verdict {
		case Illegal:
			return Illegal
		case Unknown:
			v = Unknown
		}
	}
	return v
}

// String renders a compact table: a header line, then one line per property.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (fencing %s)\n", r.Verdict, r.Fencing)
	for _, p := range r.Properties {
		line := fmt.Sprintf("  %-3s %-8s %7d ops %9s", p.Property, p.Verdict, p.Ops, roundDuration(p.Elapsed))
		if p.Explanation != "" {
			line += "  " + p.Explanation
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	if r.HTMLOmitted > 0 {
		fmt.Fprintf(&b, "  the visualisation leaves out %d keys: undecided ones, and legal ones beyond %d operations\n", r.HTMLOmitted, htmlBudget)
	}
	return b.String()
}

// roundDuration keeps three significant-looking digits for the table.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// seconds renders ns since the run's base as seconds with millisecond precision.
func seconds(ns int64) string { return fmt.Sprintf("%.3f s", float64(ns)/1e9) }

// span renders an interval of ns since the base, e.g. "0.140–0.150 s".
func span(from, to int64) string {
	return fmt.Sprintf("%.3f–%.3f s", float64(from)/1e9, float64(to)/1e9)
}
