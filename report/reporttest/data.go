package reporttest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locklab/locklab/assess"
	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/internal/gate"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/timeline"
)

// SampleSummary is a campaign's summary with a safe-configuration violation, a finding
// and a run that could not run, as data.
func SampleSummary() *campaign.Summary {
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

// CampaignFiles are the files of SampleSummary's runs: run 0 with its picture, its shrunk
// run without one (history.html only), the error run's error.txt; run 1's directory is
// gone.
func CampaignFiles(t *testing.T, dir string) {
	Touch(t, dir, "runs/00000/"+timeline.File, "runs/00000/history.html", "runs/00000/plan.json",
		"failures/x/plan.json", "failures/x/report/history.html",
		"runs/err/error.txt", "runs/err/plan.json")
}

// AssessReport is an assessment of two locks with a finding of every class, a failed
// check, a finding under load, and a run directory with a picture and a plan.
func AssessReport(t *testing.T, dir string) *assess.Report {
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

// MissedClassesSummary is a merged campaign's summary that searched for three classes and
// found one: two fail it.
func MissedClassesSummary() *campaign.Summary {
	return &campaign.Summary{Shard: "merged", Searched: map[string]bool{"pause-past-ttl": true, "slow-write": false, "no-expiry": false},
		FirstDetection: map[string]campaign.First{"pause-past-ttl": {Run: 3, Runs: 4, After: plan.D(time.Second), Plan: "a/runs/00003/plan.json"}},
		Unconfirmed:    map[string]int{"slow-write": 2}}
}

// InconclusiveSummary is a campaign's summary that decided nothing of what its rules
// claim, with a finding under load in run 2 (its directory runs/00002) and the stall.
func InconclusiveSummary() (*campaign.Summary, string) {
	stall := "the harness stalled for 180ms (redis lock-0)"
	s := &campaign.Summary{Seed: 3, Shard: "0/1", Runs: 1, Perturbed: 1, Elapsed: plan.D(time.Second),
		Claims:     map[string]campaign.ClaimCount{"fenced": {Undecided: 4, Perturbed: 4}},
		Thresholds: &gate.Thresholds{MinDecided: 1, MaxPerturbed: 0.5},
		UnderLoad: []*campaign.UnderLoad{{Run: 2, Impl: "fenced", Topology: "single", Fencing: "full", Faults: "client-pause",
			Illegal: []lin.Property{lin.P2}, Safe: []lin.Property{lin.P2}, Dir: "runs/00002", Plan: "runs/00002/plan.json", Stall: stall}},
		PerturbedRuns: []*campaign.RunError{{Run: 2, Dir: "runs/00002", Plan: "runs/00002/plan.json", Error: stall}},
	}
	s.Groups = []*campaign.Group{{Name: (&campaign.Failure{Impl: "fenced", Topology: "single", Fencing: "full", Faults: "client-pause"}).GroupName(), Impl: "fenced", Runs: 1}}
	return s, stall
}
