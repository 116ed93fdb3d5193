package linearizability

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/locklab/locklab/histories/synth"
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

// adversarialTimeout is the checker timeout of BenchmarkAdversarial's curve.
const adversarialTimeout = 2 * time.Second

// BenchmarkAdversarial is the curve of the search's cost on histories made to blow it up
// (synth.Adversarial: N concurrent writes of unknown outcome on one key and a read that
// none of them explains, beside 9 legal keys), N = 6, 8, …, 20, each checked once with a
// 2 s timeout. It reports the check's time and whether it decided ("decided" 1, or 0 when
// it ran out of time and said unknown). Decided, the verdict must be illegal; out of
// time it must be unknown and name the key: anything else fails the benchmark.
func BenchmarkAdversarial(b *testing.B) {
	for n := 6; n <= 20; n += 2 {
		b.Run(fmt.Sprintf("concurrent-%d", n), func(b *testing.B) {
			h, err := synth.Adversarial{Concurrent: n, Keys: 10, Fencing: "full"}.History()
			if err != nil {
				b.Fatal(err)
			}
			var took time.Duration
			decided := 1.0
			for b.Loop() {
				start := time.Now()
				res, err := Check(h, Options{Timeout: adversarialTimeout})
				took = time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				switch p2, _ := res.Property(P2); {
				case p2.Verdict == Unknown && len(p2.Undecided) == 1 && p2.Undecided[0].Key == "k0":
					decided = 0
				case p2.Verdict != Illegal:
					b.Fatalf("P2 %s on an illegal history: %s", p2.Verdict, p2.Explanation)
				}
			}
			b.ReportMetric(took.Seconds(), "check-s")
			b.ReportMetric(decided, "decided")
		})
	}
}
