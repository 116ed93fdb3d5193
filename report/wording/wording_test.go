package wording

import (
	"testing"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/report/reporttest"
)

// TestCampaignVerdict: a campaign that decided too little is INCONCLUSIVE; decided
// enough, the same campaign passes.
func TestCampaignVerdict(t *testing.T) {
	s, _ := reporttest.InconclusiveSummary()
	if v := CampaignVerdict(s); v != "INCONCLUSIVE" {
		t.Errorf("verdict with nothing decided: %s", v)
	}
	s.Claims["fenced"] = campaign.ClaimCount{Held: 4}
	if v := CampaignVerdict(s); v != "PASS" {
		t.Errorf("verdict with 4 claimed pairs decided: %s", v)
	}
}
