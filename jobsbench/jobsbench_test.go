package jobsbench

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/locks"
)

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	if h.quantile(0.5) != 0 {
		t.Fatal("empty histogram has a median")
	}
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		got := h.quantile(c.q)
		if got < c.want || float64(got) > 1.011*float64(c.want) {
			t.Errorf("q%g = %s, want %s within 1%%", c.q, got, c.want)
		}
	}
	h.add(0)
	h.add(time.Hour) // beyond the last bucket: counted there, not lost
	if h.n != 1002 {
		t.Errorf("n = %d", h.n)
	}
}

func TestOptionsErrorsNameTheField(t *testing.T) {
	for _, c := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Workers = 0 }, "workers:"},
		{func(o *Options) { o.PerMinute = 0 }, "rate:"},
		{func(o *Options) { o.Visibility = 0 }, "visibility:"},
		{func(o *Options) { o.OnTaken = "later" }, "on-taken:"},
		{func(o *Options) { o.Jitter = -time.Millisecond }, "jitter:"},
	} {
		o := Defaults()
		o.Registry = locks.All()
		c.edit(&o)
		if err := o.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("got %v, want an error starting %q", err, c.want)
		}
	}
	o := Defaults()
	o.Registry = locks.All()
	o.Latency, o.Jitter = time.Millisecond, 5*time.Millisecond // jitter beyond the latency
	if _, _, err := o.Plans(); err == nil || !strings.Contains(err.Error(), "faults[0]") {
		t.Errorf("jitter above latency: %v", err)
	}
}

// TestRunSideBySide runs the experiment briefly on real Redis with the write-up's own lock:
// every phase of both regimes counts what it ran, the same-key check runs 1 job and skips
// 99, and the ledger file holds every effect and the read-back.
func TestRunSideBySide(t *testing.T) {
	o := Defaults()
	o.Registry = locks.All()
	o.Duration = 3 * time.Second
	o.Out = t.TempDir()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var phases []Phase
	for _, r := range []Regime{res.Held, res.Released} {
		phases = append(phases, r.NoLock, r.WithLock, r.Idempotent, r.UntilAck)
	}
	for _, ph := range phases {
		if ph.Enqueued < 50 || ph.Ran+ph.Lost != ph.Enqueued || ph.Effects < ph.Ran {
			t.Errorf("%s: enqueued %d, ran %d, lost %d, effects %d", ph.Name, ph.Enqueued, ph.Ran, ph.Lost, ph.Effects)
		}
		if ph.PerMinute <= 0 {
			t.Errorf("%s: no throughput measured", ph.Name)
		}
		effects, tallyEnd := ledger(t, filepath.Join(ph.Dir, LedgerFile))
		if int64(effects) < ph.Effects || !tallyEnd {
			t.Errorf("%s: ledger file has %d effects (want at least %d) and read-back end %v", ph.Name, effects, ph.Effects, tallyEnd)
		}
	}
	nl, wl := res.Released.NoLock, res.Released.WithLock
	if nl.Granted != 0 || wl.Granted < wl.Ran || wl.AcquireP50 <= 0 || wl.AcquireP99 < wl.AcquireP50 {
		t.Errorf("acquires: without lock %d granted; with lock %d granted for %d jobs, P50 %s, P99 %s",
			nl.Granted, wl.Granted, wl.Ran, wl.AcquireP50, wl.AcquireP99)
	}
	s := res.SameKey
	if s == nil || s.Effects != 1 || s.Skipped != 99 || s.Lost != 99 {
		t.Fatalf("same-key check: %+v, want 1 run, 99 skipped (and lost)", s)
	}
}

func ledger(t *testing.T, path string) (effects int, end bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var op histories.Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch {
		case op.Kind == histories.Effect:
			effects++
		case op.Kind == histories.Tally && op.Key == histories.TallyEnd:
			end = true
		}
	}
	return effects, end
}

