package runner

import (
	"context"
	"fmt"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/docker"
	"github.com/locklab/locklab/plan"
)

// NewBackend opens the backend a plan names (plan.Plan.Backend; "" is the process
// backend). The caller closes it, which stops every server it started.
func NewBackend(ctx context.Context, name string) (cluster.Backend, error) {
	switch name {
	case "", plan.BackendProcess:
		return cluster.NewProcessBackend(cluster.ProcessOptions{})
	case plan.BackendDocker:
		return docker.New(ctx, docker.Options{})
	}
	return nil, fmt.Errorf("unknown backend %q (want %s or %s)", name, plan.BackendProcess, plan.BackendDocker)
}
