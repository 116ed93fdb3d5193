package runner

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// BenchmarkRunOnBackend is one whole run (servers started, a 500 ms workload of two
// clients, checked, servers stopped) per backend and topology, each backend opened once
// as a campaign does: docker's ns/op over process's is the per-run overhead of containers.
func BenchmarkRunOnBackend(b *testing.B) {
	for _, topo := range []string{"single", "replicated"} {
		for _, backend := range testBackends {
			b.Run(topo+"/"+backend, func(b *testing.B) {
				var be cluster.Backend = clustertest.Backend(b)
				if backend == plan.BackendDocker {
					be = clustertest.DockerBackend(b)
				}
				p := plan.Default()
				p.Name, p.Impl, p.Topology, p.Backend = "bench", "fenced", topo, backend
				p.Clients, p.Duration = 2, plan.D(500*time.Millisecond)
				r, err := p.Resolve(locks.All())
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					rep, err := Run(context.Background(), r, Options{Backend: be, Dir: b.TempDir()})
					if err != nil {
						b.Fatal(err)
					}
					if rep.Ops == 0 {
						b.Fatal("no operations recorded")
					}
				}
			})
		}
	}
}
