package access

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Scrubber replaces every known secret in text by Redacted, in every form a program is
// likely to print it: as it is, percent-encoded (any of its characters, hex in either
// case, a space also as +), escaped as in JSON, Go, JavaScript or Python strings (\" \\
// \uXXXX \xXX, up to two levels deep) and as HTML entities. A client that prints its
// environment, or the URL it built from it, is scrubbed as well as locklab's own
// messages. It is the one scrubber of everything a run writes or shows; the nil and the
// zero Scrubber change nothing. A Scrubber is immutable and safe for concurrent use.
type Scrubber struct {
	re *regexp.Regexp
	// hold is the most bytes one match can span: what a stream holds back until it
	// knows no secret goes on past it.
	hold int
	// lines: no secret holds a newline, so no match spans one, and a stream may let a
	// whole line go at once.
	lines bool
}

// NewScrubber scrubs the passwords of accesses and the environment's password
// (EnvPassword through lookupEnv; nil: none), whether or not a server uses it: every
// secret the harness knows of.
func NewScrubber(lookupEnv func(string) (string, bool), accesses ...Access) *Scrubber {
	var secrets []string
	for _, a := range accesses {
		secrets = append(secrets, a.Password)
	}
	if lookupEnv != nil {
		if pw, ok := lookupEnv(EnvPassword); ok {
			secrets = append(secrets, pw)
		}
	}
	return ScrubberOf(secrets...)
}

// ScrubberOf scrubs secrets; "" and Redacted are no secrets.
func ScrubberOf(secrets ...string) *Scrubber {
	var pats []string
	s := &Scrubber{lines: true}
	seen := map[string]bool{}
	for _, sec := range secrets {
		if sec == "" || sec == Redacted || seen[sec] {
			continue
		}
		seen[sec] = true
		var b strings.Builder
		// An invalid byte ranges as U+FFFD, which is also what regexp reads it as.
		for _, r := range sec {
			b.WriteString("(?:" + strings.Join(runeForms(r), "|") + ")")
		}
		pats = append(pats, b.String())
		s.hold = max(s.hold, maxFormLen*utf8.RuneCountInString(sec))
		s.lines = s.lines && !strings.ContainsAny(sec, "\n")
	}
	if len(pats) == 0 {
		return &Scrubber{}
	}
	s.re = regexp.MustCompile(strings.Join(pats, "|"))
	// Leftmost-longest: an escaped form is replaced whole, never cut after its first
	// byte (which would leave the rest of it, and break the JSON it sits in).
	s.re.Longest()
	return s
}

// maxFormLen bounds the bytes one character of a secret takes in any form runeForms
// matches (&#x0010FFFF; is the longest).
const maxFormLen = 16

// runeForms are the regular expressions of the forms of r.
func runeForms(r rune) []string {
	forms := []string{regexp.QuoteMeta(string(r))}
	var pct strings.Builder
	buf := make([]byte, utf8.UTFMax)
	for _, c := range buf[:utf8.EncodeRune(buf, r)] {
		pct.WriteString("%" + hexForm(fmt.Sprintf("%02x", c)))
	}
	forms = append(forms, pct.String())
	if r < 0x100 {
		forms = append(forms, `\\{1,3}x`+hexForm(fmt.Sprintf("%02x", r)))
	}
	if r <= 0xFFFF {
		forms = append(forms, `\\{1,3}u`+hexForm(fmt.Sprintf("%04x", r)))
	}
	forms = append(forms, fmt.Sprintf("&#0{0,3}%d;", r), "&#[xX]0{0,3}"+hexForm(fmt.Sprintf("%x", r))+";")
	switch r {
	case '"':
		forms = append(forms, `\\{1,3}"`, "&quot;")
	case '\'':
		forms = append(forms, `\\{1,3}'`, "&apos;")
	case '\\':
		forms = append(forms, `\\{2,4}`)
	case '/':
		forms = append(forms, `\\{1,3}/`)
	case '&':
		forms = append(forms, "&amp;")
	case '<':
		forms = append(forms, "&lt;")
	case '>':
		forms = append(forms, "&gt;")
	case ' ':
		forms = append(forms, `\+`)
	case '\n':
		forms = append(forms, `\\{1,3}n`)
	case '\t':
		forms = append(forms, `\\{1,3}t`)
	case '\r':
		forms = append(forms, `\\{1,3}r`)
	}
	return forms
}

