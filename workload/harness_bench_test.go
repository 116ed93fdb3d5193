package workload_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/internal/benchstat"
	"github.com/locklab/locklab/workload"
)

// The harness-throughput configuration: 16 clients contending for one key (the
// catalog's shape: its scenarios run a few clients on one lock) with no work, think or
// retry time, so that a refused client asks again at once. Against that, redis-benchmark
// sends the acquire's command, SET key token NX PX ttl, from 16 connections on one fixed
// key, which stays held for the TTL: both sides are mostly refused SET NX on a held key,
// the harness's with the holder's read, write and release in between. One key per client
// would compare the clients' whole sections (two of their four commands go to the store)
// with redis-benchmark's bare SETs, which mostly succeed on fresh keys.
const (
	harnessClients  = 16
	harnessTTL      = time.Second
	harnessRounds   = 11                     // each a harness round direct, one through links, one of redis-benchmark
	harnessRound    = 700 * time.Millisecond // a harness round's length
	harnessRequests = 60000                  // a redis-benchmark round's requests
	// harnessBenchKey is redis-benchmark's key: not the clients' (k0), which it would
	// otherwise hold for a TTL after its round.
	harnessBenchKey = "redis-benchmark:k0"
)

// BenchmarkHarnessThroughput is the lock operations per second (acquires, refused ones
// included, and releases) the workload's clients drive against one local redis-server,
// recording them as a run does, beside redis-benchmark's rate for the acquire's command
// with the same concurrency on the same server, in turns within one run. It reports each
// side's median and the median of each round's ratio (harness/redis-benchmark); and the
// same for the clients going through their Toxiproxy links as in a run (linked-).
func BenchmarkHarnessThroughput(b *testing.B) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Fatalf("redis-benchmark is needed to compare with (Debian's redis-tools, make apt-deps): %v", err)
	}
	r := newRig(b, workload.Config{
		Clients: harnessClients, Keys: 1, TTL: harnessTTL,
		Fencing: workload.FencingOff, Timeout: 2 * time.Second, Seed: 1,
	})
	rb := redisBenchmark{bin: bin, addr: r.cl.LockAddrs()[0], ttl: harnessTTL}
	r.lockOpRate(b, harnessRound/4, false) // warm-up: script caches, the server's memory
	var harness, linked, bench, ratios, linkedRatios []float64
	for b.Loop() {
		for i := range harnessRounds {
			var h, l, rps float64
			sides := []func(){
				func() { h = r.lockOpRate(b, harnessRound, false) },
				func() { l = r.lockOpRate(b, harnessRound, true) },
				func() { rps = rb.mustRun(b, harnessRequests) },
			}
			for j := range sides {
				sides[(i+j)%len(sides)]() // which side goes first rotates
			}
			harness, linked, bench = append(harness, h), append(linked, l), append(bench, rps)
			ratios, linkedRatios = append(ratios, h/rps), append(linkedRatios, l/rps)
		}
	}
	if testing.Verbose() {
		b.Logf("each round's harness/redis-benchmark: %s; through links: %s", fmtRatios(ratios), fmtRatios(linkedRatios))
	}
	b.ReportMetric(0, "ns/op") // one iteration is all the rounds: its time says nothing
	b.ReportMetric(benchstat.Median(ratios), "harness/redis-benchmark")
	b.ReportMetric(benchstat.IQR(ratios), "harness/redis-benchmark-iqr")
	b.ReportMetric(benchstat.Median(harness), "lockops/s")
	b.ReportMetric(benchstat.Median(bench), "redis-benchmark-ops/s")
	b.ReportMetric(benchstat.Median(linkedRatios), "linked/redis-benchmark")
	b.ReportMetric(benchstat.Median(linked), "linked-lockops/s")
}

// harnessWarm is how long a harness round runs before its window: its clients are built
// and dial the servers then.
const harnessWarm = 50 * time.Millisecond

// lockOpRate runs the clients, recorded, dialling the servers or (linked) through their
// links, and returns the lock operations (acquire, release, extend) per second that
// returned within a window of d after harnessWarm.
func (r *rig) lockOpRate(b *testing.B, d time.Duration, linked bool) float64 {
	b.Helper()
	rec := histories.NewRecorder(histories.Meta{Fencing: string(r.cfg.Fencing), Impl: r.impl.Name})
	cfg := r.config(rec, nil, linked)
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	runtime.GC() // no round pays for the garbage of the one before
	stop := make(chan struct{})
	from := rec.Now() + int64(harnessWarm)
	timer := time.AfterFunc(harnessWarm+d, func() { close(stop) })
	defer timer.Stop()
	var err error
	// The label splits a CPU profile by path: go tool pprof -tagfocus 'path=^direct$'.
	pprof.Do(ctx, pprof.Labels("path", path(linked)), func(ctx context.Context) {
		err = workload.Run(ctx, stop, cfg)
	})
	if err != nil {
		b.Fatalf("harness round (%s): %v", path(linked), err)
	}
	n := 0
	for _, op := range rec.History().Ops {
		if op.Kind.IsLock() && op.Kind != histories.Crash && op.Return > from && op.Return <= from+int64(d) {
			n++
		}
	}
	if n == 0 {
		b.Fatalf("harness round (%s): no lock operation in %s", path(linked), d)
	}
	return float64(n) / d.Seconds()
}

