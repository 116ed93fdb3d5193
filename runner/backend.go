package runner

import (
	"context"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/docker"
	"github.com/locklab/locklab/plan"
)

// NewBackend opens the backend a plan names (plan.Plan.Backend; "" is the process
// backend). The caller closes it, which stops every server it started. On an error the
// backend is an untyped nil, so that callers may compare it with nil.
func NewBackend(ctx context.Context, name string) (cluster.Backend, error) {
	if err := plan.CheckBackend(name); err != nil {
		return nil, err
	}
	if name == plan.BackendDocker {
		return orNil(docker.New(ctx, docker.Options{}))
	}
	return orNil(cluster.NewProcessBackend(cluster.ProcessOptions{}))
}

// orNil is b as a cluster.Backend, nil when err is set.
func orNil[B cluster.Backend](b B, err error) (cluster.Backend, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}
