package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/histories/synth"
)

// The checker's scale, as a user meets it: `locklab check FILE` in a process of its own,
// timed from start to exit, its peak resident memory from the kernel (getrusage).
// Exit status 0 is asserted: the histories are legal, so anything else is a failure.

// BenchmarkCheckMillion: 1,000,000 operations over 1,000 keys, 4 clients per key, 1% of
// the writes of unknown outcome, fencing full (a 190 MB file). Goals: under 5 s wall and
// under 400 MB resident on 2 cores.
func BenchmarkCheckMillion(b *testing.B) {
	benchCheckCLI(b, synth.Legal{Seed: 1, Clients: 4000, Keys: 1000, Ops: 1_000_000, Unknown: 0.01, Fencing: "full"})
}

// BenchmarkCheckTenMillion: 10,000,000 operations over 10,000 keys (ten of
// BenchmarkCheckMillion's histories one after the other, each on keys of its own), a
// 1.9 GB file: locklab check reads a history that large in windows (online.Sorted)
// without holding it. Goals: under 25 s wall and under 1.5 GB resident on 2 cores.
func BenchmarkCheckTenMillion(b *testing.B) {
	benchCheckCLIChunks(b, synth.Legal{Seed: 1, Clients: 4000, Keys: 1000, Ops: 1_000_000, Unknown: 0.01, Fencing: "full"}, 10)
}

// BenchmarkCheckSingleKey: 10,000 operations of 8 clients on one key. Goal: under 0.2 s.
func BenchmarkCheckSingleKey(b *testing.B) {
	benchCheckCLI(b, synth.Legal{Seed: 1, Clients: 8, Keys: 1, Ops: 10_000, Unknown: 0.01, Fencing: "full"})
}

// BenchmarkCheckScale is BenchmarkCheckMillion's history at smaller sizes (a key per
// 1,000 operations, 4 clients per key): with the million, whether time and memory grow
// no faster than the history.
func BenchmarkCheckScale(b *testing.B) {
	for _, n := range []int{125_000, 250_000, 500_000} {
		b.Run(fmt.Sprintf("ops-%d", n), func(b *testing.B) {
			benchCheckCLI(b, synth.Legal{Seed: 1, Clients: 4 * n / 1000, Keys: n / 1000, Ops: n, Unknown: 0.01, Fencing: "full"})
		})
	}
}

func benchCheckCLI(b *testing.B, l synth.Legal) { benchCheckCLIChunks(b, l, 1) }

// benchCheckCLIChunks checks chunks of l's history one after the other.
func benchCheckCLIChunks(b *testing.B, l synth.Legal, chunks int) {
	path := filepath.Join(b.TempDir(), histories.HistoryFile)
	spec, err := json.Marshal(synthFile{l, path, chunks})
	if err != nil {
		b.Fatal(err)
	}
	// Made in a process of its own: Linux carries a process's peak resident memory into
	// the children it starts, and this one must stay small for the check's own peak to
	// be what is measured.
	gen := exec.Command(os.Args[0])
	gen.Env = append(os.Environ(), asSynth+"="+string(spec))
	if out, err := gen.CombinedOutput(); err != nil {
		b.Fatalf("generate the history: %v\n%s", err, out)
	}
	var walls []time.Duration
	var rss int64
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "check", path)
		cmd.Env = append(os.Environ(), asCLI+"=1")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		walls = append(walls, time.Since(start))
		if err != nil {
			b.Fatalf("locklab check: %v\n%s", err, out)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = max(rss, ru.Maxrss) // kilobytes on Linux
		}
	}
	slices.Sort(walls)
	b.ReportMetric(walls[len(walls)/2].Seconds(), "wall-s")
	b.ReportMetric(float64(rss)/1024, "rss-MB")
	b.ReportMetric(float64(l.Ops*chunks)/walls[len(walls)/2].Seconds(), "ops/s")
}

// asSynth makes the test binary write a synthetic history (a JSON synthFile) and exit.
const asSynth = "LOCKLAB_TEST_SYNTH"

type synthFile struct {
	Legal  synth.Legal
	Path   string
	Chunks int // histories of Legal one after the other, on keys and processes of their own
}

func writeSynth(spec string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var s synthFile
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fail(err)
	}
	f, err := os.Create(s.Path)
	if err != nil {
		fail(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var shift int64
	procs := 0
	for c := range max(s.Chunks, 1) {
		l := s.Legal
		l.Seed += uint64(c)
		h, err := l.History()
		if err != nil {
			fail(err)
		}
		end, top := int64(0), 0
		for i := range h.Ops {
			op := &h.Ops[i]
			if c > 0 {
				op.Key = fmt.Sprintf("c%d-%s", c, op.Key)
			}
			op.Call += shift
			op.Return += shift
			op.Process += procs
			end, top = max(end, op.Return), max(top, op.Process)
		}
		if c > 0 {
			h.Meta = histories.Meta{} // one header
		}
		if err := writeOps(w, h, c == 0); err != nil {
			fail(err)
		}
		shift, procs = end+1, top+1
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		fail(err)
	}
	os.Exit(0)
}

// writeOps writes h's operations, and its header first when header is set.
func writeOps(w io.Writer, h histories.History, header bool) error {
	if header {
		return histories.WriteHistory(w, h)
	}
	enc := json.NewEncoder(w)
	for _, op := range h.Ops {
		if err := enc.Encode(op); err != nil {
			return err
		}
	}
	return nil
}
