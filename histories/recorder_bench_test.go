package histories

import (
	"strconv"
	"testing"
	"time"
)

// garbagePerOp is about what a workload client allocates per operation besides the
// recorder (go-redis's command and reply, contexts, timers, the lease's token): the
// garbage that makes the collector run, and each run then visits what the recorder kept.
const garbagePerOp = 1 << 10

// benchHistoryOps is how many operations a recorder keeps before the benchmark starts a
// new one: a run's worth, so that the history is most of the heap, as in a run.
const benchHistoryOps = 100_000

// BenchmarkStreamRecord is the recorder's cost per operation without Redis: recording an
// acquire with a fresh token amid a client's garbage, against the same garbage recording
// nothing (a nil stream). The difference between the two is what recording costs a
// client, the collector's visits to the kept history included.
func BenchmarkStreamRecord(b *testing.B) {
	token := []byte("0123456789abcdef0123456789abcdef")
	var garbage []byte // outside the closure, so that what it holds is on the heap
	for _, recorded := range []bool{true, false} {
		b.Run("recorded="+strconv.FormatBool(recorded), func(b *testing.B) {
			var s *Stream
			for i := 0; b.Loop(); i++ {
				if recorded && i%benchHistoryOps == 0 {
					s = NewRecorder(Meta{Fencing: "off"}).Stream(0)
				}
				garbage = make([]byte, garbagePerOp)
				call := s.Now()
				s.Record(Acquire, "k0", Input{TTL: time.Second}, Output{Token: string(token)}, OK, call)
			}
			if recorded { // how much memory an operation kept takes
				used := 0
				for _, c := range s.kept.chunks {
					used += len(c)
				}
				b.ReportMetric(float64(used)/float64(s.kept.len()), "kept-bytes/op")
			}
		})
	}
	_ = garbage
}
