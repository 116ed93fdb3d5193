package runner

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// clientLog is logs/client-N.log of a run directory: a lock client's own stderr. The file
// is created on the first write, so clients that log nothing (every in-process lock)
// leave none.
type clientLog struct {
	path string
	mu   sync.Mutex
	f    *os.File
	err  error
}

// clientLogs are the log writers of n clients in dir's logs directory; nil writers
// without a run directory.
func clientLogs(dir string, n int) []*clientLog {
	if dir == "" {
		return make([]*clientLog, n)
	}
	logs := make([]*clientLog, n)
	for i := range logs {
		logs[i] = &clientLog{path: filepath.Join(dir, LogsDir, fmt.Sprintf("client-%d.log", i))}
	}
	return logs
}

// writer is l as an io.Writer, nil for no log (a nil *clientLog in an interface is not nil).
func (l *clientLog) writer() io.Writer {
	if l == nil {
		return nil
	}
	return l
}

func (l *clientLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		if l.err = os.MkdirAll(filepath.Dir(l.path), 0o755); l.err == nil {
			l.f, l.err = os.Create(l.path)
		}
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(b)
}

// closeClientLogs closes the files that were created; a client still writing after this
// (one that outlived its locker) gets an error its tee ignores.
func closeClientLogs(logs []*clientLog) error {
	var first error
	for _, l := range logs {
		if l == nil {
			continue
		}
		l.mu.Lock()
		if l.f != nil {
			if err := l.f.Close(); err != nil && first == nil {
				first = err
			}
			l.f = nil
		}
		l.err = os.ErrClosed
		l.mu.Unlock()
	}
	return first
}
