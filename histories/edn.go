package histories

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Jepsen's EDN history format (history.edn: one operation map per line), so that a locklab
// history can be cross-checked with Knossos or read by other Jepsen tools. docs/export.md
// documents the mapping; in short, every operation becomes an :invoke at its call and a
// completion at its return (:ok, :fail, or :info for an unknown outcome), :value is a
// [key x] tuple as jepsen.independent writes them, and a crash is an :invoke/:info pair
// of :f :crash on the crashed process, which (as after every :info) never acts again.

// ednEvent is one line of a Jepsen history: an invocation or a completion.
type ednEvent struct {
	index int    // dense, 0..n-1, in line order
	time  int64  // ns since the run's base
	typ   string // invoke, ok, fail or info
	op    int    // position in History.Ops of the operation this event belongs to
}

// ednGroup orders the events that share a time: completions first, then operations that
// take no time (their invocation, then their completion), then invocations. So a process
// whose operation returns at t and whose next one is called at t stays sequential.
func ednGroup(op Op, invoke bool) int {
	switch {
	case op.Call == op.Return:
		return 1
	case invoke:
		return 2
	}
	return 0
}

// ednEvents orders the events of h as the EDN export writes them: by time, ties broken
// by ednGroup and then by position in h.Ops. It refuses a history Jepsen tools would reject:
// a process that invokes while its previous operation is still running, or that acts
// again after an operation with an unknown outcome (Jepsen retires a process after :info;
// locklab's recorder moves the client to a fresh process id instead).
func ednEvents(h History) ([]ednEvent, error) {
	type ev struct {
		t      int64
		group  int
		op     int
		invoke bool
	}
	evs := make([]ev, 0, 2*len(h.Ops))
	for i, op := range h.Ops {
		if err := op.Validate(); err != nil {
			return nil, fmt.Errorf("op %d: %w", i, err)
		}
		evs = append(evs, ev{op.Call, ednGroup(op, true), i, true}, ev{op.Return, ednGroup(op, false), i, false})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if c := cmp.Compare(a.group, b.group); c != 0 {
			return c
		}
		if c := cmp.Compare(a.op, b.op); c != 0 {
			return c
		}
		switch {
		case a.invoke == b.invoke:
			return 0
		case a.invoke:
			return -1
		}
		return 1
	})
	running := make(map[int]int) // process → op it has invoked and not completed
	retired := make(map[int]int) // process → its op whose outcome is unknown (or its crash)
	out := make([]ednEvent, len(evs))
	for n, e := range evs {
		op := h.Ops[e.op]
		p := op.Process
		if prev, ok := retired[p]; ok {
			return nil, fmt.Errorf("op %d: process %d acts again after op %d, whose outcome is unknown (a Jepsen process never acts after :info)", e.op, p, prev)
		}
		typ := "invoke"
		if e.invoke {
			if prev, ok := running[p]; ok {
				return nil, fmt.Errorf("op %d: process %d invokes it while its op %d is still running", e.op, p, prev)
			}
			running[p] = e.op
		} else {
			delete(running, p)
			typ = completionType(op)
			if typ == "info" {
				retired[p] = e.op
			}
		}
		out[n] = ednEvent{index: n, time: e.t, typ: typ, op: e.op}
	}
	return out, nil
}

// completionType is the Jepsen type of op's completion. A crash is indeterminate by nature.
func completionType(op Op) string {
	if op.Kind == Crash {
		return "info"
	}
	switch op.Outcome {
	case OK:
		return "ok"
	case Fail:
		return "fail"
	}
	return "info"
}

// WriteEDN writes h as a Jepsen EDN history, one operation map per line. Nothing is
// written when h is not a well-formed Jepsen history (see ednEvents). Fault windows are not
// written: Jepsen's checkers do not read them.
func WriteEDN(w io.Writer, h History) error {
	evs, err := ednEvents(h)
	if err != nil {
		return fmt.Errorf("export EDN: %w", err)
	}
	bw := bufio.NewWriter(w)
	for _, e := range evs {
		writeEDNEvent(bw, e, h.Ops[e.op])
	}
	// A bufio.Writer keeps its first error and returns it from every later call.
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export EDN: %w", err)
	}
	return nil
}

// writeEDNEvent writes one line: a map with its keys in the order Jepsen prints them
// (:index :time :type :process :f :value), then locklab's additions.
func writeEDNEvent(b *bufio.Writer, e ednEvent, op Op) {
	fmt.Fprintf(b, "{:index %d, :time %d, :type :%s, :process %d, :f :%s, :value [", e.index, e.time, e.typ, op.Process, op.Kind)
	b.WriteString(ednString(op.Key))
	b.WriteByte(' ')
	b.WriteString(ednSecond(e, op))
	b.WriteByte(']')
	if f := ednFence(e, op); f > 0 {
		b.WriteString(", :fence ")
		b.WriteString(strconv.FormatInt(f, 10))
	}
	if op.Kind == Write {
		// The value the writer had read and means to overwrite: with it a write reads as
		// Knossos's :cas [base value], which is how a lost update shows (docs/export.md).
		b.WriteString(", :locklab/base ")
		b.WriteString(strconv.FormatInt(op.Input.Base, 10))
	}
	if e.typ != "invoke" && e.typ != "ok" && op.Output.Error != "" {
		b.WriteString(", :error ")
		b.WriteString(ednString(op.Output.Error))
	}
	b.WriteString(", :locklab/client ")
	b.WriteString(strconv.Itoa(op.Client))
	b.WriteString("}\n")
}

// ednSecond is the second element of the [key x] value: the lease's token for lock
// operations, the register's value for store operations. What only a completion can know
// (an acquire's token, a read's value) is nil on the invocation and on a completion that
// is not :ok: Knossos requires a :fail to carry its invocation's value.
func ednSecond(e ednEvent, op Op) string {
	switch op.Kind {
	case Acquire:
		if e.typ == "ok" {
			return ednToken(op.Output.Token)
		}
	case Release, Extend:
		return ednToken(op.Input.Token)
	case Read:
		if e.typ == "ok" {
			return strconv.FormatInt(op.Output.Value, 10)
		}
	case Write:
		return strconv.FormatInt(op.Input.Value, 10)
	}
	return "nil"
}

func ednToken(t string) string {
	if t == "" {
		return "nil"
	}
	return ednString(t)
}

// ednFence is the fencing token of the event, 0 for none: granted (acquire, extend: on :ok
// only) or presented to the store (read, write: on both events).
func ednFence(e ednEvent, op Op) int64 {
	switch op.Kind {
	case Acquire, Extend:
		if e.typ == "ok" {
			return op.Output.Fence
		}
	case Read, Write:
		return op.Input.Fence
	}
	return 0
}

// ednString quotes s as an EDN string. EDN names the escapes \" \\ \n \t \r; other control
// characters are written as \uXXXX, which Clojure's reader accepts, and invalid UTF-8 as
// U+FFFD, so that the file stays valid UTF-8.
func ednString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r) // range turned invalid UTF-8 into utf8.RuneError already
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
