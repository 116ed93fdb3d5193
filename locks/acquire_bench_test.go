package locks_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
)

// BenchmarkAcquire measures what one uncontended acquire costs (its release is not
// timed) on real servers on this machine, in one run so that the ratios compare like
// with like: Redis's single-instance locks against etcd's and ZooKeeper's locks on one
// member and on three. Each reports its median and 99th percentile (p50-ns, p99-ns).
func BenchmarkAcquire(b *testing.B) {
	for _, c := range []struct {
		impl string
		topo cluster.Topology
	}{
		{"setnx", cluster.Topology{Kind: cluster.Single, Nodes: 1}},
		{"fenced", cluster.Topology{Kind: cluster.Single, Nodes: 1}},
		{"redislock", cluster.Topology{Kind: cluster.Single, Nodes: 1}},
		{"redsync", cluster.Topology{Kind: cluster.Nodes, Nodes: 3}},
		{"etcd", cluster.Topology{Kind: cluster.Etcd, Nodes: 1}},
		{"etcd", cluster.Topology{Kind: cluster.Etcd, Nodes: 3}},
		{"zookeeper", cluster.Topology{Kind: cluster.ZooKeeper, Nodes: 1}},
		{"zookeeper", cluster.Topology{Kind: cluster.ZooKeeper, Nodes: 3}},
	} {
		b.Run(fmt.Sprintf("%s/%s", c.impl, c.topo), func(b *testing.B) {
			impl, err := locks.All().Get(c.impl)
			if err != nil {
				b.Fatal(err)
			}
			cl := clustertest.Start(b, c.topo)
			l, err := impl.New(lockimpl.Config{Addrs: cl.LockAddrs(), Timeout: 2 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			took := make([]time.Duration, 0, b.N)
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				lease, err := l.Acquire(ctx, fmt.Sprintf("k%d", i%16), 10*time.Second)
				took = append(took, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := l.Release(ctx, lease); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
