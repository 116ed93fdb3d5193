package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/assess"
	"github.com/locklab/locklab/internal/browsertest"
	"github.com/locklab/locklab/internal/gate"
	lin "github.com/locklab/locklab/linearizability"
)

// assessReport is an assessment of two locks with a finding of every class, a failed
// check, a finding under load, and a run directory with a picture and a plan.
func assessReport(t *testing.T, dir string) *assess.Report {
	t.Helper()
	run := filepath.Join(dir, "catalog", "runs", "pause-past-ttl", "mylock", "off", "0")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" fill="#a00"/></svg>`
	if err := os.WriteFile(filepath.Join(run, "timeline.svg"), []byte(svg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "plan.json"), []byte(`{"name": "pause-past-ttl", "impl": "mylock"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	finding := func(c assess.Class, p lin.Property, scenario string) assess.Finding {
		return assess.Finding{Class: c, Source: assess.SourceCatalog, Property: p, Scenario: scenario, Fencing: "off", Faults: "client-pause",
			Runs: 2, Violated: 2, Evidence: "because " + string(c), Advice: "do this about " + scenario,
			Run: "catalog/runs/pause-past-ttl/mylock/off/0", Timeline: "catalog/runs/pause-past-ttl/mylock/off/0/timeline.svg",
			Plan: "catalog/runs/pause-past-ttl/mylock/off/0/plan.json", Replay: "locklab replay " + scenario + ".json --repeat 3 --impl-cmd 'mylock=python3 l.py'"}
	}
	mine := &assess.LockReport{Name: "mylock", Description: "a lock of mine", Family: assess.Family{Kind: assess.KindLease},
		Reference: "setnx", Says: []string{"grants no fencing token"},
		Checks: []assess.Check{
			{Name: "exclusion", Asks: "refuses a second client", Status: assess.CheckPassed},
			{Name: "lease-expires", Asks: "ends by its TTL", Status: assess.CheckFailed, Detail: "never granted again"},
			{Name: "release-and-extend-check-ownership", Asks: "…", Status: assess.CheckSkipped, Detail: "renews"},
		},
		Findings: []assess.Finding{
			{Class: assess.Unexpected, Source: assess.SourceConformance, Scenario: "lease-expires", Evidence: "every correct lock passes", Advice: "give it an expiry"},
			finding(assess.Unexpected, lin.P3, "slow-grant"),
			finding(assess.Avoidable, lin.P1, "unsafe-release"),
			finding(assess.Inherent, lin.P2, "pause-past-ttl"),
		},
		UnderLoad: []assess.Finding{{Source: assess.SourceCampaign, Property: lin.P1, Scenario: "campaign plan 3", Stall: "the harness stalled 900ms"}},
		Counts:    map[assess.Class]int{assess.Unexpected: 2, assess.Avoidable: 1, assess.Inherent: 1},
		Held:      []lin.Property{lin.L1},
	}
	ref := &assess.LockReport{Name: "setnx", Description: "the textbook lock", Family: assess.Family{Kind: assess.KindLease},
		Counts:   map[assess.Class]int{assess.Inherent: 1},
		Findings: []assess.Finding{finding(assess.Inherent, lin.P1, "pause-past-ttl")}}
	return &assess.Report{Locks: []*assess.LockReport{mine, ref}, FailOn: []assess.Class{assess.Unexpected, assess.Avoidable},
		Decided: gate.Counts{Decided: 40, Runs: 12},
		Meta:    assess.Meta{Command: "locklab assess --impl mylock,setnx", CatalogRuns: 8, CampaignRuns: 4, Repeat: 1}}
}

// TestAssessJUnitAndText: junit.xml fails a case for each finding of a failing class and
// each failed check, and skips a skipped check; the terminal summary gives the failing
// findings in full and the inherent ones a line per property.
func TestAssessJUnitAndText(t *testing.T) {
	dir := t.TempDir()
	r := assessReport(t, dir)
	junit, err := AssessJUnit(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<testsuite name="mylock" tests="6" failures="3" errors="0" skipped="1"`, `<testsuite name="setnx" tests="1" failures="0"`,
		`type="avoidable"`, `<skipped message="renews"`} {
		if !bytes.Contains(junit, []byte(want)) {
			t.Errorf("junit.xml lacks %q:\n%s", want, junit)
		}
	}
	var b bytes.Buffer
	AssessText(&b, dir, r)
	text := b.String()
	for _, want := range []string{"assess: FAIL — mylock: 2 unexpected, 1 avoidable, 1 inherent", "conformance lease-expires: failed never granted again",
		"avoidable  P1 catalog: unsafe-release, fencing off", "locklab replay unsafe-release.json --repeat 3 --impl-cmd 'mylock=python3 l.py'",
		"inherent   P2 in 1 places: pause-past-ttl", "1 violations under load", "report: " + filepath.Join(dir, "report.html")} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "locklab replay pause-past-ttl.json") {
		t.Errorf("the summary gives an inherent finding's replay; the report has it:\n%s", text)
	}
}

// TestAssessHTMLInBrowser: report.html is self-contained and shows a card per lock, every
// class of finding with its picture inlined, its plan and its replay command.
func TestAssessHTMLInBrowser(t *testing.T) {
	dir := t.TempDir()
	r := assessReport(t, dir)
	if err := WriteAssess(dir, r); err != nil {
		t.Fatal(err)
	}
	p := browsertest.Open(t, filepath.Join(dir, assess.HTMLFile))
	p.MustHave("#verdict.fail", "#card-mylock.fail", "#card-setnx.pass", "#lock-mylock .finding.unexpected", ".finding.avoidable",
		".finding.inherent", "img.timeline[src^='data:image/svg+xml;base64,']", "code.replay", "details pre.plan", "tr.check.failed",
		"tr.check.skipped", "li.underload", "table.families")
	if got := p.Text("#card-mylock dd.count.unexpected"); got != "2" {
		t.Errorf("mylock's card counts %q unexpected, want 2", got)
	}
	if n := p.Count("#lock-mylock .finding"); n != 4 {
		t.Errorf("%d findings of mylock shown, want 4", n)
	}
	// Self-contained: nothing is fetched from beside the file or from elsewhere.
	if n := p.Count("link[href], script[src], img:not([src^='data:'])"); n != 0 {
		t.Errorf("%d elements load a file", n)
	}
	p.Screenshot()
}
