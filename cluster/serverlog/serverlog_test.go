package serverlog

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGrew: only what the log grew by since the offset counts, and a missing log is an
// error, not a "no".
func TestGrew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(path, []byte("first start: serving\nsecond start: "), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		offset int64
		s      string
		want   bool
	}{{0, "serving", true}, {21, "serving", false}, {21, "second", true}, {1 << 30, "second", false}} {
		if got, err := Grew(path, c.offset, c.s); err != nil || got != c.want {
			t.Errorf("Grew(offset %d, %q) = %v, %v; want %v", c.offset, c.s, got, err, c.want)
		}
	}
	if _, err := Grew(filepath.Join(t.TempDir(), "none.log"), 0, "x"); err == nil {
		t.Error("Grew of a missing log: no error")
	}
}
