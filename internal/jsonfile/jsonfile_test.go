package jsonfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteThenRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	in := map[string]int{"a": 1}
	if err := Write(path, in); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "{\n  \"a\": 1\n}\n" {
		t.Errorf("file = %q", data)
	}
	var out map[string]int
	if err := Read(path, &out); err != nil || out["a"] != 1 {
		t.Fatalf("read back %v, %v", out, err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Read(path, &out); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("bad JSON: %v, want an error naming the file", err)
	}
	if err := Write(path, func() {}); err == nil {
		t.Error("a func encoded without error")
	}
}
