package index

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/campaign/detection"
	"github.com/locklab/locklab/internal/browsertest"
	"github.com/locklab/locklab/internal/gate"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/report/page"
	"github.com/locklab/locklab/report/reporttest"
	"github.com/locklab/locklab/timeline"
)

// TestDetectionIndex: the detection table links each class search's own index and the
// run of the first detection; the false-alarm table its campaigns.
func TestDetectionIndex(t *testing.T) {
	dir := t.TempDir()
	const class = "pause-past-ttl"
	found := &campaign.Summary{Seed: 1, Shard: "0/1", Class: class, Runs: 3, Detected: true,
		FirstDetection: map[string]campaign.First{class: {Run: 2, Runs: 3, After: plan.D(1500 * time.Millisecond), Plan: "runs/00002/plan.json"}}}
	missed := &campaign.Summary{Seed: 2, Shard: "0/1", Class: class, Runs: 5}
	calm := &campaign.Summary{Seed: 1, Shard: "0/1", Runs: 10}
	for rel, s := range map[string]*campaign.Summary{class + "/1": found, class + "/2": missed, "fault-free/setnx/1": calm, "faulted/renewal/1": calm} {
		d := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := campaign.WriteSummary(d, s); err != nil {
			t.Fatal(err)
		}
		if err := WriteCampaign(d, s); err != nil {
			t.Fatal(err)
		}
	}
	reporttest.Touch(t, dir, class+"/1/runs/00002/"+timeline.File, class+"/1/runs/00002/history.html")
	r := detection.Result{Seeds: 2, FirstSeed: 1, MaxRuns: 5, GoVersion: "go1.26", Elapsed: plan.D(time.Minute),
		Rows:        []detection.Row{{Class: class, Detect: []lin.Property{lin.P1}, Seeds: 2, Found: 1, Times: []plan.Duration{plan.D(1500 * time.Millisecond)}, Plans: []int{3}, Missed: []int64{2}}},
		FalseAlarms: []detection.FalseAlarms{{Impl: "setnx", Plans: 10, Claims: campaign.ClaimCount{Held: 30, Undecided: 2}}}, ClaimedPairs: 30,
		Faulted: []detection.FamilyAlarms{{Family: "renewal", Plans: 10, Claims: campaign.ClaimCount{Held: 31, Violated: 1}}}}
	if err := WriteDetection(dir, r, "locklab detection "+reporttest.Hostile); err != nil {
		t.Fatal(err)
	}
	root := reporttest.ReadIndex(t, dir)
	if v := root.ByID(t, "verdict"); !v.HasClass("fail") || !strings.Contains(v.Text.String(), "0 of 1 classes found by every seed, 1 false alarms") {
		t.Errorf("verdict %q", v.Text.String())
	}
	if !strings.Contains(root.ByID(t, "intro").Text.String(), "locklab detection "+reporttest.Hostile) {
		t.Errorf("intro lost the command: %q", root.ByID(t, "intro").Text.String())
	}
	rows := root.ByID(t, "detections").Rows("data-class")
	if len(rows) != 1 {
		t.Fatalf("detection table: %d rows", len(rows))
	}
	row := rows[0]
	if got := row.Hrefs("campaign"); !slices.Equal(got, []string{class + "/1/index.html", class + "/2/index.html"}) {
		t.Errorf("class searches linked %q", got)
	}
	first := row.All(func(n *reporttest.Node) bool { return n.HasClass("first-detection") })[0]
	if !slices.Equal(first.Hrefs("timeline"), []string{class + "/1/runs/00002/timeline.svg"}) || !slices.Equal(first.Hrefs("porcupine"), []string{class + "/1/runs/00002/history.html"}) {
		t.Errorf("first detection's links %q %q", first.Hrefs("timeline"), first.Hrefs("porcupine"))
	}
	for _, want := range []string{"1/2", "> 1.5s (missed)", "> 5 (missed)", "found after 1.5s, 3 plans", "not found in 5 plans"} {
		if !strings.Contains(row.Text.String(), want) {
			t.Errorf("class row lacks %q: %q", want, row.Text.String())
		}
	}
	fa := root.ByID(t, "false-alarms").Rows("data-impl")
	if len(fa) != 1 || !slices.Equal(fa[0].Hrefs("campaign"), []string{"fault-free/setnx/1/index.html"}) || !strings.Contains(fa[0].Text.String(), "30") {
		t.Errorf("false-alarm table: %d rows", len(fa))
	}

	ff := root.ByID(t, "faulted-false-alarms").Rows("data-impl")
	if len(ff) != 1 || !slices.Equal(ff[0].Hrefs("campaign"), []string{"faulted/renewal/1/index.html"}) || !ff[0].HasClass("safe") {
		t.Errorf("false alarms under faults: %d rows", len(ff))
	}

	b := browsertest.Open(t, filepath.Join(dir, page.IndexFile))
	b.MustHave("table#detections tr[data-class]", "td.first-detection a.timeline", "td.searches a.campaign", "table#false-alarms", "table#faulted-false-alarms")
	b.Screenshot()
	// Asked to decide more than its searches did, the missed seed says nothing: the page
	// reads INCONCLUSIVE, as the command's exit status 3 does.
	// (A false alarm fails it whatever was decided: the one under faults is taken away.)
	r.Thresholds, r.Faulted = &gate.Thresholds{MinDecided: 1000, MaxPerturbed: 0.5}, nil
	if err := WriteDetection(dir, r, "locklab detection"); err != nil {
		t.Fatal(err)
	}
	if v := reporttest.ReadIndex(t, dir).ByID(t, "verdict"); !v.HasClass("inconclusive") || !strings.HasPrefix(v.Text.String(), "INCONCLUSIVE") ||
		!strings.Contains(v.Text.String(), "30 (plan, property) pairs decided (2 undecided, 0 in perturbed runs), fewer than --min-decided 1000") {
		t.Errorf("verdict %q", v.Text.String())
	}
}

// TestEmptyDetectionIndex: the page of a benchmark that measured nothing renders,
// well-formed, saying so.
func TestEmptyDetectionIndex(t *testing.T) {
	dir := t.TempDir()
	d, err := Detection(detection.Result{}, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := reporttest.ParsePage(t, d).ByID(t, "empty").Text.String(); got != "Nothing was measured." {
		t.Errorf("empty detection: %q", got)
	}
}
