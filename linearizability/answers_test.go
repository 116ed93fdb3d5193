package linearizability

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
)

// TestHonestAnswers holds P6 to the orders it is sure of: another process's grant called
// after the lease's last grant returned and returned before the answer was asked for.
func TestHonestAnswers(t *testing.T) {
	const a, b = 0, 1
	acq := func(p int, call, ret float64) histories.Op {
		return op(p, histories.Acquire, "k", histories.OK, call, ret)
	}
	cases := []struct {
		name    string
		ops     []histories.Op
		want    Verdict
		mention []string // in the explanation, when illegal
	}{
		{"late release refused", []histories.Op{
			acq(a, 0, 10), acq(b, 100, 110), op(b, histories.Release, "k", histories.OK, 120, 130),
			op(a, histories.Release, "k", histories.Fail, 200, 210),
		}, OK, nil},
		{"late release answered ok", []histories.Op{
			acq(a, 0, 10), acq(b, 100, 110), op(a, histories.Release, "k", histories.OK, 200, 210),
		}, Illegal, []string{"process 0 (client 0)'s release", "called at 0.200 s", "process 1 (client 1) had been granted", "0.100–0.110 s", "acquire ok at 0.010 s"}},
		{"late extend answered ok, then its release", []histories.Op{
			acq(a, 0, 10), acq(b, 100, 110), op(b, histories.Release, "k", histories.OK, 120, 130),
			op(a, histories.Extend, "k", histories.OK, 200, 210), op(a, histories.Release, "k", histories.OK, 300, 310),
		}, Illegal, []string{"'s extend", "2 impossible answers in all (1 extends, 1 releases)"}},
		{"grant overlapping the lease's grant may come first", []histories.Op{
			acq(a, 5, 20), acq(b, 0, 15), op(a, histories.Release, "k", histories.OK, 200, 210),
		}, OK, nil},
		{"grant still in flight when the release was asked", []histories.Op{
			acq(a, 0, 10), acq(b, 100, 250), op(a, histories.Release, "k", histories.OK, 200, 210),
		}, OK, nil},
		{"an extend ok moves the lease's last grant", []histories.Op{
			acq(a, 0, 10), op(a, histories.Extend, "k", histories.OK, 50, 60), acq(b, 20, 55),
			op(a, histories.Release, "k", histories.OK, 100, 110),
		}, OK, nil},
		{"an extend of unknown outcome keeps the lease as it was", []histories.Op{
			acq(a, 0, 10), op(a, histories.Extend, "k", histories.Unknown, 50, 60), acq(b, 100, 110),
			op(a, histories.Release, "k", histories.OK, 200, 210),
		}, Illegal, []string{"'s release"}},
		{"a refused extend ends the lease", []histories.Op{
			acq(a, 0, 10), op(a, histories.Extend, "k", histories.Fail, 50, 60), acq(b, 100, 110),
			op(a, histories.Release, "k", histories.OK, 200, 210),
		}, NA, nil},
		{"a new lease starts after the other grant", []histories.Op{
			acq(a, 0, 10), acq(b, 100, 110), op(b, histories.Release, "k", histories.OK, 120, 130),
			acq(a, 140, 150), op(a, histories.Release, "k", histories.OK, 200, 210),
		}, OK, nil},
		{"other keys are other locks", []histories.Op{
			acq(a, 0, 10), op(b, histories.Acquire, "j", histories.OK, 100, 110), op(a, histories.Release, "k", histories.OK, 200, 210),
		}, OK, nil},
		{"nothing answered ok", []histories.Op{acq(a, 0, 10), op(b, histories.Acquire, "k", histories.Fail, 20, 30)}, NA, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := checkAnswers(history("off", 50*time.Millisecond, c.ops...))
			if r.Property != P6 || r.Verdict != c.want {
				t.Fatalf("%s = %s (%s), want %s", r.Property, r.Verdict, r.Explanation, c.want)
			}
			for _, m := range c.mention {
				if !strings.Contains(r.Explanation, m) {
					t.Errorf("explanation %q does not say %q", r.Explanation, m)
				}
			}
			if r.Verdict == Illegal {
				// The shape names the first impossible answer's kind, as the explanation does.
				kind, _, _ := strings.Cut(r.Shape, " ")
				if r.Shape != kind+" ok after another's grant" || !strings.Contains(r.Explanation, "'s "+kind+" of lock") {
					t.Errorf("shape %q for %q", r.Shape, r.Explanation)
				}
			} else if r.Shape != "" {
				t.Errorf("shape %q on a verdict %s", r.Shape, r.Verdict)
			}
			if r.Verdict == Illegal && (r.At <= 0 || r.Until < r.At) {
				t.Errorf("span %d–%d, want the other grant's return to the answer", r.At, r.Until)
			}
		})
	}
}

// TestKleppmannKeepsHonestAnswers: the paused holder's late release is refused, so the
// pause breaks P1 (and P2 without fencing) but not P6.
func TestKleppmannKeepsHonestAnswers(t *testing.T) {
	res, err := Check(kleppmann("off", histories.OK), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := res.Property(P1)
	p6, _ := res.Property(P6)
	if p1.Verdict != Illegal || p6.Verdict != OK {
		t.Fatalf("P1 %s, P6 %s: want illegal and ok\n%s", p1.Verdict, p6.Verdict, res)
	}
}
