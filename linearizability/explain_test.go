package linearizability

import (
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
)

// TestExplanations checks that the first violation of each property is told with the
// right processes and times.
func TestExplanations(t *testing.T) {
	const a, b, c = 0, 1, 2
	tests := []struct {
		name string
		h    histories.History
		prop Property
		want string
	}{
		{"P1 two holders", kleppmann("off", histories.OK), P1,
			`process 1 (client 1) acquired lock "k" at 0.110 s while process 0 (client 0) had believed it held "k" since 0.010 s (and still did until 0.220 s)`},
		{"P1 holder never let go", history("off", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 950),
			op(b, histories.Acquire, "k", histories.OK, 1000, 1204),
			op(c, histories.Acquire, "k", histories.Fail, 2000, 2100),
		), P1, `process 1 (client 1) acquired lock "k" at 1.204 s while process 0 (client 0) had believed it held "k" since 0.950 s (and still did at the end of the history, 2.100 s)`},
		{"P1 release called the instant the acquire returned", history("off", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 10),
			op(a, histories.Release, "k", histories.OK, 10, 20),
			op(b, histories.Acquire, "k", histories.OK, 30, 40),
			op(c, histories.Acquire, "k", histories.OK, 50, 60),
		), P1, `process 2 (client 2) acquired lock "k" at 0.060 s while process 1 (client 1) had believed it held "k" since 0.040 s (and still did at the end of the history, 0.060 s)`},
		{"P1 re-acquire", history("off", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 10),
			op(a, histories.Acquire, "k", histories.OK, 20, 30),
		), P1, `process 0 (client 0) acquired lock "k" at 0.030 s although it already held it since 0.010 s`},
		{"P1 release of someone else's lock", history("off", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 10),
			op(a, histories.Release, "k", histories.Fail, 20, 30),
			op(b, histories.Acquire, "k", histories.OK, 40, 50),
			op(a, histories.Release, "k", histories.OK, 60, 70),
		), P1, `process 0 (client 0) released lock "k" successfully at 0.060 s although process 1 (client 1) held it since 0.050 s: it released a lock it did not hold`},
		{"P1 extend after the belief ended", history("off", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 10),
			op(a, histories.Extend, "k", histories.Fail, 20, 30),
			op(a, histories.Extend, "k", histories.OK, 40, 50),
		), P1, `process 0 (client 0) extended lock "k" successfully at 0.040 s although it did not hold it (its belief had ended at 0.020 s)`},
		{"P1 release without acquire", history("off", time.Second,
			op(b, histories.Release, "k", histories.OK, 40, 50),
		), P1, `process 1 (client 1) released lock "k" successfully at 0.040 s although it did not hold it (it had not acquired it)`},

		{"P2 lost update", kleppmann("off", histories.OK), P2,
			`process 0 (client 0)'s write of 1 over 0 to "res" with fence 1 (called at 0.200 s, ok at 0.210 s): the store held 1, not the 0 the writer had read (lost update); the 1 had been written by process 1 (client 1) at 0.140–0.150 s`},
		{"P2 stale fence accepted", kleppmann("full", histories.OK), P2,
			`process 0 (client 0)'s write of 1 over 0 to "res" with fence 1 (called at 0.200 s, ok at 0.210 s): the store accepted fence 1 although it had already seen fence 2; fence 2 had first been presented by process 1 (client 1) at 0.120–0.130 s`},
		{"P2 current fence rejected", history("writes", time.Second,
			op(a, histories.Write, "res", histories.OK, 0, 10, fence(1), write(1, 0)),
			op(b, histories.Write, "res", histories.Fail, 20, 30, fence(2), write(2, 1)),
		), P2, `process 1 (client 1)'s write of 2 over 1 to "res" with fence 2 (called at 0.020 s, rejected at 0.030 s): the store rejected fence 2 although the largest fence it had seen was 1; fence 1 had first been presented by process 0 (client 0) at 0.000–0.010 s`},
		{"P2 lost update although fencing writes", history("writes", time.Second,
			op(b, histories.Read, "res", histories.OK, 120, 130, fence(2), got(0)),
			op(a, histories.Read, "res", histories.OK, 200, 210, fence(1), got(0)),
			op(a, histories.Write, "res", histories.OK, 220, 230, fence(1), write(1, 0)),
			op(b, histories.Write, "res", histories.OK, 300, 310, fence(2), write(1, 0)),
		), P2, `process 1 (client 1)'s write of 1 over 0 to "res" with fence 2 (called at 0.300 s, ok at 0.310 s): the store held 1, not the 0 the writer had read (lost update); the 1 had been written by process 0 (client 0) at 0.220–0.230 s`},
		{"P2 stale read", history("off", time.Second,
			op(a, histories.Write, "res", histories.OK, 0, 10, write(4, 0)),
			op(b, histories.Read, "res", histories.OK, 20, 30, got(0)),
		), P2, `process 1 (client 1)'s read of "res" (called at 0.020 s, got 0 at 0.030 s): it read 0 but the store held 4; the 4 had been written by process 0 (client 0) at 0.000–0.010 s`},

		{"P3 decreasing", history("off", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 10, fence(5)),
			op(a, histories.Release, "k", histories.OK, 20, 30),
			op(b, histories.Acquire, "k", histories.OK, 40, 50, fence(7)),
			op(b, histories.Release, "k", histories.OK, 60, 70),
			op(c, histories.Acquire, "k", histories.OK, 80, 90, fence(6)),
		), P3, `process 2 (client 2) was granted fence 6 for lock "k" at 0.090 s after process 1 (client 1) had already been granted fence 7 at 0.050 s`},
		{"P3 concurrent duplicate", history("off", time.Second,
			op(a, histories.Acquire, "k", histories.OK, 0, 30, fence(4)),
			op(b, histories.Acquire, "k", histories.OK, 5, 20, fence(4)),
		), P3, `processes 0 (client 0) and 1 (client 1) were both granted fence 4 for lock "k" (at 0.030 s and 0.020 s)`},
	}
	// The shape of each: the same words for every violation made the same way.
	shapes := map[string]string{
		"P1 two holders": "acquire ok while another believed", "P1 holder never let go": "acquire ok while another believed",
		"P1 release called the instant the acquire returned": "acquire ok while another believed",
		"P1 re-acquire": "acquire ok while its holder", "P1 release of someone else's lock": "release ok while another held",
		"P1 extend after the belief ended": "extend ok not held", "P1 release without acquire": "release ok not held",
		"P2 lost update": "fenced write ok", "P2 stale fence accepted": "fenced write ok", "P2 current fence rejected": "fenced write rejected",
		"P2 lost update although fencing writes": "fenced write ok", "P2 stale read": "read ok",
		"P3 decreasing": "fence not above an earlier grant", "P3 concurrent duplicate": "fence granted twice",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := checkOrFail(t, tt.h, Options{})
			pr, _ := res.Property(tt.prop)
			if pr.Verdict != Illegal {
				t.Fatalf("%s = %s, want illegal", tt.prop, pr.Verdict)
			}
			if pr.Explanation != tt.want {
				t.Errorf("explanation\n got: %s\nwant: %s", pr.Explanation, tt.want)
			}
			if pr.Shape != shapes[tt.name] {
				t.Errorf("shape %q, want %q", pr.Shape, shapes[tt.name])
			}
		})
	}
}
