package histories

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/locklab/locklab/internal/jsonfile"
	"io"
	"os"
	"path/filepath"
)

// FormatVersion is the version of the JSON Lines files written here. Readers refuse
// other versions rather than guess.
const FormatVersion = 1

// File names inside a run directory.
const (
	HistoryFile = "history.jsonl"
	FaultsFile  = "faults.jsonl"
)

// header is the first line of every file: what the file is and in which version.
type header struct {
	Locklab string `json:"locklab"` // "history" or "faults"
	Version int    `json:"version"`
	Meta    *Meta  `json:"meta,omitempty"`
}

// maxLine bounds one line so that a corrupt file cannot make the reader allocate without end.
const maxLine = 1 << 20

// WriteHistory writes the header with h.Meta and one operation per line.
func WriteHistory(w io.Writer, h History) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	meta := h.Meta
	if err := enc.Encode(header{Locklab: "history", Version: FormatVersion, Meta: &meta}); err != nil {
		return fmt.Errorf("write history header: %w", err)
	}
	for i, op := range h.Ops {
		if err := enc.Encode(op); err != nil {
			return fmt.Errorf("write history operation %d: %w", i, err)
		}
	}
	return bw.Flush()
}

// WriteFaults writes the fault windows, one per line, after a header.
func WriteFaults(w io.Writer, faults []FaultWindow) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(header{Locklab: "faults", Version: FormatVersion}); err != nil {
		return fmt.Errorf("write faults header: %w", err)
	}
	for i, f := range faults {
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("write fault %d: %w", i, err)
		}
	}
	return bw.Flush()
}

// ParseError says where a file is malformed.
type ParseError struct {
	File   string
	Line   int
	Reason string
	cause  error // what the reader was told by its caller, if that is why
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason) }

// Unwrap is the caller's error that stopped the reading, if any.
func (e *ParseError) Unwrap() error { return e.cause }

// ReadHistory reads operations written by WriteHistory; name is used in errors only.
// Every operation is validated: a malformed file is rejected with its line and reason.
func ReadHistory(r io.Reader, name string) (Meta, []Op, error) {
	return readHistory(r, name, 0)
}

// readHistory is ReadHistory with room made for capacity operations at once, so that a
// history of a million operations is not copied as its slice grows.
func readHistory(r io.Reader, name string, capacity int) (Meta, []Op, error) {
	var meta Meta
	ops := make([]Op, 0, capacity)
	err := scanHistory(r, name, func(m Meta) error { meta = m; return nil }, func() *Op {
		// Decoded in place: an Op on its own would escape to the heap, once per line.
		ops = append(ops, Op{})
		return &ops[len(ops)-1]
	}, func(ok bool) error {
		if !ok {
			ops = ops[:len(ops)-1]
		}
		return nil
	})
	return meta, ops, err
}

// ScanHistory reads a file written by WriteHistory one operation at a time, for
// histories too large to hold: onMeta gets the header's Meta, then onOp each operation,
// validated, in the file's order. An error from either stops the reading and is
// returned with the file's name and line.
func ScanHistory(r io.Reader, name string, onMeta func(Meta) error, onOp func(Op) error) error {
	var op Op
	return scanHistory(r, name, onMeta, func() *Op { op = Op{}; return &op }, func(ok bool) error {
		if !ok {
			return nil
		}
		return onOp(op)
	})
}

// scanHistory reads a history file: next gives the Op to decode a line into, done says
// whether it holds a valid operation (the error is scanHistory's own when not).
func scanHistory(r io.Reader, name string, onMeta func(Meta) error, next func() *Op, done func(ok bool) error) error {
	dec := newOpDecoder()
	return readLines(r, name, "history", func(h header) error {
		if h.Meta == nil {
			return errors.New(`history header has no "meta"`)
		}
		meta := *h.Meta
		switch meta.Fencing {
		case "off", "writes", "full":
		default:
			return fmt.Errorf("unknown fencing mode %q in header (want off, writes or full)", meta.Fencing)
		}
		if meta.TTL < 0 {
			return fmt.Errorf("negative ttl %s in header", meta.TTL)
		}
		if meta.ExpiryLag < 0 {
			return fmt.Errorf("negative expiry_lag %s in header", meta.ExpiryLag)
		}
		return onMeta(meta)
	}, func(line []byte) error {
		op := next()
		if !dec.decode(line, op) {
			var slow Op
			if err := decodeStrict(line, &slow); err != nil {
				_ = done(false)
				return err
			}
			*op = slow
		}
		if err := op.Validate(); err != nil {
			_ = done(false)
			return fmt.Errorf("invalid operation: %w", err)
		}
		return done(true)
	})
}

