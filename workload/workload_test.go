package workload

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
)

// extendLocker wraps a real lock and answers Extend by a rule, to drive each of the
// workload's extend paths.
type extendLocker struct {
	lockimpl.Locker
	answer  func(lockimpl.Lease, time.Duration) (lockimpl.Lease, error) // nil: the real Extend
	extends *atomic.Int64
}

func (l extendLocker) Extend(ctx context.Context, lease lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	l.extends.Add(1)
	if l.answer != nil {
		return l.answer(lease, ttl)
	}
	return l.Locker.Extend(ctx, lease, ttl)
}

// runExtending runs two clients that extend every critical section, against real servers.
func runExtending(t *testing.T, answer func(lockimpl.Lease, time.Duration) (lockimpl.Lease, error)) (histories.History, int64) {
	t.Helper()
	lock := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	store := clustertest.Node(t, cluster.NodeConfig{Name: "store"})
	impl, err := locks.All().Get("setnx")
	if err != nil {
		t.Fatal(err)
	}
	var extends atomic.Int64
	rec := histories.NewRecorder(histories.Meta{})
	stop := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	err = Run(clustertest.Context(t), stop, Config{
		Clients: 2, Keys: 1, TTL: time.Second, Work: 10 * time.Millisecond, Think: 5 * time.Millisecond,
		Retry: 2 * time.Millisecond, Fencing: FencingOff, Extend: 1, Timeout: time.Second, Seed: 7,
		StoreAddr: func(int) string { return store.Addr() }, Rec: rec,
		NewLocker: func(int) (lockimpl.Locker, error) {
			l, err := impl.New(lockimpl.Config{Addrs: []string{lock.Addr()}})
			return extendLocker{Locker: l, answer: answer, extends: &extends}, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec.History(), extends.Load()
}

func count(h histories.History, kind histories.Kind, outcome histories.Outcome) int {
	n := 0
	for _, op := range h.Ops {
		if op.Kind == kind && op.Outcome == outcome {
			n++
		}
	}
	return n
}

func TestEveryCriticalSectionExtendsItsLease(t *testing.T) {
	h, calls := runExtending(t, nil)
	acquired, extended := count(h, histories.Acquire, histories.OK), count(h, histories.Extend, histories.OK)
	if acquired == 0 || extended != int(calls) {
		t.Fatalf("%d acquires ok, %d extends ok of %d calls; want every call recorded ok", acquired, extended, calls)
	}
	// Each section extends before it writes: one extend per write.
	if writes := count(h, histories.Write, histories.OK); extended < writes || extended > writes+2 {
		t.Fatalf("%d extends for %d writes; want one per section", extended, writes)
	}
	for _, op := range h.Ops {
		if op.Kind == histories.Extend && (op.Input.TTL != time.Second || op.Input.Token == "" || op.Output.Validity <= 0) {
			t.Fatalf("extend recorded as %+v; want the ttl, the lease's token and the new validity", op)
		}
	}
}

func TestRefusedExtendSkipsTheWrite(t *testing.T) {
	h, calls := runExtending(t, func(l lockimpl.Lease, _ time.Duration) (lockimpl.Lease, error) {
		return lockimpl.Lease{}, fmt.Errorf("test: %w", lockimpl.ErrNotHeld)
	})
	if calls == 0 || count(h, histories.Extend, histories.Fail) != int(calls) {
		t.Fatalf("%d extend calls, history %d fail; want all recorded as fail", calls, count(h, histories.Extend, histories.Fail))
	}
	if w := count(h, histories.Write, histories.OK); w != 0 {
		t.Fatalf("%d writes after refused extends; want none", w)
	}
	// The client still releases (the real lock is still its own here: release ok).
	if r := count(h, histories.Release, histories.OK); r != int(calls) {
		t.Fatalf("%d releases for %d refused extends", r, calls)
	}
}

// TestUnknownExtendReleasesAsTheSameProcess: after an extend of unknown outcome the
// client goes on with its old lease (here long enough for the write) and releases it as
// the process that believes it holds it.
func TestUnknownExtendReleasesAsTheSameProcess(t *testing.T) {
	h, calls := runExtending(t, func(l lockimpl.Lease, _ time.Duration) (lockimpl.Lease, error) {
		return lockimpl.Lease{}, fmt.Errorf("test: i/o timeout")
	})
	if calls == 0 || count(h, histories.Extend, histories.Unknown) != int(calls) {
		t.Fatalf("%d extend calls; want all recorded as unknown", calls)
	}
	if w := count(h, histories.Write, histories.OK); w != int(calls) {
		t.Fatalf("%d writes after %d unknown extends; want one each, within the old lease", w, calls)
	}
	if r := count(h, histories.Release, histories.OK); r != int(calls) {
		t.Fatalf("%d releases for %d unknown extends; want one each", r, calls)
	}
	for i, op := range h.Ops {
		if op.Kind != histories.Extend {
			continue
		}
		for _, next := range h.Ops[i+1:] {
			if next.Client == op.Client && next.Kind == histories.Release {
				if next.Process != op.Process {
					t.Fatalf("release by process %d after the unknown extend of process %d", next.Process, op.Process)
				}
				break
			}
		}
	}
}

func TestUnsupportedExtendIsNotRecordedAndNotRetried(t *testing.T) {
	h, calls := runExtending(t, func(l lockimpl.Lease, _ time.Duration) (lockimpl.Lease, error) {
		return lockimpl.Lease{}, fmt.Errorf("test: %w", lockimpl.ErrUnsupported)
	})
	if calls != 2 { // once per client, then never again
		t.Fatalf("%d extend calls; want one per client", calls)
	}
	if n := count(h, histories.Extend, histories.OK) + count(h, histories.Extend, histories.Fail) + count(h, histories.Extend, histories.Unknown); n != 0 {
		t.Fatalf("%d extends recorded; want none", n)
	}
	if count(h, histories.Write, histories.OK) == 0 {
		t.Fatal("no writes: the sections should go on without extending")
	}
}

// seqLocker notes each Acquire in the sequence of points its client reached.
type seqLocker struct {
	lockimpl.Locker
	note func(string)
}

func (l seqLocker) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	l.note("acquire")
	return l.Locker.Acquire(ctx, key, ttl)
}

// Release notes the answer's arrival.
func (l seqLocker) Release(ctx context.Context, lease lockimpl.Lease) error {
	err := l.Locker.Release(ctx, lease)
	l.note("released")
	return err
}

// runSequences runs two clients for 200 ms with runHooked and returns, per client, the
// points it reached and the lock calls it made ("acquire", "released"), in order.
func runSequences(t *testing.T) (map[int][]string, histories.History) {
	t.Helper()
	var mu sync.Mutex
	seq := map[int][]string{}
	note := func(client int, what string) {
		mu.Lock()
		defer mu.Unlock()
		seq[client] = append(seq[client], what)
	}
	h := runHooked(t, 200*time.Millisecond, func(_ context.Context, client int, point string) error {
		note(client, point)
		return nil
	}, note)
	return seq, h
}

// runHooked runs two clients for d against real servers with hook at their points.
func runHooked(t *testing.T, d time.Duration, hook Hook, note func(client int, what string)) histories.History {
	t.Helper()
	lock := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	store := clustertest.Node(t, cluster.NodeConfig{Name: "store"})
	impl, err := locks.All().Get("setnx")
	if err != nil {
		t.Fatal(err)
	}
	rec := histories.NewRecorder(histories.Meta{})
	stop := make(chan struct{})
	time.AfterFunc(d, func() { close(stop) })
	err = Run(clustertest.Context(t), stop, Config{
		Clients: 2, Keys: 1, TTL: time.Second, Work: 10 * time.Millisecond, Think: 5 * time.Millisecond,
		Retry: 2 * time.Millisecond, Fencing: FencingOff, Timeout: time.Second, Seed: 7,
		StoreAddr: func(int) string { return store.Addr() }, Rec: rec, Hook: hook,
		NewLocker: func(client int) (lockimpl.Locker, error) {
			l, err := impl.New(lockimpl.Config{Addrs: []string{lock.Addr()}})
			return seqLocker{Locker: l, note: func(what string) { note(client, what) }}, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec.History()
}

// Every acquire comes right after the client reached BeforeAcquire, where a failover
// holds clients while the leases drain.
func TestClientsReachBeforeAcquireRightBeforeEachAcquire(t *testing.T) {
	t.Parallel()
	seq, _ := runSequences(t)
	for client, s := range seq {
		acquires := 0
		for i, what := range s {
			if what != "acquire" {
				continue
			}
			acquires++
			if i == 0 || s[i-1] != BeforeAcquire {
				t.Fatalf("client %d: acquire %d after %v, want it right after %s", client, acquires, s[max(0, i-3):i], BeforeAcquire)
			}
		}
		if acquires == 0 {
			t.Errorf("client %d never acquired", client)
		}
	}
}

// Every release's answer is followed by AfterRelease, before anything else the client
// does: a pause until another client's after-release ends once that release has landed.
func TestClientsReachAfterReleaseOnceTheReleaseIsAnswered(t *testing.T) {
	t.Parallel()
	seq, h := runSequences(t)
	total := 0
	for client, s := range seq {
		releases, after := 0, 0
		for i, what := range s {
			switch what {
			case "released":
				releases++
				if i+1 == len(s) || s[i+1] != AfterRelease {
					t.Fatalf("client %d: release %d answered, then %v, want %s next", client, releases, s[i+1:min(len(s), i+3)], AfterRelease)
				}
			case AfterRelease:
				after++
				if i == 0 || s[i-1] != "released" {
					t.Fatalf("client %d: %s after %v, want it right after a release's answer", client, AfterRelease, s[max(0, i-3):i])
				}
			}
		}
		if releases == 0 {
			t.Errorf("client %d never released", client)
		}
		total += releases
	}
	if n := count(h, histories.Release, histories.OK) + count(h, histories.Release, histories.Fail) + count(h, histories.Release, histories.Unknown); n != total {
		t.Errorf("%d releases recorded, %d answered", n, total)
	}
}

// A client held at BeforeAcquire until the run has ended begins no critical section.
func TestAClientHeldPastTheEndBeginsNothing(t *testing.T) {
	t.Parallel()
	d := 100 * time.Millisecond
	h := runHooked(t, d, func(ctx context.Context, _ int, point string) error {
		if point == BeforeAcquire {
			time.Sleep(2 * d)
		}
		return nil
	}, func(int, string) {})
	if n := count(h, histories.Acquire, histories.OK) + count(h, histories.Acquire, histories.Fail) + count(h, histories.Acquire, histories.Unknown); n != 0 {
		t.Errorf("%d acquires by clients held until after the end of the run, want none", n)
	}
}

// TestClientsWorkWithoutARecorder: without a recorder (Config.Rec nil, the baseline of
// the recording overhead) the clients do the same work: every critical section writes.
func TestClientsWorkWithoutARecorder(t *testing.T) {
	lock := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	store := clustertest.Node(t, cluster.NodeConfig{Name: "store"})
	impl, err := locks.All().Get("setnx")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	stop := make(chan struct{})
	time.AfterFunc(200*time.Millisecond, func() { close(stop) })
	err = Run(clustertest.Context(t), stop, Config{
		Clients: 2, Keys: 1, TTL: time.Second, Fencing: FencingOff, Timeout: time.Second, Seed: 7,
		StoreAddr: func(int) string { return store.Addr() },
		NewLocker: func(int) (lockimpl.Locker, error) { return impl.New(lockimpl.Config{Addrs: []string{lock.Addr()}}) },
		Hook: func(_ context.Context, _ int, point string) error {
			if point == BeforeWrite {
				writes.Add(1)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(store.Addr(), FencingOff, time.Second)
	defer s.Close()
	v, err := s.Read(clustertest.Context(t), KeyName(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	if v == 0 || v != writes.Load() {
		t.Fatalf("the store holds %d after %d writes; want as many, and some", v, writes.Load())
	}
}

func TestJobsNeedARecorder(t *testing.T) {
	cfg := Config{
		Clients: 1, Keys: 1, TTL: time.Second, Timeout: time.Second, Fencing: FencingOff,
		StoreAddr: func(int) string { return "" }, NewLocker: func(int) (lockimpl.Locker, error) { return nil, nil },
		Jobs: &Jobs{},
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "recorder") {
		t.Fatalf("a job-queue configuration without a recorder: %v; want refused for it", err)
	}
}
