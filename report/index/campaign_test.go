package index

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/campaign/merge"
	"github.com/locklab/locklab/internal/browsertest"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/report/page"
	"github.com/locklab/locklab/report/reporttest"
	"github.com/locklab/locklab/timeline"
)

// TestCampaignIndex: the verdict, the header, the property table and the failures with
// their runs' and shrunk runs' links, relative to the page; hostile names as text.
func TestCampaignIndex(t *testing.T) {
	dir := t.TempDir()
	reporttest.CampaignFiles(t, dir)
	s := reporttest.SampleSummary()
	s.Failures[1].Impl = reporttest.Hostile
	s.FirstDetection = map[string]campaign.First{"pause-past-ttl": {Run: 0, Runs: 1, After: plan.D(2 * time.Second), Plan: "runs/00000/plan.json"}}
	s.Failures[0].Confirmed = []string{"pause-past-ttl"}
	if err := WriteCampaign(dir, s); err != nil {
		t.Fatal(err)
	}
	root := reporttest.ReadIndex(t, dir)

	v := root.ByID(t, "verdict")
	if !v.HasClass("fail") || !strings.HasPrefix(v.Text.String(), "FAIL: 1 safe-configuration violations, 1 findings") {
		t.Errorf("verdict: %v %q", v.Attr, v.Text.String())
	}
	header := root.ByID(t, "header").Text.String()
	for _, want := range []string{"seed9", "shard0/1", "plans run3", "plans/min0.0 per runner", "safe-configuration violations1", "findings1"} {
		if !strings.Contains(header, want) {
			t.Errorf("header lacks %q: %q", want, header)
		}
	}
	props := root.ByID(t, "verdicts").Rows("data-property")
	if len(props) != len(lin.AllProperties()) || !props[0].HasClass("illegal") || !strings.Contains(props[0].Text.String(), "run 0") ||
		!slices.Equal(props[0].Hrefs("timeline"), []string{"runs/00000/timeline.svg"}) {
		t.Errorf("property table: %d rows; P1 %q", len(props), props[0].Text.String())
	}
	if got := root.ByID(t, "classes").Hrefs("porcupine"); !slices.Equal(got, []string{"runs/00000/history.html"}) {
		t.Errorf("classes table links %q", got)
	}

	rows := root.ByID(t, "failures").Rows("data-run")
	if len(rows) != 2 {
		t.Fatalf("failures table: %d rows, want 2", len(rows))
	}
	safe, finding := rows[0], rows[1]
	if !safe.HasClass("safe") || safe.Attr["data-dir"] != "runs/00000" {
		t.Errorf("safe-configuration violation's row: %v", safe.Attr)
	}
	runLinks := safe.All(func(n *reporttest.Node) bool { return n.HasClass("run-links") })[0]
	if !slices.Equal(runLinks.Hrefs("timeline"), []string{"runs/00000/timeline.svg"}) || !slices.Equal(runLinks.Hrefs("porcupine"), []string{"runs/00000/history.html"}) {
		t.Errorf("failing run's links: %q %q", runLinks.Hrefs("timeline"), runLinks.Hrefs("porcupine"))
	}
	shrunk := safe.All(func(n *reporttest.Node) bool { return n.HasClass("shrunk-run") })[0]
	if len(shrunk.Hrefs("timeline")) != 0 || !slices.Equal(shrunk.Hrefs("porcupine"), []string{"failures/x/report/history.html"}) ||
		len(shrunk.All(func(n *reporttest.Node) bool { return n.HasClass("no-picture") })) != 1 {
		t.Errorf("shrunk run's links: %q %q", shrunk.Hrefs("timeline"), shrunk.Hrefs("porcupine"))
	}
	if got := safe.Hrefs("shrunk-plan"); !slices.Equal(got, []string{"failures/x/plan.json"}) {
		t.Errorf("shrunk plan link %q", got)
	}
	text := safe.Text.String()
	for _, want := range []string{"P1, P2 illegal", "expected to hold: P2", "pause-past-ttl", "P2 reproduced 1/1", "class pause-past-ttl confirmed", "faults 2→1", `two writers <&> "quoted"`} {
		if !strings.Contains(text, want) {
			t.Errorf("safe row lacks %q: %q", want, text)
		}
	}
	if !finding.HasClass("finding") || len(finding.Hrefs("timeline")) != 0 || len(finding.All(func(n *reporttest.Node) bool { return n.HasClass("no-picture") })) != 1 ||
		!strings.Contains(finding.Text.String(), reporttest.Hostile+" single fencing off") || !strings.Contains(finding.Text.String(), "not re-run") {
		t.Errorf("finding's row (its directory gone, a reporttest.Hostile implementation): %q", finding.Text.String())
	}
	errs := root.ByID(t, "errors").Rows("data-run")
	if len(errs) != 1 || !slices.Equal(errs[0].Hrefs("error-file"), []string{"runs/err/error.txt"}) || !strings.Contains(errs[0].Text.String(), "boom") {
		t.Errorf("errors table: %d rows", len(errs))
	}

	b := browsertest.Open(t, filepath.Join(dir, page.IndexFile))
	b.MustHave("p#verdict.fail", "table#verdicts", "table#failures tr.safe", "td.run-links a.timeline", "a.porcupine", "table#classes")
	b.Screenshot()
}

