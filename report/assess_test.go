package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/assess"
	"github.com/locklab/locklab/internal/browsertest"
	"github.com/locklab/locklab/report/reporttest"
)

// TestAssessText: the terminal summary gives the failing findings in full and the
// inherent ones a line per property.
func TestAssessText(t *testing.T) {
	dir := t.TempDir()
	r := reporttest.AssessReport(t, dir)
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
	r := reporttest.AssessReport(t, dir)
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
