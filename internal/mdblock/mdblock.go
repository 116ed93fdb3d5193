// Package mdblock replaces the text between two marker lines of a Markdown document:
// how generated tables (the verdict matrix, the benchmarks) live inside hand-written
// pages.
package mdblock

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Check reports whether the file at path has the marker lines, exactly once each and in
// order: worth knowing before a long run that would write between them.
func Check(path, begin, end string) error {
	data, err := os.ReadFile(path)
	if err == nil {
		_, err = Replace(data, "", path, begin, end)
	}
	return err
}

// Update puts block between the marker lines of the file at path, keeping its mode.
func Update(path, block, begin, end string) error {
	fi, err := os.Stat(path)
	var data []byte
	if err == nil {
		data, err = os.ReadFile(path)
	}
	if err == nil {
		data, err = Replace(data, block, path, begin, end)
	}
	if err == nil {
		err = os.WriteFile(path, data, fi.Mode().Perm())
	}
	if err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	return nil
}

// Replace replaces what lies between the line begin and the line end of doc (named name
// in errors) with block; the marker lines stay.
func Replace(doc []byte, block, name, begin, end string) ([]byte, error) {
	lines := bytes.SplitAfter(doc, []byte("\n"))
	b, e := -1, -1
	for i, l := range lines {
		switch strings.TrimSpace(string(l)) {
		case begin:
			if b >= 0 {
				return nil, fmt.Errorf("%s: line %s appears twice (lines %d and %d)", name, begin, b+1, i+1)
			}
			b = i
		case end:
			if e >= 0 {
				return nil, fmt.Errorf("%s: line %s appears twice (lines %d and %d)", name, end, e+1, i+1)
			}
			e = i
		}
	}
	switch {
	case b < 0 && e < 0:
		return nil, fmt.Errorf("%s: no markers: the text goes between a line %s and a line %s", name, begin, end)
	case b < 0:
		return nil, fmt.Errorf("%s: no line %s before %s (line %d)", name, begin, end, e+1)
	case e < 0:
		return nil, fmt.Errorf("%s: no line %s after %s (line %d)", name, end, begin, b+1)
	case e < b:
		return nil, fmt.Errorf("%s: %s (line %d) comes before %s (line %d)", name, end, e+1, begin, b+1)
	}
	var out bytes.Buffer
	for _, l := range lines[:b+1] {
		out.Write(l)
	}
	if !bytes.HasSuffix(lines[b], []byte("\n")) {
		out.WriteByte('\n') // cannot happen: the end line follows
	}
	if block != "" {
		out.WriteString("\n" + strings.TrimRight(block, "\n") + "\n\n")
	}
	for _, l := range lines[e:] {
		out.Write(l)
	}
	return out.Bytes(), nil
}
