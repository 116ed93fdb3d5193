package jsonfile

import "testing"

func TestFieldLines(t *testing.T) {
	doc := []byte("{\n \"a\": 1,\n \"b\": {\"c\": [\n  {\"d\": 2},\n  {\"e\": [3, {\"f\": 4}]}\n ]},\n \"g\": \"h\"\n}")
	want := map[string]int{"a": 2, "b": 3, "b.c": 3, "b.c[0].d": 4, "b.c[1].e": 5, "b.c[1].e[1].f": 5, "g": 7}
	got := FieldLines(doc)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("line of %s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}
