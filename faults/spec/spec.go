// Package spec is what every fault family shares: a fault's Spec (plain data from the
// plan), reading its client target, and recording its window in the run's history. The
// faults package builds faults from specs; its families in packages of their own (the
// network's) read the same specs through this one.
package spec

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/histories"
)

// ErrNeedsCluster is what Available says, wrapped, when it cannot tell without the
// running servers (plans are validated before any server starts).
var ErrNeedsCluster = errors.New("needs the running cluster to tell")

// PromoteTimeout bounds the wait for a promotion (Sentinel's or a Redis Cluster's):
// down-after, election and promotion take about two seconds; a split vote is retried
// after twice cluster.FailoverTimeout.
const PromoteTimeout = 20 * time.Second

// Spec is one scheduled fault: plain data from the plan. Which fields a kind reads is in
// its faults.KindInfo; the others must be zero.
type Spec struct {
	Kind     string
	At       time.Duration // since the start of the run, or since the trigger fired
	Duration time.Duration
	Target   string // e.g. "client:0", "any", "lock-0", "client:0->store"
	Point    string // client faults: where in the client's steps it strikes

	// Trigger "client:N@point" (or "any@point") starts the fault when that client reaches
	// that point instead of at a time; the client is held there until the fault is injected.
	Trigger string

	Latency   time.Duration // network: added delay
	Jitter    time.Duration // network: random spread of the delay
	Direction string        // network: "up" (towards the server), "down" (replies), "both"
	Offset    time.Duration // clocks: jump (may be negative)
	Rate      float64       // clocks: speed factor, 1 = normal
	Mode      string        // kind-specific variant, e.g. failover "manual" or "sentinel"
	Cut       string        // failover: which replicas lag, "all" (the default) or "one"
	// Until "client:N@point" ends a client-pause when that client reaches that point (at
	// the latest after Duration): a pause that lasts exactly until another client acted.
	Until string
	// Every > 0 strikes the fault again every Every after it first struck (At), for as
	// long as the run lasts: the recurring faults of a long run. A timed fault only (its
	// until, if any, ends each strike).
	Every time.Duration
}

func (s Spec) String() string {
	b := fmt.Sprintf("%s at %s for %s on %s", s.Kind, s.At, s.Duration, s.Target)
	if s.Point != "" {
		b += " at point " + s.Point
	}
	if s.Every > 0 {
		b += fmt.Sprintf(" every %s", s.Every)
	}
	if s.Trigger != "" {
		b += " when " + s.Trigger
	}
	if s.Latency != 0 {
		b += fmt.Sprintf(" latency %s±%s", s.Latency, s.Jitter)
	}
	if s.Direction != "" {
		b += " direction " + s.Direction
	}
	if s.Offset != 0 {
		b += fmt.Sprintf(" offset %s", s.Offset)
	}
	if s.Rate != 0 && s.Rate != 1 {
		b += fmt.Sprintf(" rate %g", s.Rate)
	}
	if s.Mode != "" {
		b += " mode " + s.Mode
	}
	if s.Cut != "" {
		b += " cut " + s.Cut
	}
	if s.Until != "" {
		b += " until " + s.Until
	}
	return b
}

// ClientTarget reads "client:N" (0 ≤ N < clients) or "any" (returned as -1).
func ClientTarget(target string, clients int) (int, error) {
	if target == "any" || target == "" {
		return -1, nil
	}
	n, ok := strings.CutPrefix(target, "client:")
	if !ok {
		return 0, fmt.Errorf("target %q: want client:N or any", target)
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || i >= clients {
		return 0, fmt.Errorf("target %q: want client:N with 0 ≤ N < %d", target, clients)
	}
	return i, nil
}

// OpenWindow records the start of s's fault window; -1 when there is no recorder.
func OpenWindow(rec *histories.Recorder, s Spec, detail string) int {
	if rec == nil {
		return -1
	}
	w := rec.FaultStart(s.Kind, s.Target, detail)
	WithOffset(rec, w, s)
	return w
}

// WithOffset records a clock fault's jump on its window.
func WithOffset(rec *histories.Recorder, w int, s Spec) {
	if s.Offset != 0 {
		rec.FaultUpdate(w, func(fw *histories.FaultWindow) { fw.Offset = s.Offset })
	}
}

// DetailWindow replaces the detail of window w, once the fault tells what it did.
func DetailWindow(rec *histories.Recorder, w int, detail string) {
	if rec != nil && w >= 0 {
		rec.FaultDetail(w, detail)
	}
}

// CloseWindow records the end of the window *w, once.
func CloseWindow(rec *histories.Recorder, w *int) {
	if rec != nil && *w >= 0 {
		rec.FaultEnd(*w)
	}
	*w = -1
}

// Short rounds d for a window's detail: to the millisecond, or finer below 10 ms.
func Short(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// Sleep waits d; it reports false when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
