package timeline

import (
	"io"
	"testing"

	"github.com/locklab/locklab/histories"
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
