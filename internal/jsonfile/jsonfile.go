// Package jsonfile writes and reads the indented JSON files of run, campaign and matrix
// directories, one way everywhere, and finds the line of a field in a JSON document for
// errors that say where. It imports nothing of locklab's.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Write writes v to path as indented JSON with a final newline.
func Write(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Read reads the JSON file at path into v; errors name the file.
func Read(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// Rest is what follows the value dec last decoded from data, spaces trimmed: empty when
// the value was the whole document. dec.More cannot tell: it reports false before a
// stray '}' or ']', so `{"a":1} }` would pass as one value.
func Rest(data []byte, dec *json.Decoder) []byte {
	return bytes.TrimSpace(data[min(int(dec.InputOffset()), len(data)):])
}
