package cluster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
)

// The child mode: the test binary re-executed with childEnv set starts one server (a
// redis-server, or with childServe "serve-zookeeper" a ZooKeeper member of a quorum of
// one), prints its pid, and blocks until SIGINT or SIGTERM, which it answers by closing
// the backend.
const (
	childEnv    = "LOCKLAB_CLUSTER_TEST_CHILD"
	childDirEnv = "LOCKLAB_CLUSTER_TEST_CHILD_DIR"
)

const childServeZooKeeper = "serve-zookeeper"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode == "serve" || mode == childServeZooKeeper {
		os.Exit(serveChild(mode))
	}
	os.Exit(m.Run())
}

func serveChild(mode string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := cluster.NewProcessBackend(cluster.ProcessOptions{Dir: os.Getenv(childDirEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer b.Close()
	var n cluster.Node
	if mode == childServeZooKeeper {
		var c *cluster.Cluster
		if c, err = cluster.Start(ctx, b, cluster.Topology{Kind: cluster.ZooKeeper, Nodes: 1}, cluster.Options{}); err == nil {
			n = c.Lock[0]
		}
	} else {
		n, err = b.StartNode(ctx, cluster.NodeConfig{Name: "child"})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("pid %d\n", n.(*cluster.ProcessNode).Pid())
	<-ctx.Done()
	if err := b.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// child is the test binary running in child mode.
type child struct {
	cmd    *exec.Cmd
	pid    int           // its server's pid
	exited chan struct{} // closed once the child has been reaped; then cmd.ProcessState is set
}

// startChild runs the child mode and waits until its server is up; alive says whether a
// pid is such a server.
func startChild(t *testing.T, mode string, alive func(pid int) bool) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0]), exited: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+t.TempDir(),
		"GORACE=atexit_sleep_ms=0") // under -race, a child would otherwise linger 1s at exit
	c.cmd.Stderr = os.Stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill() // harmless once it has exited
		<-c.exited
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
		_ = c.cmd.Wait() // only after the read: Wait closes the pipe
		close(c.exited)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(clustertest.Wait):
		t.Fatal("child printed no pid")
	}
	c.pid, err = strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "pid "))
	if err != nil {
		t.Fatalf("child said %q, want its server's pid", line)
	}
	t.Cleanup(func() {
		if alive(c.pid) { // the test failed: leave no server behind
			_ = syscall.Kill(c.pid, syscall.SIGKILL)
		}
	})
	if !alive(c.pid) {
		t.Fatalf("server pid %d not alive while the child runs", c.pid)
	}
	return c
}

// wait waits (bounded) for the child to exit.
func (c *child) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c.exited:
	case <-time.After(clustertest.Wait):
		t.Fatal("child did not exit")
	}
}

func TestNoServerSurvivesChildInterrupt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			c := startChild(t, "serve", redisAlive)
			if err := c.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			c.wait(t)
			if code := c.cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("child exit code %d, want 0 (it closes the backend on %s)", code, sig)
			}
			// The child stopped and reaped its server before exiting.
			if redisAlive(c.pid) {
				t.Fatalf("server pid %d alive after the child closed", c.pid)
			}
		})
	}
}

func TestNoServerSurvivesChildKill(t *testing.T) {
	// As a subreaper this test process inherits the server when the child dies, so it can
	// reap it and see how it died, instead of leaving a zombie for init. A JVM is one
	// process, whatever threads it runs: Pdeathsig ends it as it ends a redis-server.
	setSubreaper(t)
	for _, tc := range []struct {
		mode  string
		alive func(int) bool
	}{{"serve", redisAlive}, {childServeZooKeeper, javaAlive}} {
		t.Run(tc.mode, func(t *testing.T) {
			c := startChild(t, tc.mode, tc.alive)
			if err := c.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			c.wait(t)
			if status, ours := reapOrphan(t, c.pid); ours && (!status.Signaled() || status.Signal() != syscall.SIGKILL) {
				t.Fatalf("server ended with status %v; want killed by SIGKILL (Pdeathsig)", status)
			}
		})
	}
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

func setSubreaper(t *testing.T) {
	t.Helper()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	t.Cleanup(func() { syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0) })
}

// reapOrphan waits (bounded) until pid, the server of a killed child, is dead and reaped.
// Usually it was orphaned to us and we reap it (ours): its status shows how it died. But
// the dying child's own waiter may win the race and reap it first; then it simply vanishes.
func reapOrphan(t *testing.T, pid int) (status syscall.WaitStatus, ours bool) {
	t.Helper()
	deadline := time.Now().Add(clustertest.Wait)
	for {
		got, err := syscall.Wait4(pid, &status, syscall.WNOHANG, nil)
		switch {
		case got == pid:
			return status, true
		case err != nil && err != syscall.ECHILD && err != syscall.EINTR:
			t.Fatalf("wait4(%d): %v", pid, err)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, fs.ErrNotExist) {
			return 0, false
		}
		if time.Now().After(deadline) {
			t.Fatalf("server pid %d not reaped within %s", pid, clustertest.Wait)
		}
		time.Sleep(5 * time.Millisecond) // not yet dead, or dead but not yet reparented to us
	}
}