func path(linked bool) string {
	if linked {
		return "linked"
	}
	return "direct"
}

// redisBenchmark runs redis-benchmark against one server with the harness's concurrency.
type redisBenchmark struct {
	bin  string
	addr string
	ttl  time.Duration
}

// args are redis-benchmark's arguments for n requests: the acquire's command, with a
// value as long as a lock token (32 hex digits).
func (rb redisBenchmark) args(n int) ([]string, error) {
	host, port, err := net.SplitHostPort(rb.addr)
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark: server address: %w", err)
	}
	return []string{
		"-h", host, "-p", port, "-c", strconv.Itoa(harnessClients), "-n", strconv.Itoa(n), "--csv",
		"SET", harnessBenchKey, strings.Repeat("0123456789abcdef", 2), "NX", "PX", strconv.FormatInt(rb.ttl.Milliseconds(), 10),
	}, nil
}

// mustRun is run, failing the benchmark on error.
func (rb redisBenchmark) mustRun(b *testing.B, n int) float64 {
	b.Helper()
	rps, err := rb.run(n)
	if err != nil {
		b.Fatal(err)
	}
	return rps
}

// run runs n requests and returns redis-benchmark's requests per second.
func (rb redisBenchmark) run(n int) (float64, error) {
	args, err := rb.args(n)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	out, err := runChild(ctx, rb.bin, args)
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark %s: %w", strings.Join(args, " "), err)
	}
	rps, err := parseBenchmarkCSV(out)
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark %s: %w; its output:\n%s", strings.Join(args, " "), err, out)
	}
	return rps, nil
}

// runChild runs bin to its end and returns its standard output. The child dies with the
// benchmark (Pdeathsig, which Linux sends when the forking thread ends: the goroutine
// that forks it keeps its thread until the reap) and is killed when ctx ends.
func runChild(ctx context.Context, bin string, args []string) ([]byte, error) {
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
		}
		done <- result{out, err}
	}()
	r := <-done
	return r.out, r.err
}

// parseBenchmarkCSV reads the requests per second from redis-benchmark's --csv output:
// the "rps" column named by a header line (Redis 7), or else the second column (older
// versions print no header). Lines that are not a result, such as warnings, are skipped;
// there must be exactly one result.
func parseBenchmarkCSV(out []byte) (float64, error) {
	col := 1
	var found []float64
	for _, line := range strings.Split(string(out), "\n") {
		rd := csv.NewReader(strings.NewReader(line))
		rd.LazyQuotes = true
		fields, err := rd.Read()
		if err != nil {
			continue // empty, or no CSV
		}
		if fields[0] == "test" {
			if col = slices.Index(fields, "rps"); col < 0 {
				return 0, errors.New(`no "rps" column in the header`)
			}
			continue
		}
		if col >= len(fields) {
			continue
		}
		if rps, err := strconv.ParseFloat(fields[col], 64); err == nil && rps > 0 {
			found = append(found, rps)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("want one result line with a positive rate, found %d", len(found))
	}
	return found[0], nil
}

func TestParseBenchmarkCSV(t *testing.T) {
	for _, c := range []struct {
		name, out string
		want      float64 // 0: an error
	}{
		{"redis 7", `"test","rps","avg_latency_ms","min_latency_ms"` + "\n" + `"SET k v NX PX 1000","181818.19","0.054","0.016"` + "\n", 181818.19},
		{"no header", `"SET k v NX PX 1000","95238.10"` + "\n", 95238.10},
		{"a warning first", "WARNING: Could not fetch server CONFIG\n" + `"test","rps"` + "\n" + `"SET k v","1000.5"`, 1000.5},
		{"rps elsewhere", `"test","avg_latency_ms","rps"` + "\n" + `"SET k v","0.05","2000"`, 2000},
		{"nothing", "", 0},
		{"no rps column", `"test","avg_latency_ms"` + "\n" + `"SET k v","0.05"`, 0},
		{"two results", `"SET a","1"` + "\n" + `"SET b","2"`, 0},
		{"zero", `"SET k v","0.00"`, 0},
	} {
		got, err := parseBenchmarkCSV([]byte(c.out))
		switch {
		case c.want == 0 && err == nil:
			t.Errorf("%s: got %g, want an error", c.name, got)
		case c.want != 0 && (err != nil || got != c.want):
			t.Errorf("%s: got %g, %v; want %g", c.name, got, err, c.want)
		}
	}
}
