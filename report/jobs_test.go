package report

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/jobsbench"
)

// TestJobsBenchMarkdownGroups: the table has a row group per regime and per fix, in that
// order, each group's rows read from its own phases, and the published numbers stand in
// the held regime, the write-up's.
func TestJobsBenchMarkdownGroups(t *testing.T) {
	r := jobsbench.Result{Options: jobsbench.Defaults(), Started: time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)}
	for i, reg := range []*jobsbench.Regime{&r.Held, &r.Released} {
		for j, s := range jobsbench.Settings() {
			p := reg.Phase(s)
			// Distinct numbers per phase, so that a row reading the wrong phase shows.
			p.Enqueued, p.Ran, p.Duplicated = 1000, 1000-int64(10*i+j), int64(100*i+10*j+1)
			p.Lost = p.Enqueued - p.Ran
		}
	}
	md := JobsBenchMarkdown(r, "locklab bench jobs")
	groups := []string{
		"| **re-delivered while the first run holds the lock** (the write-up's case) | | |",
		"| **re-delivered after the first run released the lock**",
		"| **fix: an idempotency record written with the side effect** (no lock) | | |",
		"| **fix: the lock held until the acknowledgement**",
		"| **what the lock costs**",
	}
	at := 0
	for _, g := range groups {
		i := strings.Index(md[at:], g)
		if i < 0 {
			t.Fatalf("no group %q after offset %d:\n%s", g, at, md)
		}
		at += i + len(g)
	}
	for _, want := range []string{
		"| jobs executed twice or more, no lock | 11.7 % | 0.1 % (1 of 1000 jobs run) |",
		"| duplicates with a lock (seed-withlock, TTL 15s) | 0 in 72 h | 11 jobs of 999 (1.1 %)",
		"| jobs executed twice or more, no lock | – | 10.2 % (101 of 990 jobs run) |",
		"| side effects twice or more, held → released | – | 21 jobs of 998 (2.1 %) → 121 jobs of 988 (12.2 %)",
		"| jobs lost, held → released | – | 3 of 1000 → 13 of 1000 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
}
