package report

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/campaign/detection"
	"github.com/locklab/locklab/plan"
)

// TestDetectionMarkdownFalseAlarmsOnly: a run with no class searches prints the false
// alarms alone, saying so, and no empty class table.
func TestDetectionMarkdownFalseAlarmsOnly(t *testing.T) {
	r := detection.Result{Seeds: 0, ClaimedPairs: 1000, GoVersion: "go1.26", Elapsed: plan.D(0),
		FalseAlarms: []detection.FalseAlarms{{Impl: "seed-withlock", Plans: 334, Claims: campaign.ClaimCount{Held: 1002}}}}
	md := DetectionMarkdown(r, "locklab detection --seeds 0 --impl seed-withlock")
	for _, want := range []string{"false alarms only", "| seed-withlock | 334 | 1002 | **0** | 0 | 0 |", "| all | | 1002 | **0** | 0 | |"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| class |") {
		t.Errorf("an empty class table:\n%s", md)
	}
}
