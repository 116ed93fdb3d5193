// Package linearizability checks a recorded history against locklab's properties: P1, P2
// and P3 with Porcupine (per key, with a timeout), L1 directly on the history. It explains
// the first violation of each property in plain language and can write one Porcupine HTML
// visualisation of every partition, with the run's fault windows as annotations.
package linearizability

import (
	"fmt"
	"os"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/anishathalye/porcupine"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/model"
)

// Defaults for Options' zero values.
const (
	DefaultTimeout = 30 * time.Second
	DefaultSlack   = 250 * time.Millisecond
)

// Options tune Check.
type Options struct {
	// Timeout bounds Porcupine's work on each of P1, P2 and P3, each from the start of
	// its first partition's search (they share the cores). Running out gives verdict
	// unknown, never ok. 0 means DefaultTimeout. Explaining an illegal P2 and writing the
	// visualisation each get the same bound again, so Check may take up to about 5×Timeout.
	Timeout time.Duration
	// HTMLPath, if not empty, is where one Porcupine visualisation of all partitions of all
	// properties is written, for legal and illegal histories alike.
	HTMLPath string
	// Slack is how much longer than the TTL a lock may stay taken without a believer before
	// L1 calls it stuck. 0 means DefaultSlack; a negative value means no slack at all.
	Slack time.Duration
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.Slack == 0:
		o.Slack = DefaultSlack
	case o.Slack < 0:
		o.Slack = 0
	}
	return o
}

// LimitMemory sets the process's soft memory limit (debug.SetMemoryLimit) to one under
// which checking h stays fast, unless the user set GOMEMLIMIT, which wins: the history
// itself (its operations' slice), a half of it again for the checker's own indexes,
// beliefs and partitions, and 48 MB for the searches in flight. Without a limit the
// garbage collector lets the heap grow to twice what is live, which for a million
// operations is 600 MB of which half is garbage. It is soft: a search that needs more
// memory gets it, at the cost of more collections. For programs that check one big
// history, such as locklab check; it returns the limit set, 0 when GOMEMLIMIT is.
func LimitMemory(h histories.History) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	history := int64(cap(h.Ops)) * int64(unsafe.Sizeof(histories.Op{}))
	limit := history*3/2 + 48<<20
	debug.SetMemoryLimit(limit)
	return limit
}

// Check checks h against P1, P2, P3, L1, P6, and P4 and P5 when it has job operations. The store's rule comes from h.Meta.Fencing,
// which must be off, writes or full. An invalid history is an error and no result; a
// visualisation that cannot be written is an error returned with the complete result.
func Check(h histories.History, opts Options) (Result, error) {
	return CheckFrom(h, Carry{}, opts)
}

// CheckFrom checks h, a window of one key's history that Cut allowed, starting where the
// key's earlier windows left it (from, which CarryAfter gave; the zero Carry for the
// first). Checked one after the other, a key's windows give the verdicts of Check on the
// whole history (window.go says why). With the zero Carry it is Check, for any history.
func CheckFrom(h histories.History, from Carry, opts Options) (Result, error) {
	opts = opts.withDefaults()
	if !from.zero() {
		for _, op := range h.Ops {
			if op.Key != h.Ops[0].Key {
				return Result{}, fmt.Errorf("check window: keys %q and %q: a window after another is one key's", h.Ops[0].Key, op.Key)
			}
		}
	}
	mode, err := model.ParseFencing(h.Meta.Fencing)
	if err != nil {
		return Result{}, fmt.Errorf("check history: %w", err)
	}
	for i, op := range h.Ops {
		if err := op.Validate(); err != nil {
			return Result{}, fmt.Errorf("check history: op %d: %w", i, err)
		}
	}
	for i, w := range h.Faults {
		if err := w.Validate(); err != nil {
			return Result{}, fmt.Errorf("check history: fault %d: %w", i, err)
		}
	}
	c := newChecker(h, mode, opts)
	c.from = from
	// In the order of AllProperties.
	searched := c.searchAll(c.searches())
	res := Result{Fencing: string(mode), Properties: append(searched, c.progress(), checkAtMostOnce(h), checkAtLeastOnce(h), checkAnswers(h))}
	res.Verdict = overall(res.Properties)
	if opts.HTMLPath != "" {
		omitted, err := c.writeHTML(opts.HTMLPath, res)
		if err != nil {
			return res, fmt.Errorf("check history: %w", err)
		}
		res.HTML, res.HTMLOmitted = opts.HTMLPath, omitted
	}
	return res, nil
}

// WriteHTML writes the visualisation of h that Check writes with Options.HTMLPath, for
// res, the result Check gave for h with the same options: a caller that wants the page
// only for some verdicts checks first and draws after. It returns res with its HTML set.
func WriteHTML(h histories.History, res Result, path string, opts Options) (Result, error) {
	opts = opts.withDefaults()
	mode, err := model.ParseFencing(h.Meta.Fencing)
	if err != nil {
		return res, fmt.Errorf("write visualisation: %w", err)
	}
	// No beliefs: the page needs the partitions and res, and the beliefs (a pass over the
	// whole history) serve only the explanations, which res already has.
	c := &checker{h: h, mode: mode, opts: opts}
	omitted, err := c.writeHTML(path, res)
	if err != nil {
		return res, err
	}
	res.HTML, res.HTMLOmitted = path, omitted
	return res, nil
}

// checker holds one history in the forms the properties need.
type checker struct {
	h       histories.History
	mode    model.Fencing
	opts    Options
	beliefs map[string][]belief
	parts   [][]partition // of each search, as searchAll left them, for the visualisation
	from    Carry         // where the key's earlier windows left it (CheckFrom)
}

func newChecker(h histories.History, mode model.Fencing, opts Options) *checker {
	return &checker{h: h, mode: mode, opts: opts, beliefs: beliefs(h)}
}

// searches are the properties Porcupine decides, in the order of AllProperties.
func (c *checker) searches() []search {
	return []search{{
		prop: P1, model: model.LockModel(model.LockOptions{Exclusion: true}), sel: histories.LockChecked(),
		none:    "no lock operations",
		explain: func([]porcupine.Operation) finding { return explainExclusion(c.h, c.beliefs) },
	}, {
		prop: P2, model: model.RegisterModelFrom(c.mode, c.from.Register), sel: histories.StoreChecked(),
		none: "no store operations",
		explain: func(ops []porcupine.Operation) finding {
			return explainStore(c.h, c.mode, c.from.Register, ops, c.opts.Timeout)
		},
	}, {
		prop: P3, model: model.LockModelFrom(model.LockOptions{Fences: true}, model.LockState{Holder: model.NoHolder, LastFence: c.from.LastFence}), sel: histories.FenceChecked(),
		none:    "no acquire was granted a fence",
		explain: func([]porcupine.Operation) finding { return explainFences(c.h, c.from.LastFence) },
	}}
}

func (c *checker) progress() PropertyResult {
	start := time.Now()
	v, f, n := checkProgress(c.h, c.beliefs, c.opts.Slack, c.from)
	r := PropertyResult{Property: L1, Verdict: v, Ops: n}
	switch v {
	case Illegal:
		r.Explanation, r.Shape, r.At, r.Until = f.text, f.shape, f.at, max(f.until, f.at)
	case NA:
		r.Explanation = f.text
	}
	r.Elapsed = time.Since(start)
	return r
}
