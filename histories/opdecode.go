package histories

import "time"

// opDecoder reads the operation lines of a history file without encoding/json's
// reflection: at a million operations reflection is most of a check's time, and a
// string allocated per field is most of its memory. It reads the shape WriteHistory
// writes (and any order of fields, any JSON spacing); on anything else (escapes in
// strings, bytes outside ASCII, floats, null, unknown or differently cased names) it
// declines, and the caller falls back to decodeStrict, whose verdict and error message
// stand. So the two can never disagree on what a line means: FuzzOpDecoder holds them
// to it.
type opDecoder struct {
	// interned keeps one copy of each key and error text: a history repeats a few of
	// them a million times. Bounded, so that a file of all-distinct errors cannot grow it
	// without end (beyond the bound strings are allocated as usual).
	interned map[string]string
}

// maxInterned bounds opDecoder.interned.
const maxInterned = 1 << 16

func newOpDecoder() *opDecoder { return &opDecoder{interned: make(map[string]string)} }

// decode parses line into op; ok false means "not the plain shape: ask encoding/json".
func (d *opDecoder) decode(line []byte, op *Op) (ok bool) {
	p := parser{b: line}
	*op = Op{}
	ok = p.object(func(name []byte) bool {
		switch string(name) {
		case "process":
			return p.int(&op.Process)
		case "client":
			return p.int(&op.Client)
		case "key":
			return p.interned(d, &op.Key)
		case "kind":
			s, ok := p.str()
			op.Kind = kindOf(s)
			return ok
		case "outcome":
			s, ok := p.str()
			op.Outcome = outcomeOf(s)
			return ok
		case "call":
			return p.int64(&op.Call)
		case "return":
			return p.int64(&op.Return)
		case "input":
			return p.object(func(name []byte) bool { return d.inputField(&p, name, &op.Input) })
		case "output":
			return p.object(func(name []byte) bool { return d.outputField(&p, name, &op.Output) })
		}
		return false
	})
	p.space()
	return ok && p.i == len(p.b)
}

func (d *opDecoder) inputField(p *parser, name []byte, in *Input) bool {
	switch string(name) {
	case "ttl":
		return p.duration(&in.TTL)
	case "token":
		s, ok := p.str()
		in.Token = string(s)
		return ok
	case "fence":
		return p.int64(&in.Fence)
	case "value":
		return p.int64(&in.Value)
	case "base":
		return p.int64(&in.Base)
	}
	return false
}

func (d *opDecoder) outputField(p *parser, name []byte, out *Output) bool {
	switch string(name) {
	case "token":
		s, ok := p.str()
		out.Token = string(s)
		return ok
	case "fence":
		return p.int64(&out.Fence)
	case "value":
		return p.int64(&out.Value)
	case "validity":
		return p.duration(&out.Validity)
	case "granted":
		return p.duration(&out.Granted)
	case "error":
		return p.interned(d, &out.Error)
	case "nodes":
		return p.ints(&out.Nodes)
	}
	return false
}

// kindOf and outcomeOf return the package's constants for the known names, so that a
// million operations share their bytes; anything else is kept as read, for Validate to
// reject with its name.
func kindOf(b []byte) Kind {
	for _, k := range [...]Kind{Acquire, Release, Extend, Read, Write, Crash, Enqueue, Deliver, Skip, Effect, Ack, Redeliver, Tally} {
		if string(k) == string(b) {
			return k
		}
	}
	return Kind(b)
}

func outcomeOf(b []byte) Outcome {
	for _, o := range [...]Outcome{OK, Fail, Unknown} {
		if string(o) == string(b) {
			return o
		}
	}
	return Outcome(b)
}

// parser is a cursor over one line of JSON, for the plain subset opDecoder reads.
type parser struct {
	b []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) byte(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// object reads {"name": value, ...}, calling field for each name with the cursor before
// its value.
func (p *parser) object(field func(name []byte) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	for {
		name, ok := p.str()
		if !ok || !p.byte(':') || !field(name) {
			return false
		}
		if p.byte('}') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// str reads a string of printable ASCII without escapes; the bytes alias the line.
func (p *parser) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for ; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

func (p *parser) interned(d *opDecoder, dst *string) bool {
	s, ok := p.str()
	if !ok {
		return false
	}
	if v, found := d.interned[string(s)]; found {
		*dst = v
		return true
	}
	*dst = string(s)
	if len(d.interned) < maxInterned {
		d.interned[*dst] = *dst
	}
	return true
}

// int64 reads an integer as JSON writes it (no leading zeros, no fraction or exponent);
// one that does not fit is left to encoding/json, for its error.
func (p *parser) int64(dst *int64) bool {
	p.space()
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	digits := p.i
	var v uint64
	for ; p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9'; p.i++ {
		if v > (1<<63-1)/10 {
			return false
		}
		v = v*10 + uint64(p.b[p.i]-'0')
	}
	switch n := p.i - digits; {
	case n == 0, n > 1 && p.b[digits] == '0', v > 1<<63-1:
		return false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return false
	}
	*dst = int64(v)
	if neg {
		*dst = -*dst
	}
	return true
}

func (p *parser) int(dst *int) bool {
	var v int64
	if !p.int64(&v) || int64(int(v)) != v {
		return false
	}
	*dst = int(v)
	return true
}

func (p *parser) duration(dst *time.Duration) bool {
	return p.int64((*int64)(dst))
}

// ints reads an array of integers.
func (p *parser) ints(dst *[]int) bool {
	if !p.byte('[') {
		return false
	}
	*dst = []int{} // as encoding/json: an empty array is an empty slice, not nil
	if p.byte(']') {
		return true
	}
	for {
		var v int
		if !p.int(&v) {
			return false
		}
		*dst = append(*dst, v)
		if p.byte(']') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}
