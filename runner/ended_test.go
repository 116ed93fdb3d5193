package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/internal/jsonfile"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// wrapped is a real lock client (the fenced lock on the run's servers) with a test's
// misbehaviour around it.
type wrapped struct {
	lockimpl.Locker
	acquire func(ctx context.Context) // before each acquire, when set
	release func(ctx context.Context) error
	close   error
}

func (w *wrapped) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	if w.acquire != nil {
		w.acquire(ctx)
	}
	return w.Locker.Acquire(ctx, key, ttl)
}

func (w *wrapped) Release(ctx context.Context, l lockimpl.Lease) error {
	if w.release != nil {
		return w.release(ctx)
	}
	return w.Locker.Release(ctx, l)
}

func (w *wrapped) Close() error { return errors.Join(w.Locker.Close(), w.close) }

// runEndedEarly runs a short fenced plan whose lock clients wrap (given the client's
// Config) adds to, and checks what every run that ended early must leave: an error
// wrapping ErrEndedEarly and each of want; history.jsonl, faults.jsonl and result.json
// on disk, the result saying why (ended_early) and re-checking offline as locklab check
// does. It returns the report.
func runEndedEarly(t *testing.T, ctx context.Context, clients int, opts Options, wrap func(cfg lockimpl.Config, w *wrapped), want ...error) Report {
	t.Helper()
	p := plan.Default()
	p.Name, p.Impl, p.Fencing, p.Clients, p.Keys, p.Duration = "ended-early", "fenced", "full", clients, 1, plan.D(300*time.Millisecond)
	r, err := p.Resolve(locks.All())
	if err != nil {
		t.Fatal(err)
	}
	inner := r.Impl.New
	r.Impl.New = func(cfg lockimpl.Config) (lockimpl.Locker, error) {
		l, err := inner(cfg)
		if err != nil {
			return nil, err
		}
		w := &wrapped{Locker: l}
		wrap(cfg, w)
		return w, nil
	}
	opts.Backend, opts.Dir = clustertest.Backend(t), t.TempDir()
	rep, err := Run(ctx, r, opts)
	if !errors.Is(err, ErrEndedEarly) {
		t.Fatalf("Run: %v, want an error wrapping ErrEndedEarly (%d ops recorded: %s)", err, rep.Ops, rep.Result)
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("Run: %v, want it to wrap %v", err, w)
		}
	}
	t.Logf("Run: %v", err)
	for _, f := range []string{histories.HistoryFile, histories.FaultsFile, ResultFile} {
		if _, serr := os.Stat(filepath.Join(opts.Dir, f)); serr != nil {
			t.Errorf("%s missing: %v", f, serr)
		}
	}
	var saved Report
	if rerr := jsonfile.Read(filepath.Join(opts.Dir, ResultFile), &saved); rerr != nil {
		t.Fatal(rerr)
	}
	if saved.EndedEarly == "" || !strings.Contains(err.Error(), saved.EndedEarly) || saved.Interrupted != rep.Interrupted {
		t.Errorf("result.json: ended_early %q, interrupted %v; want the error's causes (%v), interrupted %v", saved.EndedEarly, saved.Interrupted, err, rep.Interrupted)
	}
	h, lerr := histories.Load(opts.Dir) // what locklab check DIR does
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(h.Ops) == 0 || len(h.Ops) != rep.Ops || saved.Ops != rep.Ops {
		t.Errorf("saved history has %d ops, report %d, result.json %d: want the same, not none", len(h.Ops), rep.Ops, saved.Ops)
	}
	res, cerr := linearizability.Check(h, linearizability.Options{})
	if cerr != nil || res.Verdict != rep.Result.Verdict {
		t.Errorf("re-check: %s (%v), the run said %s", res.Verdict, cerr, rep.Result.Verdict)
	}
	if rep.Result.Verdict == linearizability.Illegal {
		t.Errorf("the correct lock with fencing full shows a violation:\n%s", rep.Result)
	}
	return rep
}

// TestLockerCloseErrorKeepsEvidence: a lock client that fails to close after the plan
// ran to its end makes the run an error, and its whole history is kept and checked.
func TestLockerCloseErrorKeepsEvidence(t *testing.T) {
	refused := errors.New("test: close refused")
	rep := runEndedEarly(t, context.Background(), 2, Options{}, func(cfg lockimpl.Config, w *wrapped) { w.close = refused }, refused)
	if rep.Interrupted || !strings.Contains(rep.EndedEarly, "close locker of client") {
		t.Errorf("interrupted %v, ended early %q: want a workload error naming the client", rep.Interrupted, rep.EndedEarly)
	}
}

// TestFailedHealAfterInterruptKeepsEvidence: the run is interrupted, and a lock server
// is gone when the faults are verified healed (the first acquire shuts it down, then
// cancels the run): both causes are reported, and the history recorded until then kept.
func TestFailedHealAfterInterruptKeepsEvidence(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	rep := runEndedEarly(t, ctx, 2, Options{}, func(cfg lockimpl.Config, w *wrapped) {
		w.acquire = func(context.Context) {
			once.Do(func() {
				c := cfg.Client(cfg.Addrs[0])
				defer c.Close()
				_ = c.Shutdown(context.Background()).Err() // the server closes the connection as it exits
				cancel()
			})
		}
	}, ErrInterrupted, context.Canceled)
	if !rep.Interrupted || !strings.Contains(rep.EndedEarly, "healing: faults not healed") || !strings.Contains(rep.EndedEarly, "does not answer") {
		t.Errorf("interrupted %v, ended early %q: want an interrupt and the server that does not answer", rep.Interrupted, rep.EndedEarly)
	}
}

// TestHardDeadlineKeepsEvidence: one client, whose first acquire (of a free lock)
// succeeds and whose release then waits until its context ends: the run's hard deadline
// passes with the client still in its section, and the run says so.
func TestHardDeadlineKeepsEvidence(t *testing.T) {
	rep := runEndedEarly(t, context.Background(), 1, Options{Grace: 200 * time.Millisecond}, func(cfg lockimpl.Config, w *wrapped) {
		w.release = func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}
	}, ErrDeadline)
	if !rep.Interrupted || !strings.Contains(rep.EndedEarly, "hard deadline") {
		t.Errorf("interrupted %v, ended early %q: want the hard deadline", rep.Interrupted, rep.EndedEarly)
	}
}
