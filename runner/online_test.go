package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// recurringPause is a long run in small: client 0 is held before its write, every 2.5 s,
// until client 1 took the lock, wrote and released it, so that each strike loses an
// update by construction (no timing race) unless the store's fencing rejects the late
// write.
func recurringPause(fencing string) plan.Plan {
	p := plan.Default()
	p.Name, p.Impl, p.Clients, p.Keys, p.Fencing = "recurring-pause", "fenced", 2, 1, fencing
	p.TTL, p.Duration, p.Work, p.Think, p.Retry = plan.D(300*time.Millisecond), plan.D(6*time.Second), plan.D(10*time.Millisecond), plan.D(10*time.Millisecond), plan.D(10*time.Millisecond)
	p.Faults = []plan.FaultSpec{{
		Kind: "client-pause", At: plan.D(200 * time.Millisecond), Duration: plan.D(2 * time.Second), Target: "client:0",
		Point: "before-write", Until: "client:1@after-release", Every: plan.D(2500 * time.Millisecond),
	}}
	return p
}

// TestOnlineRunFindsEachStrikeAsItHappens: a long run's history goes to segments and is
// checked while it runs; each strike's violation gets a directory of its own with the
// window's history, timeline and a plan that resolves; the run's verdicts are those of
// an offline check of its segments. With fencing full the store rejects every late
// write: no window breaks P2.
func TestOnlineRunFindsEachStrikeAsItHappens(t *testing.T) {
	for _, c := range []struct {
		fencing string
		p2      linearizability.Verdict
	}{{"off", linearizability.Illegal}, {"full", linearizability.OK}} {
		t.Run(c.fencing, func(t *testing.T) {
			t.Parallel()
			r, err := recurringPause(c.fencing).Resolve(locks.All())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var last Progress
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := Run(ctx, r, Options{Backend: clustertest.Backend(t), Dir: dir, Online: &Online{
				SegmentOps: 50, Progress: func(p Progress) { last = p },
			}})
			if err != nil {
				t.Fatal(err)
			}
			if !last.Done || last.Pending != 0 || last.Queued != 0 || last.Late != 0 {
				t.Errorf("last progress %+v: want done with nothing pending, queued or late", last)
			}
			if p2, _ := rep.Result.Property(linearizability.P2); p2.Verdict != c.p2 {
				t.Fatalf("P2 %s, want %s\n%s", p2.Verdict, c.p2, rep.Result)
			}
			if p1, _ := rep.Result.Property(linearizability.P1); p1.Verdict != linearizability.Illegal {
				t.Errorf("P1 %s, want illegal: client 0 believed through every strike", p1.Verdict)
			}
			segs, _ := histories.Segments(dir)
			if want := (rep.Ops + 49) / 50; len(segs) != want || want < 2 {
				t.Errorf("%d operations in %d segments of 50, want %d (at least 2)", rep.Ops, len(segs), want)
			}
			offline, err := histories.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(offline.Ops) != rep.Ops {
				t.Errorf("segments hold %d operations, the run recorded %d", len(offline.Ops), rep.Ops)
			}
			want, err := linearizability.Check(offline, linearizability.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range want.Properties {
				if g, _ := rep.Result.Property(w.Property); g.Verdict != w.Verdict {
					t.Errorf("%s: online %s, offline %s (%s)", w.Property, g.Verdict, w.Verdict, w.Explanation)
				}
			}
			vs, _ := filepath.Glob(filepath.Join(dir, ViolationsDir, "*"))
			p2dirs := 0
			for _, v := range vs {
				if strings.Contains(filepath.Base(v), "P2") {
					p2dirs++
				}
				for _, f := range []string{histories.HistoryFile, PlanFile, ResultFile, "timeline.svg"} {
					if _, err := os.Stat(filepath.Join(v, f)); err != nil {
						t.Errorf("violation %s: %v", filepath.Base(v), err)
					}
				}
				replay, err := plan.Read(filepath.Join(v, PlanFile), locks.All())
				if err != nil {
					t.Errorf("violation %s: its plan does not read: %v", filepath.Base(v), err)
				} else if _, err := replay.Resolve(locks.All()); err != nil {
					t.Errorf("violation %s: its plan does not resolve: %v", filepath.Base(v), err)
				}
			}
			t.Logf("%d operations, %d windows (largest %d), %d violation directories, %d of them P2", rep.Ops, last.Windows, last.LargestWindow, len(vs), p2dirs)
			switch {
			case c.p2 == linearizability.Illegal && p2dirs < 2:
				t.Errorf("%d windows broke P2 (of %d violations): want one per strike, at least 2", p2dirs, len(vs))
			case c.p2 == linearizability.OK && p2dirs > 0:
				t.Errorf("%d windows broke P2 with fencing full", p2dirs)
			}
		})
	}
}

// TestOnlineRunInterrupted: a long run cut short (Ctrl-C, SIGTERM) ends with everything
// it recorded written and checked: the error says it was interrupted, and its result is
// that of an offline check of its segments.
func TestOnlineRunInterrupted(t *testing.T) {
	p := recurringPause("off")
	p.Duration = plan.D(time.Minute)
	r, err := p.Resolve(locks.All())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progressed := make(chan struct{}, 1)
	rep, err := Run(ctx, r, Options{Backend: clustertest.Backend(t), Dir: dir, Online: &Online{Progress: func(p Progress) {
		if p.Elapsed > 3*time.Second && p.Violations > 0 { // a strike has been found: stop here
			select {
			case progressed <- struct{}{}:
				cancel()
			default:
			}
		}
	}}})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v, want it interrupted", err)
	}
	if rep.Ops == 0 || rep.EndedEarly == "" {
		t.Fatalf("report %+v", rep)
	}
	offline, err := histories.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := linearizability.Check(offline, linearizability.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want.Properties {
		if g, _ := rep.Result.Property(w.Property); g.Verdict != w.Verdict {
			t.Errorf("%s: online %s, offline %s", w.Property, g.Verdict, w.Verdict)
		}
	}
	if p2, _ := rep.Result.Property(linearizability.P2); p2.Verdict != linearizability.Illegal {
		t.Errorf("P2 %s, want the strike's lost update", p2.Verdict)
	}
	if _, err := os.Stat(filepath.Join(dir, ResultFile)); err != nil {
		t.Error(err)
	}
}
