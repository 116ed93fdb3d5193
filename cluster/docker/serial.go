package docker

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// serial runs the engine operations that join containers to networks or take them off
// (create and connect, start, kill, remove, disconnect) one at a time: across the
// goroutines of a backend by a mutex, and across backends and processes on this host by
// an exclusive flock on a file named after the engine. Why: the engine locklab is tested
// with (Debian's docker.io 20.10) can deadlock in libnetwork when containers leave and
// join networks at once (its endpoint watch takes the controller's and a network's locks
// in the opposite order of a leaving endpoint), after which it answers no request at all;
// seen here once in a few hundred container starts and removals done in parallel.
type serial struct {
	mu   sync.Mutex
	file *os.File // nil: no file lock (it could not be made; the mutex still holds)
}

// newSerial opens the lock file of the engine named host.
func newSerial(host string) *serial {
	h := fnv.New32a()
	h.Write([]byte(host))
	path := filepath.Join(os.TempDir(), fmt.Sprintf("locklab-docker-%08x.lock", h.Sum32()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return &serial{}
	}
	return &serial{file: f}
}

// do runs f alone.
func (s *serial) do(f func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		if err := syscall.Flock(int(s.file.Fd()), syscall.LOCK_EX); err == nil {
			defer syscall.Flock(int(s.file.Fd()), syscall.LOCK_UN) //nolint:errcheck // released with the file at worst
		}
	}
	return f()
}

// close releases the lock file.
func (s *serial) close() error {
	if s.file == nil {
		return nil
	}
	return s.file.Close()
}
