package access_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster/access"
)

// awkward is a password with every character a URL, a CSV reader, JSON or HTML treats
// specially.
const awkward = `Tr0ub,4"d@r%2F:x y/z\&<é>`

// printedForms are ways a program prints a password: as it is, in URLs (Go's escapes,
// JavaScript's encodeURIComponent with upper- or lower-case hex), quoted in Go, JSON
// (also JSON inside JSON), JavaScript and Python strings, and HTML-escaped.
func printedForms(t *testing.T, pw string) []string {
	t.Helper()
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	encodeURIComponent := func(s string, hex string) string {
		var b strings.Builder
		for _, c := range []byte(s) {
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%"+hex, c)
			}
		}
		return b.String()
	}
	return []string{
		pw,
		url.QueryEscape(pw),
		url.PathEscape(pw),
		url.UserPassword("alice", pw).String(),
		(&url.URL{Scheme: "redis", User: url.UserPassword("alice", pw), Host: "h:1"}).String(),
		encodeURIComponent(pw, "%02X"),
		encodeURIComponent(pw, "%02x"),
		strconv.Quote(pw),
		strconv.QuoteToASCII(pw),
		jsonOf(pw),
		jsonOf(jsonOf(pw)),
		jsonOf(map[string]string{"LOCKLAB_REDIS_PASSWORD": pw}),
		html.EscapeString(pw),
		`'` + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + `'`, // JavaScript, Python
	}
}

// longestPiece is the longest run of letters and digits in pw: a recognisable piece.
func longestPiece(pw string) string {
	piece := ""
	for _, f := range strings.FieldsFunc(pw, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		if len(f) > len(piece) {
			piece = f
		}
	}
	return piece
}

func TestScrubberForms(t *testing.T) {
	s := access.ScrubberOf(awkward)
	piece := longestPiece(awkward)
	for _, form := range printedForms(t, awkward) {
		text := "before " + form + " after"
		got := s.String(text)
		if strings.Contains(got, piece) || !strings.Contains(got, access.Redacted) {
			t.Errorf("form %s: scrubbed to %s, which shows %q or redacts nothing", form, got, piece)
		}
		if !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") {
			t.Errorf("form %s: scrubbed to %s, which lost what surrounds it", form, got)
		}
	}
	// Scrubbed JSON stays JSON: an escape is replaced whole, also at a secret's end.
	for _, pw := range []string{awkward, `ends\`} {
		doc, _ := json.Marshal(map[string]string{"error": "dial redis://alice:" + pw + "@h:1: refused " + pw})
		var back map[string]string
		if err := json.Unmarshal(access.ScrubberOf(pw).Bytes(doc), &back); err != nil || strings.Contains(back["error"], pw) {
			t.Errorf("scrubbed JSON %s: %v, %q", access.ScrubberOf(pw).Bytes(doc), err, back["error"])
		}
	}
}

func TestScrubberKnowsTheEnvironmentsPassword(t *testing.T) {
	s := access.NewScrubber(env(map[string]string{access.EnvPassword: "from-env-7"}), access.Access{Password: "from-url-8"})
	got := s.String("from-env-7 from-url-8 other")
	if got != "xxxxx xxxxx other" {
		t.Errorf("scrubbed to %q", got)
	}
	for _, empty := range []*access.Scrubber{nil, access.NewScrubber(nil), access.ScrubberOf("", access.Redacted)} {
		if !empty.Empty() || empty.String("a xxxxx b") != "a xxxxx b" {
			t.Errorf("a scrubber without secrets changes text")
		}
	}
}

func TestScrubberErrorKeepsTheChain(t *testing.T) {
	s := access.ScrubberOf("hunter2")
	err := s.Error(fmt.Errorf("auth hunter2: %w", fs.ErrPermission))
	if err.Error() != "auth xxxxx: permission denied" || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Error = %q (Is ErrPermission: %v)", err, errors.Is(err, fs.ErrPermission))
	}
	plain := errors.New("nothing secret")
	if s.Error(plain) != plain || s.Error(nil) != nil {
		t.Error("Error changed an error without a secret")
	}
}

// TestScrubWriterChunked: however a stream is cut into writes, what comes out is the
// whole text scrubbed, and only the end of an unfinished line waits for Flush.
func TestScrubWriterChunked(t *testing.T) {
	s := access.ScrubberOf(awkward, "short")
	var text strings.Builder
	for i, form := range printedForms(t, awkward) {
		fmt.Fprintf(&text, "line %d: %s short\n", i, form)
	}
	text.WriteString("no newline at the end: " + awkward)
	whole := text.String()
	want := s.String(whole)
	for _, size := range []int{1, 2, 3, 5, 7, 13, 64, 4096} {
		var out bytes.Buffer
		w := s.Writer(&out)
		for i := 0; i < len(whole); i += size {
			if _, err := w.Write([]byte(whole[i:min(i+size, len(whole))])); err != nil {
				t.Fatal(err)
			}
		}
		if beforeFlush := out.String(); !strings.HasPrefix(want, beforeFlush) || !strings.Contains(beforeFlush, "line 13") {
			t.Errorf("writes of %d bytes: before Flush %q, want a prefix of the scrubbed text with every finished line", size, beforeFlush)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("writes of %d bytes came out as\n%s\nwant\n%s", size, out.String(), want)
		}
	}
}

func TestRedactURLHidesUnlikelyUsers(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://alice:s3cr,et@h:1":   "redis://alice:xxxxx@h:1",
		"redis://p@ss@h:1":            "redis://xxxxx@h:1", // a password typed without its colon
		`redis://a"b:c@h:1`:           "redis://xxxxx@h:1",
		"redis://al%20ice@h:1":        "redis://al%20ice@h:1",
		"redis://alice@h:1":           "redis://alice@h:1",
		"h:1":                         "h:1",
		"redis://u:p@h1:1,redis://u:": "redis://u:xxxxx@h1:1,redis://u:",
	} {
		if got := access.RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
	if got := access.RedactCommand([]string{"node", "c.js", "--url=redis://u:s3cret@h:1"}); got != "node c.js --url=redis://u:xxxxx@h:1" {
		t.Errorf("RedactCommand = %q", got)
	}
}

// BenchmarkScrubberString is the cost of scrubbing one recorded error or token (a run on
// external servers pays it once per distinct string).
func BenchmarkScrubberString(b *testing.B) {
	s := access.ScrubberOf(awkward)
	text := "dial tcp 127.0.0.1:6379: connect: connection refused (lease 7f3a9c2e41d04b6f)"
	for b.Loop() {
		s.String(text)
	}
}
