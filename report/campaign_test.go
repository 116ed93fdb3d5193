package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/report/reporttest"
)

// TestCampaignRendering: summary.md says what failed.
func TestCampaignRendering(t *testing.T) {
	dir := t.TempDir()
	if err := WriteCampaign(dir, reporttest.SampleSummary()); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, campaign.MarkdownFile))
	for _, want := range []string{"**FAIL**", "Safe-configuration violations", "P2: rule full-fencing-single-server", "Findings", "pause-past-ttl", "boom", "failures/x/plan.json"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}

// TestMergedSummaryFailsForEveryMissedClass: summary.md of a merge fails for each class
// searched for and not found.
func TestMergedSummaryFailsForEveryMissedClass(t *testing.T) {
	md := CampaignMarkdown(reporttest.MissedClassesSummary())
	for _, want := range []string{"**FAIL**", "class pause-past-ttl found", "class slow-write **not found**", "class no-expiry **not found**", "slow-write 2;"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}

// TestInconclusiveCampaign: a campaign that decided nothing of what its rules claim
// reads INCONCLUSIVE in summary.md (as in index.html and junit.xml, tested beside them),
// with its counts; its finding under load is listed with the stall, apart from findings.
func TestInconclusiveCampaign(t *testing.T) {
	s, stall := reporttest.InconclusiveSummary()
	dir := t.TempDir()
	reporttest.Touch(t, dir, "runs/00002/history.html")
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
}
