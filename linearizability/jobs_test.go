package linearizability

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
)

// jobRun is a job's life: enqueued by the queue (client 9), delivered to and run by
// worker w, with the ledger's count after its effect.
func jobRun(job string, w int, at float64, count int64, outcome histories.Outcome) []histories.Op {
	return []histories.Op{
		op(w, histories.Deliver, job, histories.OK, at, at+1),
		op(w, histories.Effect, job, outcome, at+2, at+3, got(count)),
		op(w, histories.Ack, job, histories.OK, at+4, at+5),
	}
}

func enqueue(job string, at float64) histories.Op {
	return op(9, histories.Enqueue, job, histories.OK, at, at+0.5)
}

func tally(job string, n int64, at float64) histories.Op {
	return op(9, histories.Tally, job, histories.OK, at, at, got(n))
}

func jobHistory(ops ...histories.Op) histories.History {
	return history("off", time.Second, ops...)
}

func TestAtMostOnce(t *testing.T) {
	once := append(jobRun("j0", 0, 10, 1, histories.OK), enqueue("j0", 0), tally("j0", 1, 100), tally(histories.TallyEnd, 1, 100))
	if r := checkAtMostOnce(jobHistory(once...)); r.Verdict != OK {
		t.Errorf("one run: %s %s", r.Verdict, r.Explanation)
	}
	// Two workers ran j0: the second effect saw count 2.
	twice := append(jobRun("j0", 0, 10, 1, histories.OK), jobRun("j0", 1, 20, 2, histories.OK)...)
	twice = append(twice, enqueue("j0", 0), op(9, histories.Redeliver, "j0", histories.OK, 15, 15))
	r := checkAtMostOnce(jobHistory(twice...))
	if r.Verdict != Illegal || !strings.Contains(r.Explanation, "j0") || !strings.Contains(r.Explanation, "re-delivered") {
		t.Errorf("two runs: %s %q", r.Verdict, r.Explanation)
	}
	if r.Shape != "a job's side effect twice" {
		t.Errorf("two runs: shape %q", r.Shape)
	}
	// A second effect whose outcome is unknown took effect: only the ledger read at the end says so.
	unsure := append(jobRun("j0", 0, 10, 1, histories.OK), jobRun("j0", 1, 20, 0, histories.Unknown)...)
	unsure = append(unsure, enqueue("j0", 0), tally("j0", 2, 100), tally(histories.TallyEnd, 1, 100))
	if r := checkAtMostOnce(jobHistory(unsure...)); r.Verdict != Illegal || !strings.Contains(r.Explanation, "2 effects in the ledger") {
		t.Errorf("unknown second effect counted in the ledger: %s %q", r.Verdict, r.Explanation)
	}
	// A refused effect (stale fence, idempotency record) is no effect.
	refused := append(jobRun("j0", 0, 10, 1, histories.OK), op(1, histories.Effect, "j0", histories.Fail, 30, 31))
	refused = append(refused, enqueue("j0", 0), tally("j0", 1, 100), tally(histories.TallyEnd, 1, 100))
	if r := checkAtMostOnce(jobHistory(refused...)); r.Verdict != OK {
		t.Errorf("refused second effect: %s %q", r.Verdict, r.Explanation)
	}
	if r := checkAtMostOnce(kleppmann("off", histories.OK)); r.Verdict != NA {
		t.Errorf("a lock history: P4 %s, want n/a", r.Verdict)
	}
}

func TestAtLeastOnce(t *testing.T) {
	skipped := []histories.Op{
		enqueue("j0", 0), enqueue("j1", 0),
		op(1, histories.Deliver, "j1", histories.OK, 5, 6),
		op(1, histories.Skip, "j1", histories.OK, 7, 7, func(o *histories.Op) { o.Output.Error = "lock j1 fail" }),
		op(1, histories.Ack, "j1", histories.OK, 8, 9),
	}
	skipped = append(skipped, jobRun("j0", 0, 10, 1, histories.OK)...)
	done := append(skipped, tally("j0", 1, 100), tally(histories.TallyEnd, 1, 100))
	r := checkAtLeastOnce(jobHistory(done...))
	if r.Verdict != Illegal || !strings.Contains(r.Explanation, "1 of 2 enqueued jobs") ||
		!strings.Contains(r.Explanation, "j1") || !strings.Contains(r.Explanation, "skipped by client 1") {
		t.Errorf("a skipped job never run: %s %q", r.Verdict, r.Explanation)
	}
	if r.Shape != "an enqueued job never ran" {
		t.Errorf("a skipped job never run: shape %q", r.Shape)
	}
	// Without the closing read-back nothing can be called lost.
	if r := checkAtLeastOnce(jobHistory(skipped...)); r.Verdict != Unknown {
		t.Errorf("no read-back: %s, want unknown", r.Verdict)
	}
	// An unknown effect that the ledger shows is an effect.
	unsure := []histories.Op{enqueue("j0", 0), op(0, histories.Effect, "j0", histories.Unknown, 2, 3), tally("j0", 1, 100), tally(histories.TallyEnd, 1, 100)}
	if r := checkAtLeastOnce(jobHistory(unsure...)); r.Verdict != OK {
		t.Errorf("unknown effect in the ledger: %s %q", r.Verdict, r.Explanation)
	}
	// A job whose enqueue is unknown may never have been queued: not claimed.
	maybe := []histories.Op{op(9, histories.Enqueue, "j0", histories.Unknown, 0, 1), tally(histories.TallyEnd, 0, 100)}
	if r := checkAtLeastOnce(jobHistory(maybe...)); r.Verdict != NA {
		t.Errorf("unknown enqueue: %s, want n/a", r.Verdict)
	}
}

// TestCheckIncludesJobProperties: Check reports P4 and P5, n/a on a lock history.
func TestCheckIncludesJobProperties(t *testing.T) {
	res, err := Check(kleppmann("off", histories.OK), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Property{P4, P5} {
		if pr, ok := res.Property(p); !ok || pr.Verdict != NA {
			t.Errorf("%s: %+v", p, pr)
		}
	}
}
