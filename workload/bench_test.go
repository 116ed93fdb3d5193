package workload_test

import (
	"context"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/internal/benchstat"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/workload"
)

// The benchmarks here drive workload.Run as the runner does: setnx lockers, the fault
// environment's gates as Hook and Step and its clocks as the clients' clocks (no fault
// armed), on real servers started by clustertest. They are an external test package so
// that they can wire in faults' gates as a run does (faults imports workload).
//
// Clients dial the servers' own addresses: a run's clients go through Toxiproxy links
// (the fault network), which are no part of the clients or the recorder, cost more than
// both, and would hide them. BenchmarkHarnessThroughput measures the linked path too.

// benchTimeout bounds one round, so that a wedged server fails the benchmark instead of
// hanging it.
const benchTimeout = time.Minute

// rig is one workload configuration on a running single topology (one lock server and
// the store); config wires a fresh recorder (or none) and fault environment into it, as
// the runner does for each run.
type rig struct {
	cl     *cluster.Cluster
	impl   lockimpl.Impl
	linked []cluster.Endpoints // each client's links, as in a run
	cfg    workload.Config
}

// newRig starts the servers for cfg's clients, whose lockers will be setnx.
func newRig(b *testing.B, cfg workload.Config) *rig {
	b.Helper()
	impl, err := locks.All().Get("setnx")
	if err != nil {
		b.Fatal(err)
	}
	cl := clustertest.Start(b, cluster.Topology{Kind: cluster.Single})
	r := &rig{cl: cl, impl: impl, cfg: cfg, linked: make([]cluster.Endpoints, cfg.Clients)}
	for i := range r.linked {
		if r.linked[i], err = cl.Endpoints(i); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

// endpoints are the addresses client dials: the servers' own, or its links.
func (r *rig) endpoints(client int, linked bool) cluster.Endpoints {
	if linked {
		return r.linked[client]
	}
	return cluster.Endpoints{Lock: r.cl.LockAddrs(), Store: r.cl.Store.Addr()}
}

// config is the rig's workload configuration for one round: rec (nil: no recording),
// count (may be nil) called at each client point before the gates, lockers built as the
// runner builds them.
func (r *rig) config(rec *histories.Recorder, count workload.Hook, linked bool) workload.Config {
	env := faults.NewEnv(r.cl, rec, r.cfg.Clients)
	cfg := r.cfg
	cfg.Rec, cfg.Clock = rec, env.ClientClock
	cfg.StoreAddr = func(client int) string { return r.endpoints(client, linked).Store }
	cfg.Hook = func(ctx context.Context, client int, point string) error {
		if count != nil {
			_ = count(ctx, client, point)
		}
		return env.Gates.Reach(ctx, client, point)
	}
	cfg.NewLocker = func(client int) (lockimpl.Locker, error) {
		return r.impl.New(lockimpl.Config{
			Addrs: r.endpoints(client, linked).Lock, Clock: env.ClientClock(client), Timeout: cfg.Timeout,
			Step: func(ctx context.Context, step string) error { return env.Gates.Reach(ctx, client, step) },
		})
	}
	return cfg
}

// The recording-overhead configuration: 8 clients (4 per core of the 2-core machines
// this runs on) with no work, think or retry time, so that recording weighs the most;
// 64 keys, so that refused acquires are rare and nearly every operation belongs to a
// counted critical section. Recorded and unrecorded rounds take turns (ABBA: which goes
// first alternates), so that the load of a shared machine, which changes over seconds,
// hits both sides of a pair alike: short rounds (5,000 operations, about a sixth of a
// second), so that the two of a pair run under nearly the same load, and many pairs, so
// that their median is steady (with 16 pairs of 10,000 operations, two runs of make
// bench gave 0.946 and 0.974, each with an interquartile range of 0.15).
const (
	overheadClients  = 8
	overheadKeys     = 64
	overheadPairs    = 48   // of rounds, one recorded and one not
	overheadSkip     = 16   // critical sections a round runs before its timing starts
	overheadSections = 1250 // critical sections timed per round: 5,000 operations
	opsPerSection    = 4    // acquire, read, write, release
)

// BenchmarkRecordingOverhead is the workload's throughput with every operation recorded
// against the same clients recording nothing (workload.Config.Rec nil), in one run:
// rounds of a fixed number of critical sections, recorded and unrecorded in turns. It
// reports the median of each pair's ratio (recorded/unrecorded) and each side's median
// rate, in operations of the critical sections per second (refused acquires are not
// counted). With -v it logs every pair's ratio.
func BenchmarkRecordingOverhead(b *testing.B) {
	r := newRig(b, workload.Config{
		Clients: overheadClients, Keys: overheadKeys, TTL: time.Second,
		Fencing: workload.FencingOff, Timeout: 2 * time.Second, Seed: 1,
	})
	r.sectionRate(b, true) // warm-up: script caches, the servers' memory
	var recorded, unrecorded, ratios []float64
	for b.Loop() {
		for i := range overheadPairs {
			var rec, unrec float64
			if i%2 == 0 {
				rec, unrec = r.sectionRate(b, true), r.sectionRate(b, false)
			} else {
				unrec, rec = r.sectionRate(b, false), r.sectionRate(b, true)
			}
			recorded, unrecorded = append(recorded, rec), append(unrecorded, unrec)
			ratios = append(ratios, rec/unrec)
		}
	}
	if testing.Verbose() {
		b.Logf("each pair's recorded/unrecorded: %s", fmtRatios(ratios))
	}
	b.ReportMetric(0, "ns/op") // one iteration is all the rounds: its time says nothing
	b.ReportMetric(benchstat.Median(ratios), "recorded/unrecorded")
	b.ReportMetric(benchstat.IQR(ratios), "recorded/unrecorded-iqr")
	b.ReportMetric(benchstat.Median(recorded), "recorded-ops/s")
	b.ReportMetric(benchstat.Median(unrecorded), "unrecorded-ops/s")
}

// sectionRate runs one round, recorded or not, and returns its operations per second
// over the timed critical sections. The heap is collected first, so that no round pays
// for the garbage of the one before.
func (r *rig) sectionRate(b *testing.B, recorded bool) float64 {
	b.Helper()
	var rec *histories.Recorder
	if recorded {
		rec = histories.NewRecorder(histories.Meta{Fencing: string(r.cfg.Fencing), Impl: r.impl.Name})
	}
	w := &window{skip: overheadSkip, n: overheadSections, stop: make(chan struct{})}
	cfg := r.config(rec, w.hook, false)
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	runtime.GC()
	var err error
	// The label splits a CPU profile by side: go tool pprof -tagfocus 'side=^recorded$'.
	pprof.Do(ctx, pprof.Labels("side", side(recorded)), func(ctx context.Context) {
		err = workload.Run(ctx, w.stop, cfg)
	})
	if err != nil {
		b.Fatalf("%s round: %v", side(recorded), err)
	}
	if w.end.IsZero() { // Run returned before the window closed: ctx ended
		b.Fatalf("%s round: %d of %d critical sections in %s", side(recorded), w.sections.Load(), w.skip+w.n, benchTimeout)
	}
	return float64(w.n*opsPerSection) / w.end.Sub(w.start).Seconds()
}

// window times the critical sections of a round as its clients reach their releases:
// from section skip to section skip+n, so that the round's start (building clients,
// their first dials) is not timed; at skip+n it ends the round.
type window struct {
	skip, n    int64
	sections   atomic.Int64
	start, end time.Time // each written by the one client that reached it; read after Run
	stop       chan struct{}
}

// hook counts a section at its release.
func (w *window) hook(_ context.Context, _ int, point string) error {
	if point != workload.InRelease {
		return nil
	}
	switch w.sections.Add(1) {
	case w.skip:
		w.start = time.Now()
	case w.skip + w.n:
		w.end = time.Now()
		close(w.stop)
	}
	return nil
}

func side(recorded bool) string {
	if recorded {
		return "recorded"
	}
	return "unrecorded"
}

// fmtRatios lists ratios briefly, in the order they were measured.
func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strings.Join(parts, " ")
}