// TestRegimesByConstruction runs every phase of the experiment on a small load where every
// job's first run stalls past its visibility timeout (until the queue re-delivered it, and
// 1 s more), with twice as many workers as jobs at a time, so that what each phase counts
// follows from the order the stall imposes, not from timing: held (the copy arrives while
// the first run holds the lock), the lock turns every duplicate into a skip; released (the
// copy arrives after the release), it cannot; the idempotency record refuses every second
// side effect in both; the lock held until the ack skips the copy in both. With every
// stalled run then failing, the lock's skips lose every job, and no lock loses none.
func TestRegimesByConstruction(t *testing.T) {
	o := Defaults()
	o.Registry = locks.All()
	o.Impl, o.Workers, o.PerMinute, o.Duration = "setnx", 8, 240, time.Second
	o.Work, o.TTL, o.Visibility, o.Latency, o.Jitter = 20*time.Millisecond, 10*time.Second, 200*time.Millisecond, 0, 0
	o.StallRate, o.StallAfter, o.StallFail, o.SameKey = 1, time.Second, 0, 0
	o.Out = t.TempDir()
	phases, sameKey, err := o.Plans()
	if err != nil || sameKey != nil || len(phases) != 8 {
		t.Fatalf("plans: %d phases, same key %v, %v", len(phases), sameKey, err)
	}
	failing := o
	failing.StallFail = 1
	failing.Out = t.TempDir()
	failPhases, _, err := failing.Plans()
	if err != nil {
		t.Fatal(err)
	}
	// What each phase must count: every job run twice; every job's copy skipped; every
	// job's second side effect refused by the idempotency record; every job lost.
	type want struct{ allDuplicated, skipped, done, allLost bool }
	type phaseCase struct {
		o     Options
		phase PhasePlan
		want  want
	}
	wants := map[string]want{
		Held + NoLock: {allDuplicated: true}, Held + WithLock: {skipped: true}, Held + Idempotent: {done: true}, Held + UntilAck: {skipped: true},
		Released + NoLock: {allDuplicated: true}, Released + WithLock: {allDuplicated: true}, Released + Idempotent: {done: true}, Released + UntilAck: {skipped: true},
	}
	var cases []phaseCase
	for _, ph := range phases {
		cases = append(cases, phaseCase{o, ph, wants[ph.Regime+ph.Setting]})
	}
	for _, ph := range failPhases {
		switch {
		case ph.Regime == Held && ph.Setting == NoLock: // each failed run's copy ran: nothing lost
			cases = append(cases, phaseCase{failing, ph, want{}})
		case ph.Regime == Held && ph.Setting == WithLock: // each copy was skipped and acknowledged
			cases = append(cases, phaseCase{failing, ph, want{skipped: true, allLost: true}})
		}
	}
	for _, c := range cases {
		name := c.phase.Regime + "/" + c.phase.Setting
		if c.o.StallFail > 0 {
			name += "/failing"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := runPhase(context.Background(), c.o, name, c.phase.Plan)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("enqueued %d, ran %d, duplicated %d, lost %d, skipped %d, re-delivered %d, failed %d, refused as done %d",
				got.Enqueued, got.Ran, got.Duplicated, got.Lost, got.Skipped, got.Redelivers, got.Failed, got.Done)
			switch {
			case got.Enqueued == 0 || got.Ran+got.Lost != got.Enqueued:
				t.Fatalf("enqueued %d, ran %d, lost %d", got.Enqueued, got.Ran, got.Lost)
			case c.want.allDuplicated && got.Duplicated != got.Ran:
				t.Errorf("%d of %d jobs ran twice or more, want every one", got.Duplicated, got.Ran)
			case !c.want.allDuplicated && got.Duplicated != 0:
				t.Errorf("%d of %d jobs ran twice or more, want none", got.Duplicated, got.Ran)
			case c.want.skipped != (got.Skipped >= got.Enqueued):
				t.Errorf("%d re-deliveries skipped of %d jobs, want skips %v", got.Skipped, got.Enqueued, c.want.skipped)
			case !c.want.skipped && got.Skipped != 0:
				t.Errorf("%d re-deliveries skipped, want none", got.Skipped)
			case c.want.done && got.Done < got.Ran:
				t.Errorf("the idempotency record refused %d side effects of %d jobs, want one each", got.Done, got.Ran)
			case c.want.allLost && (got.Lost != got.Enqueued || got.Failed != got.Enqueued):
				t.Errorf("%d of %d jobs lost after %d failed runs, want every job lost", got.Lost, got.Enqueued, got.Failed)
			case !c.want.allLost && got.Lost != 0:
				t.Errorf("%d of %d jobs lost, want none", got.Lost, got.Enqueued)
			}
		})
	}
}
