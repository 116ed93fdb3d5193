package linearizability

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
)

func TestProgress(t *testing.T) {
	const a, b, c = 0, 1, 2
	const ttl100 = 100 * time.Millisecond
	crashed := func(failCall float64, more ...histories.Op) histories.History {
		ops := append([]histories.Op{
			op(a, histories.Acquire, "k", histories.OK, 0, 10),
			op(a, histories.Crash, "k", histories.OK, 20, 20),
			op(b, histories.Acquire, "k", histories.Fail, failCall, failCall+10),
		}, more...)
		return history("off", ttl100, ops...)
	}
	tests := []struct {
		name  string
		h     histories.History
		slack time.Duration
		want  Verdict
		says  []string // the explanation contains each
	}{
		{"no acquires", history("off", ttl100), 0, NA, nil},
		{"no failing acquires", history("off", ttl100,
			op(a, histories.Acquire, "k", histories.OK, 0, 10),
			op(a, histories.Release, "k", histories.OK, 20, 30),
		), 0, OK, nil},
		{"refused while held", history("off", ttl100,
			op(a, histories.Acquire, "k", histories.OK, 0, 10),
			op(b, histories.Acquire, "k", histories.Fail, 5000, 5010),
			op(a, histories.Release, "k", histories.OK, 6000, 6010),
		), 0, OK, nil},
		{"refused within ttl after a crash", crashed(100), 0, OK, nil},
		{"refused within ttl plus slack", crashed(350), 0, OK, nil},
		{"refused after ttl plus slack", crashed(400), 0, Illegal, []string{
			`lock "k" stayed taken for 0.380 s after its last holder, process 0 (client 0), let go (crash) at 0.020 s with ttl 100ms`,
			`process 1 (client 1)'s acquire at 0.400 s failed with nobody holding it`,
		}},
		{"no slack", crashed(150), -1, Illegal, []string{"stayed taken for 0.130 s"}},
		{"larger slack", crashed(400), time.Second, OK, nil},
		{"the lost lease asked for a longer ttl", history("off", ttl100,
			op(a, histories.Acquire, "k", histories.OK, 0, 10, ttl(time.Second)),
			op(a, histories.Crash, "k", histories.OK, 20, 20),
			op(b, histories.Acquire, "k", histories.Fail, 800, 810),
		), 0, OK, nil},
		{"an extend renews the lease's ttl", history("off", ttl100,
			op(a, histories.Acquire, "k", histories.OK, 0, 10),
			op(a, histories.Extend, "k", histories.OK, 15, 18, ttl(time.Second)),
			op(a, histories.Crash, "k", histories.OK, 20, 20),
			op(b, histories.Acquire, "k", histories.Fail, 800, 810),
		), 0, OK, nil},
		// etcd grants whole seconds: asked for 100 ms, the lease lives 1 s.
		{"the server granted a longer lease than asked", history("off", ttl100,
			op(a, histories.Acquire, "k", histories.OK, 0, 10, ttl(ttl100), granted(time.Second)),
			op(a, histories.Crash, "k", histories.OK, 20, 20),
			op(b, histories.Acquire, "k", histories.Fail, 1200, 1210, ttl(ttl100)),
		), 0, OK, nil},
		{"stuck past the granted lease", history("off", ttl100,
			op(a, histories.Acquire, "k", histories.OK, 0, 10, ttl(ttl100), granted(time.Second)),
			op(a, histories.Crash, "k", histories.OK, 20, 20),
			op(b, histories.Acquire, "k", histories.Fail, 1300, 1310, ttl(ttl100)),
		), 0, Illegal, []string{"let go (crash) at 0.020 s with ttl 1s"}},
		{"servers that free leases late", func() histories.History {
			h := crashed(600)
			h.Meta.ExpiryLag = 500 * time.Millisecond
			return h
		}(), 0, OK, nil},
		{"later than the servers' lag", func() histories.History {
			h := crashed(900)
			h.Meta.ExpiryLag = 500 * time.Millisecond
			return h
		}(), 0, Illegal, []string{"stayed taken for 0.880 s"}},
		{"a shorter granted lease is the one that counts", history("off", ttl100,
			op(a, histories.Acquire, "k", histories.OK, 0, 10, ttl(time.Second), granted(ttl100)),
			op(a, histories.Crash, "k", histories.OK, 20, 20),
			op(b, histories.Acquire, "k", histories.Fail, 400, 410, ttl(ttl100)),
		), 0, Illegal, []string{"with ttl 100ms"}},
		{"an unknown acquire that reported its grant", crashed(900,
			op(c, histories.Acquire, "k", histories.Unknown, 100, 500, granted(time.Second)),
		), 0, OK, nil},
		{"someone else took it meanwhile", crashed(2000,
			op(c, histories.Acquire, "k", histories.OK, 1990, 2020),
		), 0, OK, nil},
		{"an unknown acquire may hold the lease", crashed(700,
			op(c, histories.Acquire, "k", histories.Unknown, 100, 500),
		), 0, OK, nil},
		{"the unknown acquire's lease ran out too", crashed(900,
			op(c, histories.Acquire, "k", histories.Unknown, 100, 500),
		), 0, Illegal, []string{"after process 2 (client 2)'s acquire with unknown outcome gave up at 0.500 s with ttl 100ms"}},
		{"an unknown acquire still running", crashed(900,
			op(c, histories.Acquire, "k", histories.Unknown, 850, 2000),
		), 0, OK, nil},
		{"nobody ever held it", history("off", ttl100,
			op(b, histories.Acquire, "k", histories.Fail, 1000, 1010),
			op(a, histories.Acquire, "k", histories.Fail, 1500, 1510),
		), 0, Illegal, []string{`lock "k" stayed taken for 0.500 s after the first attempt to take it at 1.000 s`}},
		// Clients that start late (subprocess clients take seconds) and first attempts
		// that split Redlock's vote: all refused at once, then one wins within the TTL.
		{"late start, split vote", history("off", ttl100,
			op(a, histories.Acquire, "k", histories.Fail, 5000, 5040),
			op(b, histories.Acquire, "k", histories.Fail, 5001, 5050),
			op(c, histories.Acquire, "k", histories.Fail, 5002, 5045),
			op(a, histories.Acquire, "k", histories.OK, 5060, 5070),
		), 0, OK, nil},
		{"first violation over keys", history("off", ttl100,
			op(a, histories.Acquire, "late", histories.Fail, 3000, 3010),
			op(b, histories.Acquire, "early", histories.Fail, 2000, 2010),
			op(c, histories.Acquire, "early", histories.Fail, 2500, 2510),
		), 0, Illegal, []string{`lock "early"`, "acquire at 2.500 s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := checkOrFail(t, tt.h, Options{Slack: tt.slack})
			pr, _ := res.Property(L1)
			if pr.Verdict != tt.want {
				t.Fatalf("L1 = %s (%s), want %s", pr.Verdict, pr.Explanation, tt.want)
			}
			for _, s := range tt.says {
				if !strings.Contains(pr.Explanation, s) {
					t.Errorf("explanation %q does not say %q", pr.Explanation, s)
				}
			}
			if want := "acquire refused past the ttl"; pr.Verdict == Illegal && pr.Shape != want {
				t.Errorf("shape %q, want %q", pr.Shape, want)
			}
		})
	}
}

