package mdblock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const begin, end = "<!-- matrix:begin -->", "<!-- matrix:end -->"

func TestReplace(t *testing.T) {
	doc := "# Title\n\nBefore.\n\n<!-- matrix:begin -->\nold table\nmore\n<!-- matrix:end -->\n\nAfter.\n"
	got, err := Replace([]byte(doc), "| new | table |\n", "README.md", begin, end)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\nBefore.\n\n<!-- matrix:begin -->\n\n| new | table |\n\n<!-- matrix:end -->\n\nAfter.\n"
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// Replacing again changes nothing but the table.
	again, err := Replace(got, "| new | table |\n", "README.md", begin, end)
	if err != nil || string(again) != want {
		t.Fatalf("second replacement: %v\n%s", err, again)
	}
	for _, c := range []struct{ doc, want string }{
		{"no markers\n", "docs/README.md: no markers"},
		{"<!-- matrix:begin -->\n", "docs/README.md: no line <!-- matrix:end --> after <!-- matrix:begin --> (line 1)"},
		{"x\n<!-- matrix:end -->\n", "docs/README.md: no line <!-- matrix:begin --> before <!-- matrix:end --> (line 2)"},
		{"<!-- matrix:end -->\n<!-- matrix:begin -->\n", "comes before"},
		{"<!-- matrix:begin -->\n<!-- matrix:begin -->\n<!-- matrix:end -->\n", "appears twice (lines 1 and 2)"},
	} {
		if _, err := Replace([]byte(c.doc), "t", "docs/README.md", begin, end); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.doc, err, c.want)
		}
	}
}

func TestUpdateKeepsTheMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte(begin+"\n"+end+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Check(path, begin, end); err != nil {
		t.Fatal(err)
	}
	if err := Update(path, "table", begin, end); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if fi, _ := os.Stat(path); string(got) != begin+"\n\ntable\n\n"+end+"\n" || fi.Mode().Perm() != 0o600 {
		t.Errorf("updated to %q, mode %v", got, fi.Mode().Perm())
	}
	if err := Update(filepath.Join(t.TempDir(), "missing.md"), "t", begin, end); err == nil || !strings.Contains(err.Error(), "missing.md") {
		t.Errorf("updating a missing file: %v", err)
	}
}
