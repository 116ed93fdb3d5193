package linearizability

import (
	"path/filepath"
	"testing"
)

// BenchmarkCheck checks a generated legal history of 8 clients on 4 keys, 50,000
// operations (1% of the writes with unknown outcome), with fencing full. Measured on a
// shared 2-core VM: 0.15–0.31 s per check (170 MB allocated), P1 taking the largest share.
func BenchmarkCheck(b *testing.B) {
	h := generate(1, 8, 4, 50000, 0.01)
	for b.Loop() {
		res, err := Check(h, Options{})
		if err != nil || res.Verdict != OK {
			b.Fatalf("%v\n%s", err, res)
		}
	}
}

// BenchmarkCheckHTML is BenchmarkCheck plus writing the visualisation. Measured: 0.9–1.7 s
// per check for a 17 MB file, mostly Porcupine's JSON encoding of the linearizations.
func BenchmarkCheckHTML(b *testing.B) {
	h := generate(1, 8, 4, 50000, 0.01)
	path := filepath.Join(b.TempDir(), "history.html")
	for b.Loop() {
		res, err := Check(h, Options{HTMLPath: path})
		if err != nil || res.Verdict != OK {
			b.Fatalf("%v\n%s", err, res)
		}
	}
}
