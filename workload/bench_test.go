package workload

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
)

// BenchmarkRecordingOverhead measures lock operations per second on a real Redis with 4
// parallel clients, with and without recording each operation, in one run: the ratio of
// the two is the recorder's cost. Compare the sub-benchmarks' ns/op.
func BenchmarkRecordingOverhead(b *testing.B) {
	c := clustertest.Start(b, cluster.Topology{Kind: cluster.Single})
	impl, err := locks.All().Get("setnx")
	if err != nil {
		b.Fatal(err)
	}
	for _, recorded := range []bool{false, true} {
		name := "unrecorded"
		if recorded {
			name = "recorded"
		}
		b.Run(name, func(b *testing.B) {
			rec := histories.NewRecorder(histories.Meta{Fencing: "off"})
			var next atomic.Int64
			b.SetParallelism(2) // 2 × GOMAXPROCS(2) = 4 clients, as redis-benchmark was run
			b.RunParallel(func(pb *testing.PB) {
				l, err := impl.New(lockimpl.Config{Addrs: c.LockAddrs()})
				if err != nil {
					b.Error(err)
					return
				}
				defer l.Close()
				key := KeyName(int(next.Add(1)))
				s := rec.Stream(0)
				ctx := context.Background()
				for pb.Next() {
					call := s.Now()
					lease, err := l.Acquire(ctx, key, time.Second)
					if recorded {
						s.Record(histories.Acquire, key, histories.Input{TTL: time.Second},
							histories.Output{Token: lease.Token, Validity: lease.Validity}, lockimpl.Classify(err), call)
					}
					if err != nil {
						b.Error(err)
						return
					}
					call = s.Now()
					err = l.Release(ctx, lease)
					if recorded {
						s.Record(histories.Release, key, histories.Input{Token: lease.Token}, histories.Output{}, lockimpl.Classify(err), call)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acquire+release/s")
		})
	}
}

// BenchmarkStreamRecord is the recorder's own cost per operation, without Redis.
func BenchmarkStreamRecord(b *testing.B) {
	rec := histories.NewRecorder(histories.Meta{Fencing: "off"})
	s := rec.Stream(0)
	for b.Loop() {
		s.Record(histories.Acquire, "k0", histories.Input{TTL: time.Second}, histories.Output{Token: "t"}, histories.OK, s.Now())
	}
}
