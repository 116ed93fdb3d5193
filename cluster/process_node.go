package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/cluster/faketime"
	"github.com/locklab/locklab/cluster/serverlog"
	"github.com/locklab/locklab/cluster/spawn"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// reapTimeout bounds the wait for a SIGKILLed process to be reaped.
const reapTimeout = 10 * time.Second

// errPortInUse marks a start that failed because another process had the port.
var errPortInUse = errors.New("port already in use")

// ProcessNode is a server process started by a ProcessBackend: a redis-server, or an
// etcd member (etcd.go).
type ProcessNode struct {
	kind             string // "redis" or "etcd", for messages and for what may act on it
	name, addr, dir  string
	logPath, outPath string // the server's own log; stdout+stderr (messages before the log opens)
	binary           string
	args             []string
	// ready probes whether the current process serves (caller holds mu); nil: a Redis
	// PING answered by this very process.
	ready func(ctx context.Context) error
	env   []string        // nil: the harness's own environment
	clock *faketime.Clock // set when the server runs under libfaketime
	spawn *spawn.Spawner

	mu      sync.Mutex // serialises the operations on one node
	proc    *proc      // the current (or last) process; nil before the first start
	stopped bool       // Stop was called: the node never runs again
}

// proc is one run of the server.
type proc struct {
	pid      int
	exited   chan struct{} // closed once the process has been reaped
	logStart int64         // the log's size before this run wrote to it
}

func newProcessNode(b *ProcessBackend, name, dir string, port int, persist, extra []string) *ProcessNode {
	n := &ProcessNode{
		kind:    "redis",
		name:    name,
		addr:    "127.0.0.1:" + strconv.Itoa(port),
		dir:     dir,
		logPath: filepath.Join(dir, "redis.log"),
		outPath: filepath.Join(dir, "stdout.log"),
		binary:  b.binary,
		spawn:   b.spawn,
	}
	n.args = append([]string{
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--daemonize", "no",
		"--protected-mode", "no",
		"--dir", dir,
		"--logfile", n.logPath,
		// Redis replaces its command line with this title; the tag keeps our servers
		// recognisable to `pgrep -a redis-server | grep locklab`.
		"--proc-title-template", "{title} {listen-addr} locklab:" + name,
	}, persist...)
	n.args = append(n.args, extra...)
	return n
}

// Kind is what the server is: "redis" or "etcd".
func (n *ProcessNode) Kind() string { return n.kind }

// Name is the name given in NodeConfig.
func (n *ProcessNode) Name() string { return n.name }

// Addr is 127.0.0.1:port.
func (n *ProcessNode) Addr() string { return n.addr }

// LogPath is the server's log file, which survives restarts (the server appends).
func (n *ProcessNode) LogPath() string { return n.logPath }

// Dir is the server's working and data directory.
func (n *ProcessNode) Dir() string { return n.dir }

// Pid is the current (or last) process id, 0 before the first start.
func (n *ProcessNode) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return 0
	}
	return n.proc.pid
}

// running reports whether the current process is alive (not yet reaped). Caller holds mu.
func (n *ProcessNode) running() bool {
	if n.proc == nil {
		return false
	}
	select {
	case <-n.proc.exited:
		return false
	default:
		return true
	}
}

// signalGroup signals the server's process group, which also reaches the children redis
// forks for rewrites and saves. Caller holds mu.
func (n *ProcessNode) signalGroup(sig syscall.Signal) error {
	if err := syscall.Kill(-n.proc.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s to %s %s (pid %d): %w", sig, n.kind, n.name, n.proc.pid, err)
	}
	return nil
}

// Pause sends SIGSTOP and returns once the kernel has stopped the server: signals are
// delivered asynchronously, and whatever follows Pause must meet a frozen server.
func (n *ProcessNode) Pause(ctx context.Context) error {
	if err := n.signalRunning("pause", syscall.SIGSTOP); err != nil {
		return err
	}
	pid := n.Pid()
	deadline := time.Now().Add(stopWait)
	for procState(pid) != 'T' {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("pause %s %s (pid %d): waiting for it to stop: %w", n.kind, n.name, pid, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pause %s %s (pid %d): not stopped %s after SIGSTOP", n.kind, n.name, pid, stopWait)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// stopWait bounds the wait for a SIGSTOPped server to stop.
const stopWait = 5 * time.Second

// procState is the state letter of pid in /proc/PID/stat ('T' stopped), 0 when unknown.
func procState(pid int) byte {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(stat), ')') // the name in parentheses may hold anything
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// Resume sends SIGCONT.
func (n *ProcessNode) Resume(ctx context.Context) error {
	return n.signalRunning("resume", syscall.SIGCONT)
}

func (n *ProcessNode) signalRunning(what string, sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running() {
		return fmt.Errorf("%s %s %s on %s: not running", what, n.kind, n.name, n.addr)
	}
	return n.signalGroup(sig)
}

// Kill sends SIGKILL and waits until the process is reaped. The directory is kept.
func (n *ProcessNode) Kill(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running() {
		return fmt.Errorf("kill %s %s on %s: not running", n.kind, n.name, n.addr)
	}
	return n.killAndReap()
}

// killAndReap SIGKILLs the group and waits for the reap, bounded by reapTimeout rather than
// a caller's ctx: a dying process must not be left behind unreaped. Caller holds mu.
func (n *ProcessNode) killAndReap() error {
	if err := n.signalGroup(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-n.proc.exited:
		return nil
	case <-time.After(reapTimeout):
		return fmt.Errorf("%s %s (pid %d) still alive %s after SIGKILL", n.kind, n.name, n.proc.pid, reapTimeout)
	}
}

// Restart starts a killed server again on the same port, directory and arguments.
func (n *ProcessNode) Restart(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.stopped:
		return fmt.Errorf("restart %s %s on %s: node was stopped", n.kind, n.name, n.addr)
	case n.running():
		return fmt.Errorf("restart %s %s on %s: still running (Kill it first)", n.kind, n.name, n.addr)
	}
	return n.startLocked(ctx)
}

// Stop ends the server for good: SIGTERM (plus SIGCONT in case it is paused), then SIGKILL
// after stopGrace or when ctx ends. Idempotent.
func (n *ProcessNode) Stop(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopped = true
	if !n.running() {
		return nil
	}
	if err := syscall.Kill(n.proc.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s %s: %w", n.kind, n.name, err)
	}
	_ = n.signalGroup(syscall.SIGCONT) // a stopped process only acts on SIGTERM once continued
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-n.proc.exited:
		// Children redis forked (a rewrite in progress) may outlive it; they are in its group.
		return n.signalGroup(syscall.SIGKILL)
	case <-grace.C:
	case <-ctx.Done():
	}
	return n.killAndReap()
}

// Discard ends the server for good at once: SIGKILL to its group, and the reap. Nothing
// it holds survives but what it already wrote to disk, and nothing more is written to its
// log; Stop's SIGTERM would instead wait for Redis's next cron tick, up to 100 ms. For
// servers whose data nobody needs any more. Idempotent.
func (n *ProcessNode) Discard() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopped = true
	if !n.running() {
		return nil
	}
	return n.killAndReap()
}

