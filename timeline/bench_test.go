package timeline

import (
	"io"
	"testing"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/histories/synth"
)

// BenchmarkRender draws a run of 10,000 critical sections (50,000 operations): the
// picture is written for every run, so its cost is part of each run's.
func BenchmarkRender(b *testing.B) {
	var ops []histories.Op
	for i := range int64(10000) {
		t, c := i*20, int(i%2)
		p := 2 * c
		ops = append(ops, acquire(p, c, t, t+1, i+1), refused(2*(1-c), 1-c, t+1, t+2),
			write(p+1, c, t+3, t+4, i+1, i+1, histories.OK), release(p, c, t+5, t+6, histories.OK),
			write(p+1, c, t+7, t+8, i+2, i+1, histories.OK))
	}
	run := Run{History: single(ops)}
	b.ReportAllocs()
	for b.Loop() {
		if err := Render(io.Discard, run); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderMillion draws a synthetic legal history of a million operations by 4,000
// clients on 1,000 keys, as `locklab check` draws a re-checked history of that size: the
// picture's size and the time to draw it must not grow with the history. It reports the
// bytes of the picture.
func BenchmarkRenderMillion(b *testing.B) {
	h := legal(b, synth.Legal{Seed: 1, Clients: 4000, Keys: 1000, Ops: 1_000_000, Unknown: 0.01, Fencing: "full"})
	run := Run{History: h, Result: allOK()}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		var w countingWriter
		if err := Render(&w, run); err != nil {
			b.Fatal(err)
		}
		size = w.n
	}
	b.ReportMetric(float64(size), "svg-bytes")
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
