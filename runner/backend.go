package runner

import (
	"context"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/docker"
	"github.com/locklab/locklab/plan"
)

// NewBackend opens the backend a plan names (plan.Plan.Backend; "" is the process
// backend). The caller closes it, which stops every server it started.
func NewBackend(ctx context.Context, name string) (cluster.Backend, error) {
	if err := plan.CheckBackend(name); err != nil {
		return nil, err
	}
	if name == plan.BackendDocker {
		return docker.New(ctx, docker.Options{})
	}
	return cluster.NewProcessBackend(cluster.ProcessOptions{})
}
