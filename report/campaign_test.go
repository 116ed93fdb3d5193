package report

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/internal/gate"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
)

// sampleSummary is a campaign's summary with a safe-configuration violation, a finding
// and a run that could not run, as data.
func sampleSummary() *campaign.Summary {
	safe := &campaign.Failure{Run: 0, Impl: "fenced", Topology: "single", Fencing: "full", Faults: "client-pause",
		Illegal: []lin.Property{lin.P1, lin.P2}, Safe: []lin.Property{lin.P2}, Rules: []string{"P2: rule full-fencing-single-server"},
		Classes: []string{"pause-past-ttl"}, Dir: "runs/00000", Plan: "runs/00000/plan.json",
		Explanation: "P2: two writers <&> \"quoted\"", Target: lin.P2, Reproduced: 1, Confirms: 1,
		Saved: "failures/x/plan.json", Report: "failures/x/report",
		Original: campaign.Size{Faults: 2, Clients: 4, Keys: 1, Ops: 100, Duration: plan.D(time.Second)},
		Shrunk:   &campaign.Size{Faults: 1, Clients: 2, Keys: 1, Ops: 40, Duration: plan.D(time.Second)}}
	finding := &campaign.Failure{Run: 1, Impl: "setnx", Topology: "single", Fencing: "off", Faults: "client-pause",
		Illegal: []lin.Property{lin.P1}, Classes: []string{"pause-past-ttl"}, Dir: "runs/00001", Plan: "runs/00001/plan.json"}
	s := &campaign.Summary{
		Seed: 9, Shard: "0/1", Space: campaign.Space{Impls: []string{"fenced", "setnx"}}, Elapsed: plan.D(time.Minute),
		Runs: 3, Errors: 1, SafeViolations: 1, Findings: 1,
		Violations:     map[lin.Property]int{lin.P1: 2, lin.P2: 1},
		FirstViolation: map[lin.Property]campaign.First{lin.P1: {Run: 0, Runs: 1, Plan: "runs/00000/plan.json"}},
		Failures:       []*campaign.Failure{safe, finding},
		RunErrors:      []*campaign.RunError{{Run: 3, Plan: "runs/err/plan.json", Dir: "runs/err", Error: "start single topology: boom"}},
		PlansPerImpl:   map[string]int{"fenced": 1, "setnx": 3},
		PlansPerFault:  map[string]int{"client-pause": 2, "none": 2},
	}
	s.Groups = []*campaign.Group{
		{Name: safe.GroupName(), Impl: "fenced", Runs: 1, Failed: 1, SafeViolations: 1, FailedRuns: []int{0}},
		{Name: finding.GroupName(), Impl: "setnx", Runs: 1, Failed: 1, FailedRuns: []int{1}},
		{Name: "setnx single fencing off faults none", Impl: "setnx", Runs: 2, Errors: 1},
	}
	return s
}

// TestCampaignRendering: summary.md says what failed, and junit.xml is XML with a
// failure for the safe-configuration violation only.
func TestCampaignRendering(t *testing.T) {
	dir := t.TempDir()
	if err := WriteCampaign(dir, sampleSummary()); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, campaign.MarkdownFile))
	for _, want := range []string{"**FAIL**", "Safe-configuration violations", "P2: rule full-fencing-single-server", "Findings", "pause-past-ttl", "boom", "failures/x/plan.json"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, campaign.JUnitFile))
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Out string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("junit.xml: %v\n%s", err, data)
	}
	if doc.Failures != 1 || len(doc.Suites) != 1 || doc.Tests != len(doc.Suites[0].Cases) {
		t.Fatalf("junit: %d tests, %d failures:\n%s", doc.Tests, doc.Failures, data)
	}
	var failed, findings int
	for _, c := range doc.Suites[0].Cases {
		if c.Failure != nil {
			failed++
			if !strings.Contains(c.Failure.Text, "two writers <&>") {
				t.Errorf("failure text lost its explanation: %q", c.Failure.Text)
			}
		}
		if strings.Contains(c.Out, "findings") {
			findings++
		}
	}
	if failed != 1 || findings != 1 {
		t.Errorf("junit: %d failing cases, %d with findings:\n%s", failed, findings, data)
	}
}

