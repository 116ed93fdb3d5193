package runner

import (
	"os"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/histories"
)

// scrubberFor is a run's scrubber: the passwords of b's servers and the environment's.
// Everything the run writes or returns passes it (client logs and stderr through the
// lockers, server logs, the history and its pictures, result.json, warnings, errors).
func scrubberFor(b cluster.Backend) *access.Scrubber {
	return access.NewScrubber(os.LookupEnv, cluster.Secrets(b)...)
}

// scrubHistory redacts the secrets of what h holds as text from clients and libraries
// (errors, tokens, fault details), in place: a lock client may put its server's URL in
// an error.
func scrubHistory(h *histories.History, s *access.Scrubber) {
	if s.Empty() {
		return
	}
	seen := map[string]string{} // the recorder interns strings: many ops share one
	str := func(p *string) {
		if *p == "" {
			return
		}
		clean, ok := seen[*p]
		if !ok {
			clean = s.String(*p)
			seen[*p] = clean
		}
		*p = clean
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		str(&op.Output.Error)
		str(&op.Output.Token)
		str(&op.Input.Token)
	}
	for i := range h.Faults {
		str(&h.Faults[i].Detail)
	}
}

// scrubSink is sink with each operation's text scrubbed; nil stays nil.
func scrubSink(sink func(histories.Op), s *access.Scrubber) func(histories.Op) {
	if sink == nil || s.Empty() {
		return sink
	}
	return func(op histories.Op) {
		h := histories.History{Ops: []histories.Op{op}}
		scrubHistory(&h, s)
		sink(h.Ops[0])
	}
}
