// Package serverlog reads what a server locklab started wrote to its log since it
// started: the servers' own word that they serve (an etcd member's, a ZooKeeper
// member's), or that a bind failed.
package serverlog

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// window bounds what Grew reads: a server says what it is waited for early in its log.
const window = 1 << 20

// Grew reports whether the log at path, from offset on (its size before this start of
// the server, so that an earlier start's words do not count), holds s.
func Grew(path string, offset int64, s string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, offset, window))
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return strings.Contains(string(data), s), nil
}
