// Package spawn starts the process backend's servers from one OS thread that lives as long
// as the backend, so that the kernel kills them (Pdeathsig) when the harness dies, and not
// before. It knows nothing of servers: package cluster starts redis-server, etcd and
// ZooKeeper's JVMs through it.
package spawn

import (
	"errors"
	"os/exec"
	"runtime"
	"sync"
)

// ErrClosed is returned for a start asked of a closed Spawner.
var ErrClosed = errors.New("backend closed")

// Spawner starts processes from one OS thread that lives as long as it does.
//
// Why: Linux sends Pdeathsig when the *thread* that forked the child exits, not the
// process. Go may retire the thread an arbitrary goroutine ran on, which would SIGKILL a
// healthy server; a goroutine locked to its thread for the Spawner's lifetime keeps that
// thread alive until Close, and when it exits the thread goes too, taking any child still
// alive with it.
type Spawner struct {
	reqs chan spawnReq
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

// New starts a Spawner's thread.
func New() *Spawner {
	s := &Spawner{reqs: make(chan spawnReq), quit: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *Spawner) run() {
	runtime.LockOSThread() // never unlocked: the thread must end with this goroutine
	defer close(s.done)
	for {
		select {
		case r := <-s.reqs:
			r.reply <- r.cmd.Start()
		case <-s.quit:
			return
		}
	}
}

// Start runs cmd.Start on the Spawner's thread.
func (s *Spawner) Start(cmd *exec.Cmd) error {
	reply := make(chan error, 1)
	select {
	case s.reqs <- spawnReq{cmd: cmd, reply: reply}:
		return <-reply
	case <-s.quit:
		return ErrClosed
	}
}

// Close ends the Spawner's thread; call it only once every child has been stopped.
// Idempotent.
func (s *Spawner) Close() {
	s.once.Do(func() { close(s.quit) })
	<-s.done
}