// ReadFaults reads fault windows written by WriteFaults.
func ReadFaults(r io.Reader, name string) ([]FaultWindow, error) {
	var faults []FaultWindow
	err := readLines(r, name, "faults", func(header) error { return nil }, func(line []byte) error {
		var f FaultWindow
		if err := decodeStrict(line, &f); err != nil {
			return err
		}
		if err := f.Validate(); err != nil {
			return fmt.Errorf("invalid fault window: %w", err)
		}
		faults = append(faults, f)
		return nil
	})
	return faults, err
}

func readLines(r io.Reader, name, kind string, onHeader func(header) error, onLine func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	n := 0
	seenHeader := false
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !seenHeader {
			var h header
			if err := decodeStrict(line, &h); err != nil {
				return &ParseError{File: name, Line: n, Reason: "bad header: " + err.Error()}
			}
			if h.Locklab != kind {
				return &ParseError{File: name, Line: n, Reason: fmt.Sprintf("not a locklab %s file (header says %q)", kind, h.Locklab)}
			}
			if h.Version != FormatVersion {
				return &ParseError{File: name, Line: n, Reason: fmt.Sprintf("format version %d, this locklab reads version %d", h.Version, FormatVersion)}
			}
			if err := onHeader(h); err != nil {
				return &ParseError{File: name, Line: n, Reason: err.Error(), cause: err}
			}
			seenHeader = true
			continue
		}
		if err := onLine(line); err != nil {
			return &ParseError{File: name, Line: n, Reason: err.Error(), cause: err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &ParseError{File: name, Line: n + 1, Reason: fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return fmt.Errorf("read %s: %w", name, err)
	}
	if !seenHeader {
		return &ParseError{File: name, Line: n, Reason: fmt.Sprintf("empty file: no locklab %s header", kind)}
	}
	return nil
}

// decodeStrict decodes one JSON value, refusing unknown fields and trailing data, so that
// a typo in a hand-edited file is an error rather than a silently dropped field.
func decodeStrict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad JSON: %w", err)
	}
	// dec.More says false before a stray '}' or ']', so the rest of the line is looked
	// at itself: anything but spaces after the value is an error.
	if rest := jsonfile.Rest(line, dec); len(rest) > 0 {
		return fmt.Errorf("bad JSON: more than one value on the line (%.20q after it)", rest)
	}
	return nil
}

// Save writes history.jsonl and faults.jsonl into dir.
func Save(dir string, h History) error {
	if err := writeFile(filepath.Join(dir, HistoryFile), func(w io.Writer) error { return WriteHistory(w, h) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, FaultsFile), func(w io.Writer) error { return WriteFaults(w, h.Faults) })
}

// SaveFaults writes faults.jsonl alone into dir: a long run's history is in segments.
func SaveFaults(dir string, faults []FaultWindow) error {
	return writeFile(filepath.Join(dir, FaultsFile), func(w io.Writer) error { return WriteFaults(w, faults) })
}

// Load reads a history from a run directory (history.jsonl, or a long run's segments, and
// faults.jsonl when present) or from a history file.
func Load(path string) (History, error) {
	histPath, faultsPath, segs, err := locate(path)
	if err != nil {
		return History{}, err
	}
	if len(segs) > 0 {
		return loadSegments(segs, faultsPath)
	}
	lines, err := countLines(histPath)
	if err != nil {
		return History{}, err
	}
	var h History
	if err := readFile(histPath, func(r io.Reader) (err error) {
		h.Meta, h.Ops, err = readHistory(r, histPath, lines)
		return err
	}); err != nil {
		return History{}, err
	}
	h.Faults, err = LoadFaults(faultsPath)
	return h, err
}

