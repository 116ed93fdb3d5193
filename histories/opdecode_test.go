package histories

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// opLines are the operation lines of sampleHistory as WriteHistory writes them.
func opLines(t testing.TB) []string {
	var buf bytes.Buffer
	if err := WriteHistory(&buf, sampleHistory()); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(buf.String()), "\n")[1:]
}

// TestOpDecoderReadsWhatWriteHistoryWrites: the fast path takes every line WriteHistory
// writes (it would be pointless otherwise) and reads what encoding/json reads.
func TestOpDecoderReadsWhatWriteHistoryWrites(t *testing.T) {
	d := newOpDecoder()
	for _, line := range opLines(t) {
		var fast, slow Op
		if !d.decode([]byte(line), &fast) {
			t.Fatalf("declined a line WriteHistory wrote: %s", line)
		}
		if err := decodeStrict([]byte(line), &slow); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s:\nfast %+v\nslow %+v", line, fast, slow)
		}
	}
}

// TestOpDecoderDeclinesWhatItDoesNotKnow: each of these must go to encoding/json, which
// accepts some (escapes, names in other case, null) and rejects others with its message.
func TestOpDecoderDeclinesWhatItDoesNotKnow(t *testing.T) {
	for _, line := range []string{
		`{"key":"k\u00e9"}`, `{"key":"é"}`, `{"Process":1}`, `{"process":1.5}`, `{"process":1e3}`,
		`{"process":01}`, `{"process":99999999999999999999}`, `{"input":null}`, `{"bogus":1}`,
		`{"process":1} {}`, `{"process":1} }`, `{"process":1}]`, `{"process":1,}`, `{"output":{"nodes":[1,]}}`, `{"key":"a` + "\t" + `"}`,
	} {
		var op Op
		if newOpDecoder().decode([]byte(line), &op) {
			t.Errorf("took %s as %+v", line, op)
		}
	}
}

// FuzzOpDecoder: whatever the fast path takes, encoding/json reads the same way.
func FuzzOpDecoder(f *testing.F) {
	for _, line := range opLines(f) {
		f.Add([]byte(line))
	}
	f.Add([]byte(` { "process" : -3 , "output" : { "nodes" : [ ] } , "input":{"ttl":0} } `))
	f.Add([]byte(`{"call":9223372036854775807,"return":-9223372036854775807}`))
	f.Add([]byte(`{"process":1} }`))
	f.Add([]byte(`{"kind":"acquire","output":{"granted":1000000000,"validity":5}}`))
	f.Add([]byte(`{"process":1}]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast, slow Op
		if !newOpDecoder().decode(line, &fast) {
			return
		}
		if err := decodeStrict(line, &slow); err != nil {
			t.Fatalf("fast path took %q, encoding/json refuses it: %v", line, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", line, fast, slow)
		}
	})
}