// TestMergedCampaignIndex: a merged summary's paths lead out of its directory into the
// shards'; the index links them from where it is.
func TestMergedCampaignIndex(t *testing.T) {
	root := t.TempDir()
	shard, out := filepath.Join(root, "shard0"), filepath.Join(root, "all")
	reporttest.Touch(t, shard, "runs/00003/"+timeline.File, "runs/00003/history.html")
	s := &campaign.Summary{Seed: 1, Shard: "0/2", Runs: 4, Findings: 1, Violations: map[lin.Property]int{lin.P1: 1},
		Failures:      []*campaign.Failure{{Run: 3, Impl: "setnx", Illegal: []lin.Property{lin.P1}, Dir: "runs/00003", Plan: "runs/00003/plan.json"}},
		PerturbedRuns: []*campaign.RunError{{Run: 2, Dir: "runs/00003", Error: "timer stalled"}}, Perturbed: 1}
	m := merge.Merge(out, []string{shard}, []*campaign.Summary{s})
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteCampaign(out, m); err != nil {
		t.Fatal(err)
	}
	doc := reporttest.ReadIndex(t, out)
	if got := doc.ByID(t, "failures").Hrefs("timeline"); !slices.Equal(got, []string{"../shard0/runs/00003/timeline.svg"}) {
		t.Errorf("merged failure's timeline link %q", got)
	}
	if got := doc.ByID(t, "perturbed").Hrefs("porcupine"); !slices.Equal(got, []string{"../shard0/runs/00003/history.html"}) {
		t.Errorf("perturbed run's link %q", got)
	}
	if v := doc.ByID(t, "verdict"); !v.HasClass("pass") || !strings.HasPrefix(v.Text.String(), "PASS") {
		t.Errorf("verdict %q", v.Text.String())
	}
	if !strings.Contains(doc.ByID(t, "header").Text.String(), "shardmerged") {
		t.Errorf("header: %q", doc.ByID(t, "header").Text.String())
	}
}

// TestInconclusiveCampaignIndex: a campaign that decided nothing of what its rules claim
// reads INCONCLUSIVE, and its finding under load is listed with the stall.
func TestInconclusiveCampaignIndex(t *testing.T) {
	s, stall := reporttest.InconclusiveSummary()
	dir := t.TempDir()
	reporttest.Touch(t, dir, "runs/00002/history.html")
	if err := WriteCampaign(dir, s); err != nil {
		t.Fatal(err)
	}
	page := reporttest.ReadIndex(t, dir)
	if v := page.ByID(t, "verdict"); !v.HasClass("inconclusive") || !strings.HasPrefix(v.Text.String(), "INCONCLUSIVE") {
		t.Errorf("verdict %q", v.Text.String())
	}
	rows := page.ByID(t, "under-load").Rows("data-run")
	if len(rows) != 1 || !strings.Contains(rows[0].Text.String(), stall) || len(rows[0].Hrefs("porcupine")) != 1 {
		t.Errorf("under-load table: %d rows", len(rows))
	}
}

// TestEmptyCampaignIndex: the page of an empty summary renders, well-formed, saying so.
func TestEmptyCampaignIndex(t *testing.T) {
	dir := t.TempDir()
	c, err := Campaign(&campaign.Summary{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	doc := reporttest.ParsePage(t, c)
	if doc.ByID(t, "failures").Name != "p" || !doc.ByID(t, "verdict").HasClass("pass") || len(doc.ByID(t, "verdicts").Rows("data-property")) != len(lin.AllProperties()) {
		t.Errorf("empty campaign page:\n%s", c)
	}
}
