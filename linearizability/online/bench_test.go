package online_test

import (
	"testing"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/histories/synth"
	"github.com/locklab/locklab/linearizability/online"
)

// BenchmarkSorted checks a million operations over a thousand keys as they are read, in
// windows (what locklab check does with a long run's segments), the history already in
// memory: the checker's own cost, without parsing.
func BenchmarkSorted(b *testing.B) {
	h, err := synth.Legal{Seed: 1, Clients: 4000, Keys: 1000, Ops: 1_000_000, Unknown: 0.01, Fencing: "full"}.History()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		res, _, err := online.Sorted(h.Meta, nil, 64, online.Options{}, func(yield func(histories.Op) error) error {
			for _, op := range h.Ops {
				if err := yield(op); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || res.Verdict != "ok" {
			b.Fatal(res, err)
		}
	}
	b.ReportMetric(float64(len(h.Ops))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
