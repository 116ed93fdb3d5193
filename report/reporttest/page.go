// Package reporttest is the test helpers of report and its packages: a strict parse of a
// page with its links checked, files touched into a directory, and sample results (a
// campaign's summary, an assessment) as data.
package reporttest

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/report/page"
)

// Hostile is a name that must reach the page as text, never as markup.
const Hostile = `<script>alert("x")</script>&`

// Node is an element of a parsed page.
type Node struct {
	Name     string
	Attr     map[string]string
	Children []*Node
	Text     strings.Builder // all text inside, children's included
}

// ParsePage parses an index page strictly, as XML: every element closed and nested, every
// attribute quoted, nothing unescaped. The pages are written so that this holds.
func ParsePage(t *testing.T, data []byte) *Node {
	t.Helper()
	if bytes.Contains(bytes.ToLower(data), []byte("<script")) {
		t.Errorf("page has a <script> element:\n%s", data)
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	root := &Node{Name: "#document", Attr: map[string]string{}}
	stack := []*Node{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("page is not well-formed: %v\n%s", err, data)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &Node{Name: tok.Name.Local, Attr: map[string]string{}}
			for _, a := range tok.Attr {
				n.Attr[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.Children = append(top.Children, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			for _, n := range stack {
				n.Text.Write(tok)
			}
		}
	}
	if len(stack) != 1 {
		t.Fatalf("page has %d unclosed elements", len(stack)-1)
	}
	ids := map[string]bool{}
	for _, n := range root.All(func(n *Node) bool { return n.Attr["id"] != "" }) {
		if ids[n.Attr["id"]] {
			t.Errorf("id %q used twice", n.Attr["id"])
		}
		ids[n.Attr["id"]] = true
	}
	return root
}

// All is every element under n (n excluded) that match accepts, in document order.
func (n *Node) All(match func(*Node) bool) []*Node {
	var out []*Node
	for _, c := range n.Children {
		if match(c) {
			out = append(out, c)
		}
		out = append(out, c.All(match)...)
	}
	return out
}

// HasClass says whether n has the class.
func (n *Node) HasClass(c string) bool { return slices.Contains(strings.Fields(n.Attr["class"]), c) }

// ByID is the element with the id, or fails the test.
func (n *Node) ByID(t *testing.T, id string) *Node {
	t.Helper()
	found := n.All(func(c *Node) bool { return c.Attr["id"] == id })
	if len(found) != 1 {
		t.Fatalf("%d elements with id %q", len(found), id)
	}
	return found[0]
}

// Hrefs is the href of every link of class c under n, in document order.
func (n *Node) Hrefs(c string) []string {
	var out []string
	for _, a := range n.All(func(x *Node) bool { return x.Name == "a" && x.HasClass(c) }) {
		out = append(out, a.Attr["href"])
	}
	return out
}

// Rows is the tr elements under n that have the attribute.
func (n *Node) Rows(attr string) []*Node {
	return n.All(func(x *Node) bool { return x.Name == "tr" && x.Attr[attr] != "" })
}

// ReadIndex parses dir's index.html and checks that every link on it resolves.
func ReadIndex(t *testing.T, dir string) *Node {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, page.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	root := ParsePage(t, data)
	AssertLinksResolve(t, dir, root)
	return root
}

// AssertLinksResolve checks that every link of the page is relative and leads to a file
// under (or beside) dir.
func AssertLinksResolve(t *testing.T, dir string, root *Node) {
	t.Helper()
	for _, a := range root.All(func(x *Node) bool { return x.Name == "a" }) {
		href := a.Attr["href"]
		u, err := url.Parse(href)
		if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(href, "/") || href == "" {
			t.Errorf("link %q is not a relative path", href)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(u.Path))); err != nil {
			t.Errorf("link %q leads nowhere: %v", href, err)
		}
	}
}

// Touch creates files (paths relative to dir, forward slashes).
func Touch(t *testing.T, dir string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