func TestProgressMentionsActiveFaults(t *testing.T) {
	h := history("off", 100*time.Millisecond,
		op(0, histories.Acquire, "k", histories.OK, 0, 10),
		op(0, histories.Crash, "k", histories.OK, 20, 20),
		op(1, histories.Acquire, "k", histories.Fail, 1000, 1010),
	)
	h.Faults = []histories.FaultWindow{
		{Kind: "blackhole", Target: "client 1 -> redis 0", Start: ms(900), End: ms(1100)},
		{Kind: "pause", Target: "redis 0", Start: ms(0), End: ms(100)},
	}
	pr, _ := checkOrFail(t, h, Options{}).Property(L1)
	if !strings.HasSuffix(pr.Explanation, "(active faults: blackhole client 1 -> redis 0)") {
		t.Errorf("explanation %q should name the active fault, and only it", pr.Explanation)
	}
}

// TestProgressBoundsUnknownsByTheFaultsThatHoldThemBack: an unknown acquire may take
// effect as long as a fault holds its command back (a paused lock server, a slowed or
// black-holed link to one), not only until its return; faults that cannot hold it back
// (on the store, on another client's link, on replies) change nothing.
func TestProgressBoundsUnknownsByTheFaultsThatHoldThemBack(t *testing.T) {
	const ttl100 = 100 * time.Millisecond
	// Client 2's acquire timed out at 0.5 s while lock-0 was paused until 1.0 s: its SET NX
	// ran at 1.0 s and the lock was legitimately taken until 1.1 s.
	base := func(failCall float64, w histories.FaultWindow) histories.History {
		h := history("off", ttl100,
			op(0, histories.Acquire, "k", histories.OK, 0, 10, client(0)),
			op(0, histories.Crash, "k", histories.OK, 20, 20, client(0)),
			op(2, histories.Acquire, "k", histories.Unknown, 100, 500, client(2)),
			op(1, histories.Acquire, "k", histories.Fail, failCall, failCall+10, client(1)),
		)
		h.Faults = []histories.FaultWindow{w}
		return h
	}
	pause := histories.FaultWindow{Kind: "server-pause", Target: "lock-0", Start: ms(50), End: ms(1000)}
	for _, c := range []struct {
		name     string
		failCall float64
		w        histories.FaultWindow
		want     Verdict
	}{
		{"paused lock server", 1200, pause, OK},
		{"paused lock server, lease long gone", 1500, pause, Illegal},
		{"still paused at the end", 1200, histories.FaultWindow{Kind: "server-pause", Target: "lock-0", Start: ms(50), End: -1}, OK},
		{"slowed link of the client", 1200, histories.FaultWindow{Kind: "net-latency", Target: "client:2->lock-0", Start: ms(50), End: ms(1000), Detail: "latency 1s±0s up on client:2->lock-0"}, OK},
		{"black-holed links of every client", 1200, histories.FaultWindow{Kind: "net-blackhole", Target: "client:*->lock-0", Start: ms(50), End: ms(1000)}, OK},
		{"paused store", 1200, histories.FaultWindow{Kind: "server-pause", Target: "store", Start: ms(50), End: ms(1000)}, Illegal},
		{"another client's link", 1200, histories.FaultWindow{Kind: "net-latency", Target: "client:1->lock-0", Start: ms(50), End: ms(1000)}, Illegal},
		{"replies slowed only", 1200, histories.FaultWindow{Kind: "net-latency", Target: "client:2->lock-0", Start: ms(50), End: ms(1000), Detail: "latency 1s±0s down on client:2->lock-0"}, Illegal},
		{"fault over before the command", 1200, histories.FaultWindow{Kind: "server-pause", Target: "lock-0", Start: ms(30), End: ms(60)}, Illegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr, _ := checkOrFail(t, base(c.failCall, c.w), Options{}).Property(L1)
			if pr.Verdict != c.want {
				t.Fatalf("L1 = %s (%s), want %s", pr.Verdict, pr.Explanation, c.want)
			}
			if c.want == Illegal && c.name == "paused lock server, lease long gone" && !strings.Contains(pr.Explanation, "may have taken effect only when server-pause on lock-0 ended") {
				t.Errorf("explanation %q does not name the fault that held the command back", pr.Explanation)
			}
		})
	}
}

