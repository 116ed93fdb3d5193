package cluster

import (
	"errors"
	"os/exec"
	"runtime"
	"sync"
)

// errBackendClosed is returned for work asked of a closed backend.
var errBackendClosed = errors.New("backend closed")

// spawner starts processes from one OS thread that lives as long as the backend.
//
// Why: Linux sends Pdeathsig when the *thread* that forked the child exits, not the
// process. Go may retire the thread an arbitrary goroutine ran on, which would SIGKILL a
// healthy server; a goroutine locked to its thread for the backend's lifetime keeps that
// thread alive until Close, and when it exits the thread goes too, taking any child still
// alive with it.
type spawner struct {
	reqs chan spawnReq
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), quit: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *spawner) run() {
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

// start runs cmd.Start on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	reply := make(chan error, 1)
	select {
	case s.reqs <- spawnReq{cmd: cmd, reply: reply}:
		return <-reply
	case <-s.quit:
		return errBackendClosed
	}
}

// close ends the spawner's thread; call it only once every child has been stopped.
func (s *spawner) close() {
	s.once.Do(func() { close(s.quit) })
	<-s.done
}
