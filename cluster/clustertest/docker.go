package clustertest

import (
	"context"
	"os"
	"testing"

	"github.com/locklab/locklab/cluster/docker"
)

// EnvRequireDocker makes a missing Docker engine or image fail the docker backend's tests
// instead of skipping them; CI sets it (and CI, set by most CI systems, does the same).
const EnvRequireDocker = "LOCKLAB_REQUIRE_DOCKER"

// DockerBackend is a docker backend whose containers and networks are removed at cleanup.
// Without an engine or the image the test is skipped with the way to get them, or fails
// where they are required (EnvRequireDocker, CI).
func DockerBackend(t testing.TB) *docker.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	b, err := docker.New(ctx, docker.Options{Dir: t.TempDir()})
	if err != nil {
		if os.Getenv(EnvRequireDocker) != "" || os.Getenv("CI") != "" {
			t.Fatalf("clustertest: %v", err)
		}
		t.Skipf("clustertest: docker backend unavailable (scripts/docker-engine.sh start; make docker-image): %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("clustertest: close docker backend: %v", err)
		}
	})
	return b
}