// TestMergedSummaryFailsForEveryMissedClass: summary.md and junit.xml of a merge fail for
// each class searched for and not found.
func TestMergedSummaryFailsForEveryMissedClass(t *testing.T) {
	s := &campaign.Summary{Shard: "merged", Searched: map[string]bool{"pause-past-ttl": true, "slow-write": false, "no-expiry": false},
		FirstDetection: map[string]campaign.First{"pause-past-ttl": {Run: 3, Runs: 4, After: plan.D(time.Second), Plan: "a/runs/00003/plan.json"}},
		Unconfirmed:    map[string]int{"slow-write": 2}}
	md := CampaignMarkdown(s)
	for _, want := range []string{"**FAIL**", "class pause-past-ttl found", "class slow-write **not found**", "class no-expiry **not found**", "slow-write 2;"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	data, err := CampaignJUnit(s)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, c := range doc.Suites[0].Cases {
		failed[c.Name] = c.Failure != nil
	}
	if doc.Failures != 2 || !failed["finds slow-write"] || !failed["finds no-expiry"] || failed["finds pause-past-ttl"] {
		t.Errorf("junit: %d failures, cases %v", doc.Failures, failed)
	}
}

// TestInconclusiveCampaign: a campaign that decided nothing of what its rules claim
// reads INCONCLUSIVE in summary.md, index.html and junit.xml (an error case, so that CI
// does not show it green), with its counts; its finding under load is listed with the
// stall in all three, apart from findings.
func TestInconclusiveCampaign(t *testing.T) {
	stall := "the harness stalled for 180ms (redis lock-0)"
	s := &campaign.Summary{Seed: 3, Shard: "0/1", Runs: 1, Perturbed: 1, Elapsed: plan.D(time.Second),
		Claims:     map[string]campaign.ClaimCount{"fenced": {Undecided: 4, Perturbed: 4}},
		Thresholds: &gate.Thresholds{MinDecided: 1, MaxPerturbed: 0.5},
		UnderLoad: []*campaign.UnderLoad{{Run: 2, Impl: "fenced", Topology: "single", Fencing: "full", Faults: "client-pause",
			Illegal: []lin.Property{lin.P2}, Safe: []lin.Property{lin.P2}, Dir: "runs/00002", Plan: "runs/00002/plan.json", Stall: stall}},
		PerturbedRuns: []*campaign.RunError{{Run: 2, Dir: "runs/00002", Plan: "runs/00002/plan.json", Error: stall}},
	}
	s.Groups = []*campaign.Group{{Name: (&campaign.Failure{Impl: "fenced", Topology: "single", Fencing: "full", Faults: "client-pause"}).GroupName(), Impl: "fenced", Runs: 1}}
	dir := t.TempDir()
	touch(t, dir, "runs/00002/history.html")
	if err := WriteCampaign(dir, s); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, campaign.MarkdownFile))
	for _, want := range []string{"**INCONCLUSIVE**", "0 claimed pairs decided (held or violated), 4 undecided", "4 in perturbed runs; 1 of 2 runs perturbed",
		"fewer than --min-decided 1", "1 findings under load", "## Findings under load (1)", "P2 illegal under load (P2 expected to hold)", stall} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "## Findings\n") {
		t.Errorf("a finding under load listed as a finding:\n%s", md)
	}
	data, _ := os.ReadFile(filepath.Join(dir, campaign.JUnitFile))
	var doc struct {
		Errors int `xml:"errors,attr"`
		Suites []struct {
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Class string `xml:"classname,attr"`
				Error *struct {
					Type string `xml:"type,attr"`
				} `xml:"error"`
				Out string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	for _, p := range doc.Suites[0].Props {
		props[p.Name] = p.Value
	}
	if doc.Errors != 1 || props["decided"] != "0" || props["undecided"] != "4" || props["perturbed"] != "4" || props["under_load"] != "1" {
		t.Errorf("junit: %d errors, properties %v:\n%s", doc.Errors, props, data)
	}
	var evidence, under bool
	for _, c := range doc.Suites[0].Cases {
		evidence = evidence || (c.Class == "locklab.campaign.evidence" && c.Error != nil && c.Error.Type == "inconclusive")
		under = under || (c.Class == "locklab.campaign.fenced" && strings.Contains(c.Out, "findings under load") && strings.Contains(c.Out, stall))
	}
	if !evidence || !under {
		t.Errorf("junit: evidence case failing %v, finding under load in its group's output %v:\n%s", evidence, under, data)
	}
	page := readIndex(t, dir)
	if v := page.byID(t, "verdict"); !v.hasClass("inconclusive") || !strings.HasPrefix(v.text.String(), "INCONCLUSIVE") {
		t.Errorf("verdict %q", v.text.String())
	}
	rows := page.byID(t, "under-load").rows("data-run")
	if len(rows) != 1 || !strings.Contains(rows[0].text.String(), stall) || len(rows[0].hrefs("porcupine")) != 1 {
		t.Errorf("under-load table: %d rows", len(rows))
	}

	// Decided enough: the same campaign passes.
	s.Claims["fenced"] = campaign.ClaimCount{Held: 4}
	if v := CampaignVerdict(s); v != "PASS" {
		t.Errorf("verdict with 4 claimed pairs decided: %s", v)
	}
}
