// Package bridge turns a TLC counterexample of the TLA+ specs in tla/ into a locklab
// plan, so that a violation the model checker found in the abstract model can be replayed
// on real Redis and checked by the same properties (tla/README.md, docs/design.md).
//
// trace.go reads the trace as tla/check.sh --update-traces saves it, config.go the TLC
// config it was checked with, story.go reads the LeaseLock schedule out of the events and
// plan.go turns that schedule into a plan.Plan; failover.go and redlock.go map the
// Failover and Redlock counterexamples.
package bridge

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Trace is one TLC counterexample: the violated invariant and the states leading to it.
type Trace struct {
	File       string // where it was read from; every error names it
	Config     string // the TLC config, e.g. "LeaseLock_pause_off"
	ConfigPath string // that config's file as the header names it, relative to the repository root
	Spec       string // the module checked, e.g. "LeaseLock"
	Invariant  string // the invariant TLC reported violated
	States     []State
}

// State is one state of the behaviour, with its variables as TLC printed them.
type State struct {
	N      int               // TLC's state number, from 1
	Action string            // the action that led to it ("Acquire", "Tick"; "Initial predicate" for state 1)
	Line   int               // line of the "State N:" header
	Vars   map[string]string // variable name → TLA+ value, continuation lines joined
	Event  Event             // the value of the variable event
}

// Event is the step that led to a state, as the specs record it in their event variable:
// <<"acquire", c1, 1>> is Name "acquire" with Args ["c1", "1"].
type Event struct {
	Line int      // line of the event variable in the trace file
	Name string   // first element, unquoted
	Args []string // the other elements as TLA+ values (model values, numbers, records...)
}

// String renders the event as the trace prints it.
func (e Event) String() string {
	parts := append([]string{strconv.Quote(e.Name)}, e.Args...)
	return "<<" + strings.Join(parts, ", ") + ">>"
}

// Arg is argument i, or "" when the event has fewer.
func (e Event) Arg(i int) string {
	if i < 0 || i >= len(e.Args) {
		return ""
	}
	return e.Args[i]
}

// ParseError says where a trace or config file is malformed.
type ParseError struct {
	File   string
	Line   int
	Reason string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason) }

// The lines of a saved trace that carry meaning. The header is check.sh's; the rest is TLC's.
var (
	headerRe    = regexp.MustCompile(`^# TLC counterexample: config (\S+) \((\S+)\), spec (\S+), invariant (\S+) violated\.$`)
	invariantRe = regexp.MustCompile(`^Error: Invariant (\S+) is violated`)
	stateRe     = regexp.MustCompile(`^State (\d+): <(.*)>$`)
	varRe       = regexp.MustCompile(`^/\\ (\w+) = (.*)$`)
)

// ReadTrace reads a saved trace file.
func ReadTrace(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	return ParseTrace(f, path)
}

