package faketime

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeAt is what libfaketime computes for a file line "+X xR" at real time t, for a
// process whose libfaketime started at s: s + X + (t − s)·R.
func fakeAt(t *testing.T, line string, s, at time.Time) time.Time {
	t.Helper()
	x, r, ok := strings.Cut(strings.TrimSpace(line), " x")
	if !ok {
		t.Fatalf("line %q: want \"+X xR\"", line)
	}
	xs, err := strconv.ParseFloat(x, 64)
	if err != nil {
		t.Fatalf("line %q: offset: %v", line, err)
	}
	rate, err := strconv.ParseFloat(r, 64)
	if err != nil {
		t.Fatalf("line %q: rate: %v", line, err)
	}
	since := float64(at.Sub(s)) * rate
	return s.Add(time.Duration(xs*float64(time.Second)) + time.Duration(since))
}

// The file must make libfaketime's clock the one the harness set, whatever the process's
// start time: before and after a restart, at rate 1 and at other rates.
func TestFaketimeFileMatchesTheClockSet(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		start  time.Duration // process start, relative to t0
		set    time.Duration // when SetClock was called
		offset time.Duration
		rate   float64
	}{
		{"jump forward", 0, 2 * time.Second, 5 * time.Second, 1},
		{"jump back", 0, 2 * time.Second, -3 * time.Second, 1},
		{"run fast", 0, 10 * time.Second, 0, 2},
		{"run slow after a jump", time.Second, 7 * time.Second, 1500 * time.Millisecond, 0.5},
		{"restarted after the setting", 20 * time.Second, 7 * time.Second, 2 * time.Second, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := &Clock{start: t0.Add(c.start), base: t0.Add(c.set), offset: c.offset, rate: c.rate}
			for _, after := range []time.Duration{0, time.Second, 90 * time.Second} {
				at := t0.Add(c.set + after)
				if at.Before(clk.start) {
					continue
				}
				got := fakeAt(t, clk.line(), clk.start, at)
				want := at.Add(clk.OffsetAt(at))
				if d := got.Sub(want); math.Abs(float64(d)) > float64(time.Microsecond) {
					t.Errorf("at set+%s: libfaketime reads %s, want %s (off by %s; line %q)", after, got, want, d, clk.line())
				}
			}
			if got := clk.OffsetAt(clk.base); got != c.offset {
				t.Errorf("offset right after SetClock = %s, want %s", got, c.offset)
			}
		})
	}
}

func TestFaketimeLineFormat(t *testing.T) {
	now := time.Now()
	clk := &Clock{start: now, base: now}
	for _, c := range []struct {
		offset time.Duration
		rate   float64
		want   string
	}{
		{0, 1, "+0.000000 x1\n"},
		{5 * time.Second, 1, "+5.000000 x1\n"},
		{-2500 * time.Millisecond, 1, "-2.500000 x1\n"},
		{0, 1.5, "+0.000000 x1.5\n"},
	} {
		clk.offset, clk.rate = c.offset, c.rate
		if got := clk.line(); got != c.want {
			t.Errorf("offset %s rate %g: line %q, want %q", c.offset, c.rate, got, c.want)
		}
	}
}

// TestCalibrateFindsLibfaketimesStart: libfaketime started later than Started recorded
// (a slow start-up); at a rate other than 1 the server reads off by (S − S')·(R − 1), and
// Calibrate, given that lag, writes the file for the real start, so that the server reads
// the clock as set again.
func TestCalibrateFindsLibfaketimesStart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, rate := range []float64{3, 2, 0.5} {
		late := 150 * time.Millisecond // libfaketime's own start, after Started's
		clk := &Clock{path: t.TempDir() + "/clock", start: t0, base: t0.Add(time.Second), offset: 0, rate: rate}
		real := t0.Add(late)
		at := t0.Add(2 * time.Second)
		lag := at.Add(clk.OffsetAt(at)).Sub(fakeAt(t, clk.line(), real, at))
		if want := time.Duration(float64(late) * (rate - 1)); (lag - want).Abs() > time.Microsecond {
			t.Fatalf("rate %g: the server reads %s behind, want %s", rate, lag, want)
		}
		if err := clk.Calibrate(lag); err != nil {
			t.Fatal(err)
		}
		for _, after := range []time.Duration{0, time.Minute} {
			got := fakeAt(t, clk.line(), real, at.Add(after))
			if d := got.Sub(at.Add(after).Add(clk.OffsetAt(at.Add(after)))); d.Abs() > time.Microsecond {
				t.Errorf("rate %g: after calibrating, off by %s", rate, d)
			}
		}
	}
	clk := &Clock{path: t.TempDir() + "/clock", start: t0, base: t0, rate: 1}
	if err := clk.Calibrate(time.Second); err != nil || !clk.start.Equal(t0) {
		t.Errorf("rate 1: Calibrate moved S to %s (%v); at rate 1 it cannot be learnt", clk.start, err)
	}
}
