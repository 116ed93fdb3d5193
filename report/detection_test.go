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

// TestDetectionMarkdownFaulted: the false alarms under faults are a table of their own,
// one row per rule family with its rules and what its plans are.
func TestDetectionMarkdownFaulted(t *testing.T) {
	r := detection.Result{Seeds: 0, ClaimedPairs: 30, GoVersion: "go1.26", Elapsed: plan.D(0),
		Faulted: []detection.FamilyAlarms{{Family: "renewal", Rules: []string{"renewal-outlives-a-thread-pause"}, Plans: 61, Claims: campaign.ClaimCount{Held: 31, Undecided: 1}}}}
	md := DetectionMarkdown(r, "locklab detection --seeds 0 --fault-free=false --families renewal")
	for _, want := range []string{"false alarms only", "until at least 30 (plan, property) pairs that the family's rules claim",
		"| renewal | renewal-outlives-a-thread-pause | P1 and P2 of the renewing locks", "| 61 | 31 | **0** | 1 | 0 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| implementation |") {
		t.Errorf("an empty fault-free table:\n%s", md)
	}
}