// hexForm matches the hex digits h in either case.
func hexForm(h string) string {
	var b strings.Builder
	for _, c := range h {
		if c >= 'a' && c <= 'f' {
			b.WriteString("[" + string(c) + strings.ToUpper(string(c)) + "]")
		} else {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// Empty reports whether s knows no secret.
func (s *Scrubber) Empty() bool { return s == nil || s.re == nil }

// String is t with every secret Redacted.
func (s *Scrubber) String(t string) string {
	if s.Empty() {
		return t
	}
	return s.re.ReplaceAllLiteralString(t, Redacted)
}

// Strings scrubs each of ts in place and returns ts.
func (s *Scrubber) Strings(ts []string) []string {
	for i := range ts {
		ts[i] = s.String(ts[i])
	}
	return ts
}

// Bytes is b with every secret Redacted (b itself when it holds none).
func (s *Scrubber) Bytes(b []byte) []byte {
	if s.Empty() || !s.re.Match(b) {
		return b
	}
	return s.re.ReplaceAllLiteral(b, []byte(Redacted))
}

// Error is err with every secret Redacted from its message; nil stays nil, and an error
// whose message holds no secret is returned as it is. Unwrap keeps errors.Is and As
// working: whoever prints an error found in the chain must scrub its message too.
func (s *Scrubber) Error(err error) error {
	if err == nil || s.Empty() {
		return err
	}
	msg := err.Error()
	if clean := s.String(msg); clean != msg {
		return &scrubbedError{msg: clean, err: err}
	}
	return err
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// Writer is w behind s: what is written reaches w with every secret Redacted. A secret
// may arrive over several writes, so the writer holds back the end of what it got (the
// last unfinished line, or at most as much as a secret can span) until it knows no
// secret goes on past it; Flush lets that go. Safe for concurrent use.
func (s *Scrubber) Writer(w io.Writer) *ScrubWriter {
	return &ScrubWriter{s: s, w: w}
}

// ScrubWriter is Scrubber.Writer.
type ScrubWriter struct {
	s       *Scrubber
	w       io.Writer
	mu      sync.Mutex
	pending []byte
}

// Write takes all of b; its error is the underlying writer's.
func (sw *ScrubWriter) Write(b []byte) (int, error) {
	if sw.s.Empty() {
		return sw.w.Write(b)
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.pending = append(sw.pending, b...)
	cut := len(sw.pending) - sw.s.hold
	if sw.s.lines {
		cut = max(cut, strings.LastIndexByte(string(sw.pending), '\n')+1)
	}
	if cut <= 0 {
		return len(b), nil
	}
	return len(b), sw.emit(cut)
}

// emit writes the scrubbed text before cut, or before a match that cut would split,
// and keeps the rest. A secret that starts before cut ends before len(pending): it is
// among the matches.
func (sw *ScrubWriter) emit(cut int) error {
	matches := sw.s.re.FindAllIndex(sw.pending, -1)
	var out []byte
	last := 0
	for _, m := range matches {
		if m[0] >= cut {
			break
		}
		if m[1] > cut {
			cut = m[0]
			break
		}
		out = append(append(out, sw.pending[last:m[0]]...), Redacted...)
		last = m[1]
	}
	out = append(out, sw.pending[last:cut]...)
	sw.pending = slices.Delete(sw.pending, 0, cut)
	if len(out) == 0 {
		return nil
	}
	_, err := sw.w.Write(out)
	return err
}

// Flush writes what is held back, scrubbed: call it when the stream ended.
func (sw *ScrubWriter) Flush() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if len(sw.pending) == 0 {
		return nil
	}
	return sw.emit(len(sw.pending))
}