// TestUnknownExtendKeepsTheBeliever: a process whose extend is of unknown outcome goes on
// believing until its release: no false alarm when it releases before anyone else
// acquires, and a violation when someone acquires while it still believes.
func TestUnknownExtendKeepsTheBeliever(t *testing.T) {
	const ttl100 = 100 * time.Millisecond
	for _, c := range []struct {
		name string
		h    histories.History
		p1   Verdict
		p2   Verdict // "" when the history has no store operations
	}{
		// The workload goes on after an unknown extend with the lease it had (it cannot
		// count on the extension) and writes if that lease is still valid.
		{"wrote within the old lease after the unknown extend", history("off", ttl100,
			op(0, histories.Acquire, "k", histories.OK, 0, 10),
			op(10, histories.Read, "k", histories.OK, 12, 14, client(0), got(0)),
			op(0, histories.Extend, "k", histories.Unknown, 40, 45, ttl(ttl100)),
			op(10, histories.Write, "k", histories.OK, 60, 62, client(0), write(1, 0)),
			op(0, histories.Release, "k", histories.OK, 65, 70),
			op(1, histories.Acquire, "k", histories.OK, 75, 80, client(1)),
			op(11, histories.Read, "k", histories.OK, 82, 84, client(1), got(1)),
			op(11, histories.Write, "k", histories.OK, 86, 88, client(1), write(2, 1)),
			op(1, histories.Release, "k", histories.OK, 90, 95, client(1)),
		), OK, OK},
		{"another acquired and wrote while the caller, still believing, wrote too", history("off", ttl100,
			op(0, histories.Acquire, "k", histories.OK, 0, 10),
			op(10, histories.Read, "k", histories.OK, 12, 14, client(0), got(0)),
			op(0, histories.Extend, "k", histories.Unknown, 40, 150, ttl(ttl100)),
			op(1, histories.Acquire, "k", histories.OK, 120, 125, client(1)),
			op(11, histories.Read, "k", histories.OK, 126, 128, client(1), got(0)),
			op(11, histories.Write, "k", histories.OK, 130, 132, client(1), write(1, 0)),
			op(10, histories.Write, "k", histories.OK, 160, 162, client(0), write(1, 0)),
			op(0, histories.Release, "k", histories.Fail, 165, 170),
		), Illegal, Illegal},
		{"released after the unknown extend", history("off", ttl100,
			op(0, histories.Acquire, "k", histories.OK, 0, 10),
			op(0, histories.Extend, "k", histories.Unknown, 40, 45, ttl(ttl100)),
			op(0, histories.Release, "k", histories.OK, 50, 55),
			op(1, histories.Acquire, "k", histories.OK, 60, 70, client(1)),
			op(1, histories.Release, "k", histories.OK, 80, 90, client(1)),
		), OK, ""},
		{"the lease ran out while the extend was unknown", history("off", ttl100,
			op(0, histories.Acquire, "k", histories.OK, 0, 10),
			op(0, histories.Extend, "k", histories.Unknown, 40, 300, ttl(ttl100)),
			op(0, histories.Release, "k", histories.Fail, 310, 315),
			op(1, histories.Acquire, "k", histories.OK, 320, 330, client(1)),
		), OK, ""},
		{"acquired by another while the caller still believed", history("off", ttl100,
			op(0, histories.Acquire, "k", histories.OK, 0, 10),
			op(0, histories.Extend, "k", histories.Unknown, 40, 300, ttl(ttl100)),
			op(1, histories.Acquire, "k", histories.OK, 200, 210, client(1)),
			op(0, histories.Release, "k", histories.Fail, 310, 315),
		), Illegal, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := checkOrFail(t, c.h, Options{})
			if pr, _ := res.Property(P1); pr.Verdict != c.p1 {
				t.Errorf("P1 = %s (%s), want %s", pr.Verdict, pr.Explanation, c.p1)
			}
			if pr, _ := res.Property(P2); c.p2 != "" && pr.Verdict != c.p2 {
				t.Errorf("P2 = %s (%s), want %s", pr.Verdict, pr.Explanation, c.p2)
			}
			if pr, _ := res.Property(L1); pr.Verdict == Illegal {
				t.Errorf("L1 = %s (%s)", pr.Verdict, pr.Explanation)
			}
		})
	}
}

// TestProgressNamesAHolderStuckInItsRelease: a lock that stays taken while its holder is
// stuck inside its release (a renewing lock keeps renewing it) is reported naming that
// holder and its release.
func TestProgressNamesAHolderStuckInItsRelease(t *testing.T) {
	h := history("off", 100*time.Millisecond,
		op(0, histories.Acquire, "k", histories.OK, 0, 10, client(0)),
		op(0, histories.Release, "k", histories.OK, 20, 3000, client(0)),
		op(1, histories.Acquire, "k", histories.Fail, 1000, 1010, client(1)),
	)
	pr, _ := checkOrFail(t, h, Options{}).Property(L1)
	if pr.Verdict != Illegal || !strings.Contains(pr.Explanation, "process 0 (client 0) was stuck inside its release, called at 0.020 s") {
		t.Errorf("L1 = %s: %s", pr.Verdict, pr.Explanation)
	}
}
