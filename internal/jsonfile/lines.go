package jsonfile

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// LineAt is the 1-based line of byte offset off in data.
func LineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// FieldLines maps each field path of a JSON document ("ttl", "faults[1].at") to the
// line its key is on, so that validation errors can say where the bad value is.
func FieldLines(data []byte) map[string]int {
	type frame struct {
		path   string
		array  bool
		index  int
		key    string // object: path of the key whose value comes next
		hasKey bool
	}
	lines := map[string]int{}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return lines
		}
		if tok == json.Delim('}') || tok == json.Delim(']') {
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		path := ""
		if len(stack) > 0 {
			top := stack[len(stack)-1]
			switch {
			case top.array:
				path = fmt.Sprintf("%s[%d]", top.path, top.index)
				top.index++
				lines[path] = LineAt(data, dec.InputOffset())
			case !top.hasKey:
				// In an object a string in key position is a key.
				key, _ := tok.(string)
				top.key, top.hasKey = key, true
				if top.path != "" {
					top.key = top.path + "." + key
				}
				lines[top.key] = LineAt(data, dec.InputOffset())
				continue
			default:
				path, top.hasKey = top.key, false
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{path: path})
		case json.Delim('['):
			stack = append(stack, &frame{path: path, array: true})
		}
	}
}

// FieldLine is the line of a field path ("ttl", "faults[0].at") in a JSON document, or 0.
func FieldLine(data []byte, field string) int { return FieldLines(data)[field] }
