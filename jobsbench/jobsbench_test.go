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
	if _, _, _, err := o.Plans(); err == nil || !strings.Contains(err.Error(), "faults[0]") {
		t.Errorf("jitter above latency: %v", err)
	}
}

// TestRunSideBySide runs the experiment briefly on real Redis with the write-up's own lock:
// every phase counts what it ran, the same-key check runs 1 job and skips 99, and the
// ledger file holds every effect and the read-back.
func TestRunSideBySide(t *testing.T) {
	o := Defaults()
	o.Registry = locks.All()
	o.Duration = 3 * time.Second
	o.Out = t.TempDir()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, ph := range []Phase{res.NoLock, res.WithLock} {
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
	if res.NoLock.Granted != 0 || res.WithLock.Granted < res.WithLock.Ran || res.WithLock.AcquireP50 <= 0 || res.WithLock.AcquireP99 < res.WithLock.AcquireP50 {
		t.Errorf("acquires: without lock %d granted; with lock %d granted for %d jobs, P50 %s, P99 %s",
			res.NoLock.Granted, res.WithLock.Granted, res.WithLock.Ran, res.WithLock.AcquireP50, res.WithLock.AcquireP99)
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
