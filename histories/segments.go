package histories

import (
	"bufio"
	"compress/gzip"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// A long run's history is written as it goes, in segments: gzip-compressed history files
// (each with its header) of at most a fixed number of operations, named in order, the
// operations in call order across all of them. Reading the segments one after the other
// is reading the history.

// SegmentGlob matches the segment files of a run directory; their names sort in order.
const SegmentGlob = "history-*.jsonl.gz"

func segmentName(n int) string { return fmt.Sprintf("history-%06d.jsonl.gz", n) }

// SegmentWriter writes a history into segments of a directory.
type SegmentWriter struct {
	dir     string
	meta    Meta
	perFile int
	n       int // segments opened
	inFile  int // operations in the open one
	f       *os.File
	gz      *gzip.Writer
	bw      *bufio.Writer
	enc     *json.Encoder
	ops     int64
	bytes   int64 // compressed bytes of the segments closed
}

// NewSegmentWriter writes segments of perFile operations into dir, each with meta.
func NewSegmentWriter(dir string, meta Meta, perFile int) (*SegmentWriter, error) {
	if perFile < 1 {
		return nil, fmt.Errorf("history segments: %d operations per segment: want at least 1", perFile)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("history segments: %w", err)
	}
	return &SegmentWriter{dir: dir, meta: meta, perFile: perFile}, nil
}

// Write appends op, which must not be called before the operation written last.
func (w *SegmentWriter) Write(op Op) error {
	if w.f == nil || w.inFile == w.perFile {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	if err := w.enc.Encode(op); err != nil {
		return fmt.Errorf("history segment %s: %w", w.f.Name(), err)
	}
	w.inFile++
	w.ops++
	return nil
}

// Ops is how many operations were written, Bytes the compressed size of the segments
// closed so far.
func (w *SegmentWriter) Ops() int64   { return w.ops }
func (w *SegmentWriter) Bytes() int64 { return w.bytes }

func (w *SegmentWriter) rotate() error {
	if err := w.closeFile(); err != nil {
		return err
	}
	w.n++
	f, err := os.Create(filepath.Join(w.dir, segmentName(w.n)))
	if err != nil {
		return fmt.Errorf("history segments: %w", err)
	}
	w.f, w.gz = f, gzip.NewWriter(f)
	w.bw = bufio.NewWriterSize(w.gz, 64<<10)
	w.enc, w.inFile = json.NewEncoder(w.bw), 0
	meta := w.meta
	if err := w.enc.Encode(header{Locklab: "history", Version: FormatVersion, Meta: &meta}); err != nil {
		return fmt.Errorf("history segment %s: %w", f.Name(), err)
	}
	return nil
}

func (w *SegmentWriter) closeFile() error {
	if w.f == nil {
		return nil
	}
	err := errors.Join(w.bw.Flush(), w.gz.Close())
	if st, serr := w.f.Stat(); serr == nil {
		w.bytes += st.Size()
	}
	err = errors.Join(err, w.f.Close())
	w.f = nil
	if err != nil {
		return fmt.Errorf("history segments: %w", err)
	}
	return nil
}

// Close ends the last segment. A history of no operation still gets one segment: its
// header says what run it is.
func (w *SegmentWriter) Close() error {
	if w.f == nil {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	return w.closeFile()
}

// Segments lists the segment files of dir in order (none: nil).
func Segments(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, SegmentGlob))
	if err != nil {
		return nil, fmt.Errorf("history segments: %w", err)
	}
	slices.Sort(paths)
	return paths, nil
}

// ScanSegments reads the segments paths one after the other as one history (ScanHistory):
// onMeta gets the first segment's Meta; every later one must carry the same.
func ScanSegments(paths []string, onMeta func(Meta) error, onOp func(Op) error) error {
	var first *Meta
	for _, path := range paths {
		if err := scanSegment(path, func(m Meta) error {
			if first == nil {
				first = &m
				return onMeta(m)
			}
			if fmt.Sprint(m) != fmt.Sprint(*first) {
				return fmt.Errorf("meta differs from the first segment's (%s)", filepath.Base(paths[0]))
			}
			return nil
		}, onOp); err != nil {
			return err
		}
	}
	return nil
}

func scanSegment(path string, onMeta func(Meta) error, onOp func(Op) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("history segments: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("history segment %s: %w", path, err)
	}
	defer gz.Close()
	return ScanHistory(io.Reader(gz), path, onMeta, onOp)
}

// Orderer takes operations as they are recorded (in the order they return, from many
// goroutines) and hands them out in call order, the order of SortOps, up to a watermark
// (Recorder.Watermark): what a reader of the history in call order needs while the run
// goes on. It holds the operations recorded but not yet handed out.
type Orderer struct {
	mu  sync.Mutex
	ops opHeap
}

// Add takes op.
func (o *Orderer) Add(op Op) {
	o.mu.Lock()
	heap.Push(&o.ops, op)
	o.mu.Unlock()
}

// Take appends to dst, in call order, every operation held that was called before upTo.
func (o *Orderer) Take(upTo int64, dst []Op) []Op {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.ops) > 0 && o.ops[0].Call < upTo {
		dst = append(dst, heap.Pop(&o.ops).(Op))
	}
	return dst
}

// Len is how many operations it holds.
func (o *Orderer) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.ops)
}

// opHeap is a min-heap of operations in SortOps' order.
type opHeap []Op

func (h opHeap) Len() int { return len(h) }
func (h opHeap) Less(i, j int) bool {
	a, b := &h[i], &h[j]
	switch {
	case a.Call != b.Call:
		return a.Call < b.Call
	case a.Return != b.Return:
		return a.Return < b.Return
	}
	return a.Process < b.Process
}
func (h opHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *opHeap) Push(x any)   { *h = append(*h, x.(Op)) }
func (h *opHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = Op{}
	*h = old[:len(old)-1]
	return x
}
