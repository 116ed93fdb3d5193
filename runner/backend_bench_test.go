package runner

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/internal/benchstat"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// BenchmarkRunOnBackend is one whole run (servers started, a 500 ms workload of two
// clients, checked, servers stopped) on the process backend and on the docker backend,
// in interleaved pairs, per topology; each backend is opened once, as a campaign does. It
// reports the median of the pairs' docker ÷ process ratios and their spread: the per-run
// overhead of containers in a campaign's steady state, where a run's containers are the
// previous run's, reset (cluster/docker's pool). The first docker run, which makes the
// containers, is timed apart (docker-first-s).
func BenchmarkRunOnBackend(b *testing.B) {
	for _, topo := range []string{"single", "replicated"} {
		b.Run(topo, func(b *testing.B) {
			backends := map[string]cluster.Backend{
				plan.BackendProcess: clustertest.Backend(b),
				plan.BackendDocker:  clustertest.DockerBackend(b),
			}
			run := func(backend string) time.Duration {
				p := plan.Default()
				p.Name, p.Impl, p.Topology, p.Backend = "bench", "fenced", topo, backend
				p.Clients, p.Duration = 2, plan.D(500*time.Millisecond)
				r, err := p.Resolve(locks.All())
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				rep, err := Run(context.Background(), r, Options{Backend: backends[backend], Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Ops == 0 {
					b.Fatal("no operations recorded")
				}
				return time.Since(start)
			}
			first := run(plan.BackendDocker)
			run(plan.BackendProcess)
			var proc, dock, ratios []float64
			for b.Loop() {
				p, d := run(plan.BackendProcess), run(plan.BackendDocker)
				proc, dock = append(proc, p.Seconds()), append(dock, d.Seconds())
				ratios = append(ratios, d.Seconds()/p.Seconds())
			}
			b.ReportMetric(benchstat.Median(proc), "process-s")
			b.ReportMetric(benchstat.Median(dock), "docker-s")
			b.ReportMetric(benchstat.Median(ratios), "docker/process")
			b.ReportMetric(benchstat.IQR(ratios), "docker/process-iqr")
			b.ReportMetric(first.Seconds(), "docker-first-s")
		})
	}
}
