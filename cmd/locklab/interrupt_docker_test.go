package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/docker"
)

// TestInterruptedDockerRunLeavesNothing: Ctrl-C in the middle of `locklab run --backend
// docker` removes every container and network the run made (testcontainers' reaper is
// off, so nothing else would).
func TestInterruptedDockerRunLeavesNothing(t *testing.T) {
	clustertest.DockerBackend(t) // skips with the reason when there is no engine or image
	cmd := exec.Command(os.Args[0], "run", "--backend", "docker", "--topology", "replicated", "--impl", "fenced",
		"--duration", "1m", "--out", t.TempDir())
	cmd.Env = append(os.Environ(), asCLI+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // a no-op once it has exited
	owner := docker.Owner(cmd.Process.Pid)
	ctx := context.Background()
	// Interrupt once every server runs: 3 data nodes, 3 Sentinels and the store, and the
	// two networks.
	deadline := time.Now().Add(time.Minute)
	for {
		left, err := docker.Leftovers(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) >= 9 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run made %v in a minute, want 7 containers and 2 networks; stderr:\n%s", left, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError {
		t.Errorf("exit %v, want status %d; stderr:\n%s", err, exitError, stderr.String())
	}
	left, err := docker.Leftovers(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("left after Ctrl-C: %v", left)
	}
}