// Scan reads the history at path (a run directory with history.jsonl or a long run's
// segments, or a history file) one operation at a time, as ScanHistory does, for a
// history too large to hold, and returns its fault windows (faults.jsonl beside it).
func Scan(path string, onMeta func(Meta) error, onOp func(Op) error) ([]FaultWindow, error) {
	histPath, faultsPath, segs, err := locate(path)
	if err != nil {
		return nil, err
	}
	if len(segs) > 0 {
		err = ScanSegments(segs, onMeta, onOp)
	} else {
		err = readFile(histPath, func(r io.Reader) error { return ScanHistory(r, histPath, onMeta, onOp) })
	}
	if err != nil {
		return nil, err
	}
	return LoadFaults(faultsPath)
}

// Head is what a history at path says before its operations: its Meta and its fault
// windows, read without its operations.
func Head(path string) (Meta, []FaultWindow, error) {
	histPath, faultsPath, segs, err := locate(path)
	if err != nil {
		return Meta{}, nil, err
	}
	var meta Meta
	stop := errors.New("stop")
	onMeta := func(m Meta) error { meta = m; return stop }
	if len(segs) > 0 {
		err = ScanSegments(segs[:1], onMeta, nil)
	} else {
		err = readFile(histPath, func(r io.Reader) error { return ScanHistory(r, histPath, onMeta, nil) })
	}
	if !errors.Is(err, stop) {
		if err == nil {
			err = fmt.Errorf("%s: no history header", path)
		}
		return Meta{}, nil, err
	}
	faults, err := LoadFaults(faultsPath)
	return meta, faults, err
}

// Size is how large the history at path is on disk (its segments together) and whether
// it is a long run's segments.
func Size(path string) (int64, bool, error) {
	histPath, _, segs, err := locate(path)
	if err != nil {
		return 0, false, err
	}
	if len(segs) == 0 {
		segs = []string{histPath}
	}
	var n int64
	for _, p := range segs {
		st, err := os.Stat(p)
		if err != nil {
			return 0, false, fmt.Errorf("history: %w", err)
		}
		n += st.Size()
	}
	return n, len(segs) > 0 && segs[0] != histPath, nil
}

// locate finds a history's files: the history file or the segments (a run directory
// without history.jsonl), and the faults file ("" for none).
func locate(path string) (histPath, faultsPath string, segs []string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", "", nil, fmt.Errorf("load history: %w", err)
	}
	if !st.IsDir() {
		return path, filepath.Join(filepath.Dir(path), FaultsFile), nil, nil
	}
	histPath, faultsPath = filepath.Join(path, HistoryFile), filepath.Join(path, FaultsFile)
	if _, err := os.Stat(histPath); errors.Is(err, os.ErrNotExist) {
		if segs, err = Segments(path); err != nil {
			return "", "", nil, err
		}
	}
	return histPath, faultsPath, segs, nil
}

// loadSegments reads a long run's segments whole, and its faults.
func loadSegments(segs []string, faultsPath string) (History, error) {
	var h History
	err := ScanSegments(segs, func(m Meta) error { h.Meta = m; return nil }, func(op Op) error {
		h.Ops = append(h.Ops, op)
		return nil
	})
	if err != nil {
		return History{}, err
	}
	h.Faults, err = LoadFaults(faultsPath)
	return h, err
}

// LoadFaults reads a faults file; a missing one holds no fault.
func LoadFaults(path string) ([]FaultWindow, error) {
	var faults []FaultWindow
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	err := readFile(path, func(r io.Reader) (err error) {
		faults, err = ReadFaults(r, path)
		return err
	})
	return faults, err
}

// countLines counts the lines of the file at path (a last line without a newline too):
// at most one more than its operations. Reading a file twice costs far less than
// growing a slice of a million operations by copying.
func countLines(path string) (int, error) {
	n, last := 0, byte('\n')
	err := readFile(path, func(r io.Reader) error {
		buf := make([]byte, 256<<10)
		for {
			k, err := r.Read(buf)
			n += bytes.Count(buf[:k], []byte{'\n'})
			if k > 0 {
				last = buf[k-1]
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
		}
	})
	if last != '\n' {
		n++
	}
	return n, err
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

func readFile(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	return read(f)
}