// ParseTrace reads a trace; name is the file name errors give.
func ParseTrace(r io.Reader, name string) (*Trace, error) {
	tr := &Trace{File: name}
	bad := func(line int, format string, args ...any) error {
		return &ParseError{File: name, Line: line, Reason: fmt.Sprintf(format, args...)}
	}
	var cur *State
	lastVar, headerLine, invLine := "", 0, 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024) // long values stay on one line
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), " \t\r")
		switch {
		case line == "":
			lastVar = "" // a blank line ends a state's variables
		case headerRe.MatchString(line):
			m := headerRe.FindStringSubmatch(line)
			tr.Config, tr.ConfigPath, tr.Spec, tr.Invariant = m[1], m[2], m[3], m[4]
			headerLine = n
		case strings.HasPrefix(line, "#"):
			// check.sh's other comments
		case invariantRe.MatchString(line):
			inv := invariantRe.FindStringSubmatch(line)[1]
			if headerLine > 0 && inv != tr.Invariant {
				return nil, bad(n, "TLC reports invariant %s violated, the header (line %d) says %s", inv, headerLine, tr.Invariant)
			}
			invLine = n
		case line == "Error: The behavior up to this point is:":
		case strings.HasPrefix(line, "Error:"):
			// Deadlock, temporal properties, TLC's own errors: not a counterexample to an invariant.
			return nil, bad(n, "not an invariant violation: %q", line)
		case stateRe.MatchString(line):
			m := stateRe.FindStringSubmatch(line)
			num, _ := strconv.Atoi(m[1])
			if num != len(tr.States)+1 {
				return nil, bad(n, "state %d follows state %d", num, len(tr.States))
			}
			action := m[2]
			if action != "Initial predicate" {
				action, _, _ = strings.Cut(action, " ")
			}
			tr.States = append(tr.States, State{N: num, Action: action, Line: n, Vars: map[string]string{}})
			cur, lastVar = &tr.States[len(tr.States)-1], ""
		case varRe.MatchString(line):
			if cur == nil {
				return nil, bad(n, "variable before the first state: %q", line)
			}
			m := varRe.FindStringSubmatch(line)
			if _, dup := cur.Vars[m[1]]; dup {
				return nil, bad(n, "state %d sets %s twice", cur.N, m[1])
			}
			cur.Vars[m[1]], lastVar = m[2], m[1]
			if m[1] == "event" {
				cur.Event.Line = n
			}
		case (line[0] == ' ' || line[0] == '\t') && lastVar != "":
			// TLC wraps long values onto indented lines.
			cur.Vars[lastVar] += " " + strings.TrimSpace(line)
		default:
			return nil, bad(n, "unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace %s: %w", name, err)
	}
	switch {
	case headerLine == 0:
		return nil, bad(1, "no header line (# TLC counterexample: config ..., spec ..., invariant ... violated.)")
	case invLine == 0:
		return nil, bad(n, "no line \"Error: Invariant ... is violated\": not an invariant counterexample")
	case len(tr.States) == 0:
		return nil, bad(n, "no states")
	}
	for i := range tr.States {
		st := &tr.States[i]
		raw, ok := st.Vars["event"]
		if !ok {
			return nil, bad(st.Line, "state %d has no event variable (the specs record every step in it)", st.N)
		}
		ev, err := parseEvent(raw)
		if err != nil {
			return nil, bad(st.Event.Line, "event of state %d: %v", st.N, err)
		}
		ev.Line = st.Event.Line
		st.Event = ev
	}
	return tr, nil
}

// parseEvent reads <<"name", arg, ...>>.
func parseEvent(raw string) (Event, error) {
	inner, ok := strings.CutPrefix(raw, "<<")
	if inner, ok = strings.CutSuffix(inner, ">>"); !ok {
		return Event{}, fmt.Errorf("%s: want a tuple <<\"name\", ...>>", raw)
	}
	elems, err := splitTop(inner)
	if err != nil {
		return Event{}, fmt.Errorf("%s: %v", raw, err)
	}
	if len(elems) == 0 {
		return Event{}, fmt.Errorf("%s: empty tuple, want <<\"name\", ...>>", raw)
	}
	name, err := strconv.Unquote(elems[0])
	if err != nil || !strings.HasPrefix(elems[0], `"`) {
		return Event{}, fmt.Errorf("%s: first element %s is not a string", raw, elems[0])
	}
	return Event{Name: name, Args: elems[1:]}, nil
}

// splitTop splits a TLA+ value list at the commas that are not nested in a tuple, record,
// set, function or string: `c1, [a |-> 1, b |-> 2], {1, 2}` is three elements.
func splitTop(s string) ([]string, error) {
	var out []string
	depth, start, inString := 0, 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == '<' && i+1 < len(s) && s[i+1] == '<':
			depth++
			i++
		case c == '>' && i+1 < len(s) && s[i+1] == '>':
			depth--
			i++
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
		if depth < 0 {
			return nil, fmt.Errorf("unbalanced brackets")
		}
	}
	if depth != 0 || inString {
		return nil, fmt.Errorf("unbalanced brackets or quotes")
	}
	if last := strings.TrimSpace(s[start:]); last != "" || len(out) > 0 {
		out = append(out, last)
	}
	return out, nil
}