// start is the first start of the node.
func (n *ProcessNode) start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startLocked(ctx)
}

// startLocked runs the server and waits until it answers; on failure nothing is left
// running. Caller holds mu.
func (n *ProcessNode) startLocked(ctx context.Context) error {
	logStart, err := n.launchLocked()
	if err != nil {
		return err
	}
	return n.awaitLocked(ctx, logStart)
}

// launchLocked starts the server's process without waiting for it to serve (an etcd
// member serves only once a quorum of its cluster runs). It returns the size its log had
// before, for awaitLocked. Caller holds mu.
func (n *ProcessNode) launchLocked() (logStart int64, err error) {
	if n.stopped {
		return 0, fmt.Errorf("start %s %s on %s: node was stopped", n.kind, n.name, n.addr)
	}
	if n.clock != nil {
		// libfaketime takes its start time when the process starts: the file is derived
		// from it, so that a restart keeps the clock where it was set.
		if err := n.clock.Started(time.Now()); err != nil {
			return 0, fmt.Errorf("start %s on %s: %w", n.kind, n.addr, err)
		}
	}
	logStart = fileSize(n.logPath)
	out, err := os.OpenFile(n.outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("start %s on %s: %w", n.kind, n.addr, err)
	}
	cmd := exec.Command(n.binary, n.args...)
	cmd.Dir = n.dir
	cmd.Env = n.env
	cmd.Stdout, cmd.Stderr = out, out
	// Own process group: a terminal's Ctrl-C reaches only us, and we stop the server in
	// order. Pdeathsig: the server dies with us even if we are SIGKILLed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = n.spawn.Start(cmd)
	out.Close() // the child has its own copy
	if err != nil {
		return 0, fmt.Errorf("start %s on %s: %w", n.kind, n.addr, err)
	}
	p := &proc{pid: cmd.Process.Pid, exited: make(chan struct{}), logStart: logStart}
	go func() {
		_ = cmd.Wait() // reaps; the exit status shows in the log
		close(p.exited)
	}()
	n.proc = p
	return logStart, nil
}

// awaitLocked waits until the launched server answers; on failure it kills it. Caller
// holds mu.
func (n *ProcessNode) awaitLocked(ctx context.Context, logStart int64) error {
	if err := n.waitReady(ctx); err != nil {
		_ = n.killAndReap()
		// Redis says "Address already in use", etcd "address already in use".
		if grewWith(n.logPath, logStart, "ddress already in use") {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return fmt.Errorf("start %s on %s: %w%s", n.kind, n.addr, err, tail(20, n.outPath, n.logPath))
	}
	return nil
}

// waitReady probes until the server answers as itself, it exits, or the deadline passes.
func (n *ProcessNode) waitReady(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}
	var last error
	for {
		if last = n.probe(ctx); last == nil {
			return nil
		}
		// A server may go on unready after a failed bind (a ZooKeeper leader whose quorum
		// port is taken is elected again and again): no use waiting.
		if grewWith(n.logPath, n.proc.logStart, "ddress already in use") {
			return fmt.Errorf("not ready, and a bind failed: %w", last)
		}
		wait := time.NewTimer(nextProbe(last))
		select {
		case <-n.proc.exited:
			wait.Stop()
			return fmt.Errorf("%s exited before it was ready", n.kind)
		case <-ctx.Done():
			wait.Stop()
			return fmt.Errorf("not ready: %w (last probe: %v)", ctx.Err(), last)
		case <-wait.C:
		}
	}
}

// nextProbe is how long to wait before probing again after err: a connection refused (the
// server is not listening yet) costs nothing to try again soon, and Redis listens within
// a few milliseconds; a probe that got further is repeated every pollInterval.
func nextProbe(err error) time.Duration {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return refusedPoll
	}
	return pollInterval
}

// probe is one readiness probe of the current process. Caller holds mu.
func (n *ProcessNode) probe(ctx context.Context) error {
	if n.ready != nil {
		return n.ready(ctx)
	}
	return Probe(ctx, n.addr, n.proc.pid)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// grewWith reports whether what was appended to path after offset contains s.
func grewWith(path string, offset int64, s string) bool {
	grew, _ := serverlog.Grew(path, offset, s) // an unreadable log says nothing
	return grew
}
