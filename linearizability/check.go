// Package linearizability checks a recorded history against locklab's properties: P1, P2
// and P3 with Porcupine (per key, with a timeout), L1 directly on the history. It explains
// the first violation of each property in plain language and can write one Porcupine HTML
// visualisation of every partition, with the run's fault windows as annotations.
package linearizability

import (
	"fmt"
	"time"

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
	// Timeout bounds Porcupine's work on each of P1, P2 and P3. Running out gives verdict
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

// Check checks h against P1, P2, P3, L1, and P4 and P5 when it has job operations. The store's rule comes from h.Meta.Fencing,
// which must be off, writes or full. An invalid history is an error and no result; a
// visualisation that cannot be written is an error returned with the complete result.
func Check(h histories.History, opts Options) (Result, error) {
	opts = opts.withDefaults()
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
	// In the order of AllProperties.
	res := Result{Fencing: string(mode), Properties: []PropertyResult{c.exclusion(), c.store(), c.fences(), c.progress(), checkAtMostOnce(h), checkAtLeastOnce(h)}}
	res.Verdict = overall(res.Properties)
	if opts.HTMLPath != "" {
		if err := c.writeHTML(opts.HTMLPath, res); err != nil {
			return res, fmt.Errorf("check history: %w", err)
		}
		res.HTML = opts.HTMLPath
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
	if err := newChecker(h, mode, opts).writeHTML(path, res); err != nil {
		return res, err
	}
	res.HTML = path
	return res, nil
}

// checker holds one history in the forms the properties need.
type checker struct {
	h        histories.History
	mode     model.Fencing
	opts     Options
	beliefs  map[string][]belief
	lockOps  []porcupine.Operation // P1
	storeOps []porcupine.Operation // P2
	fenceOps []porcupine.Operation // P3
}

func newChecker(h histories.History, mode model.Fencing, opts Options) *checker {
	return &checker{
		h: h, mode: mode, opts: opts,
		beliefs:  beliefs(h),
		lockOps:  histories.LockOperations(h),
		storeOps: histories.StoreOperations(h),
		fenceOps: histories.FenceOperations(h),
	}
}

func (c *checker) exclusion() PropertyResult {
	return c.withPorcupine(P1, model.LockModel(model.LockOptions{Exclusion: true}), c.lockOps, "no lock operations",
		func() finding { return explainExclusion(c.h, c.beliefs) })
}

func (c *checker) store() PropertyResult {
	return c.withPorcupine(P2, model.RegisterModel(c.mode), c.storeOps, "no store operations",
		func() finding { return explainStore(c.h, c.mode, c.storeOps, c.opts.Timeout) })
}

func (c *checker) fences() PropertyResult {
	return c.withPorcupine(P3, model.LockModel(model.LockOptions{Fences: true}), c.fenceOps, "no acquire was granted a fence",
		func() finding { return explainFences(c.h) })
}

// withPorcupine decides property p by Porcupine alone, then explains a violation.
func (c *checker) withPorcupine(p Property, m porcupine.Model, ops []porcupine.Operation, none string, explain func() finding) PropertyResult {
	if len(ops) == 0 {
		return PropertyResult{Property: p, Verdict: NA, Explanation: none}
	}
	start := time.Now()
	r := PropertyResult{Property: p, Ops: len(ops)}
	switch porcupine.CheckOperationsTimeout(m, ops, c.opts.Timeout) {
	case porcupine.Ok:
		r.Verdict = OK
	case porcupine.Illegal:
		f := explain()
		r.Verdict, r.Explanation, r.At, r.Until = Illegal, f.text, f.at, max(f.until, f.at)
	default:
		r.Verdict = Unknown
		r.Explanation = fmt.Sprintf("Porcupine did not decide within %s", c.opts.Timeout)
	}
	r.Elapsed = time.Since(start)
	return r
}

func (c *checker) progress() PropertyResult {
	start := time.Now()
	v, f, n := checkProgress(c.h, c.beliefs, c.opts.Slack)
	r := PropertyResult{Property: L1, Verdict: v, Ops: n}
	switch v {
	case Illegal:
		r.Explanation, r.At, r.Until = f.text, f.at, max(f.until, f.at)
	case NA:
		r.Explanation = f.text
	}
	r.Elapsed = time.Since(start)
	return r
}
