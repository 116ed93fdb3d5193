package junit

import (
	"encoding/xml"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/locklab/locklab/campaign"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/report/wording"
)

// Campaign renders the summary as JUnit XML: one test case per kind of plan (implementation,
// topology, fencing, fault kinds). A safe-configuration violation is a failure; findings
// are listed in the case's output; a kind of plan none of whose runs could run is an
// error. A class search adds a case that fails when the class was not found.
func Campaign(s *campaign.Summary) ([]byte, error) {
	suite := testSuite{
		Name: fmt.Sprintf("locklab campaign seed %d shard %s", s.Seed, s.Shard), Time: seconds(s.Elapsed.D()),
		Timestamp: s.Started.Format("2006-01-02T15:04:05"),
		Properties: []property{
			{"seed", fmt.Sprint(s.Seed)}, {"shard", s.Shard}, {"runs", fmt.Sprint(s.Runs)}, {"reruns", fmt.Sprint(s.Reruns)},
			{"errors", fmt.Sprint(s.Errors)}, {"interrupted", fmt.Sprint(s.Interrupted)},
			{"decided", fmt.Sprint(s.Counts().Decided)}, {"undecided", fmt.Sprint(s.Counts().Undecided)},
			{"perturbed", fmt.Sprint(s.Counts().Perturbed)}, {"perturbed_runs", fmt.Sprint(s.Perturbed)},
			{"under_load", fmt.Sprint(len(s.UnderLoad))},
			{"impls", wording.OrAll(s.Space.Impls)}, {"faults", wording.OrAll(s.Space.Faults)}, {"fencings", wording.OrAll(s.Space.Fencings)},
		},
	}
	if s.Mixed {
		suite.Properties = append(suite.Properties[:11], property{"space", "several (merged)"})
	}
	for _, g := range s.Groups {
		c := testCase{Classname: "locklab.campaign." + g.Impl, Name: fmt.Sprintf("%s (%d runs)", g.Name, g.Runs), Time: seconds(g.RunTime.D())}
		var safe, findings, errs strings.Builder
		for _, f := range s.Failures {
			if f.GroupName() != g.Name {
				continue
			}
			line := fmt.Sprintf("run %d: %s illegal; run %s; plan %s", f.Run, lin.JoinProperties(f.Illegal, ","), f.Dir, f.Plan)
			if f.Saved != "" {
				line += fmt.Sprintf("; shrunk plan %s (%s)", f.Saved, f.SizeNote())
			}
			if f.Explanation != "" {
				line += "\n  " + wording.Truncate(f.Explanation, 400)
			}
			if len(f.Safe) > 0 {
				fmt.Fprintf(&safe, "%s\n  expected to hold: %s\n", line, strings.Join(f.Rules, "; "))
			} else {
				fmt.Fprintln(&findings, line)
			}
		}
		if g.Errors > 0 {
			fmt.Fprintf(&errs, "%d of %d runs could not be run (see summary.md)\n", g.Errors, g.Runs)
		}
		if safe.Len() > 0 {
			c.Failure = &message{
				Message: fmt.Sprintf("%d safe-configuration violations", g.SafeViolations),
				Type:    "safe-configuration violation", Text: safe.String(),
			}
			suite.Failures++
		} else if g.Errors == g.Runs && g.Runs > 0 {
			c.Error = &message{Message: "no run of this kind of plan could run", Type: "error", Text: errs.String()}
			suite.Errors++
		}
		if findings.Len() > 0 {
			c.SystemOut = "findings (violations the models do not rule out):\n" + findings.String()
		}
		var under strings.Builder
		for _, u := range s.UnderLoad {
			if (&campaign.Failure{Impl: u.Impl, Topology: u.Topology, Fencing: u.Fencing, Faults: u.Faults}).GroupName() == g.Name {
				fmt.Fprintf(&under, "run %d: %s\n", u.Run, wording.UnderLoad(u))
			}
		}
		if under.Len() > 0 {
			c.SystemOut += "findings under load (violations in runs whose harness stalled; not counted):\n" + under.String()
		}
		c.SystemErr = errs.String()
		suite.Cases = append(suite.Cases, c)
	}
	searched := s.SearchedFor()
	for _, class := range slices.Sorted(maps.Keys(searched)) {
		c := testCase{Classname: "locklab.campaign.class", Name: "finds " + class, Time: seconds(s.Elapsed.D())}
		if f, ok := s.FirstDetection[class]; ok && searched[class] {
			c.SystemOut = fmt.Sprintf("found and confirmed after %s, %d runs: %s\n", f.After.D(), f.Runs, f.Plan)
		} else {
			c.Failure = &message{Message: fmt.Sprintf("class %s not found (confirmed) in %d runs; %d detections did not reproduce", class, s.Runs, s.Unconfirmed[class]), Type: "not found"}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	// The evidence itself is a case: a campaign that decided too little is no pass.
	c := testCase{Classname: "locklab.campaign.evidence", Name: "decides enough", Time: seconds(s.Elapsed.D()), SystemOut: wording.Decided(s) + "\n"}
	if err := s.Inconclusive(); err != nil {
		c.Error = &message{Message: err.Error(), Type: "inconclusive", Text: wording.Decided(s) + "\n"}
		suite.Errors++
	}
	suite.Cases = append(suite.Cases, c)
	suite.Tests = len(suite.Cases)
	all := testSuites{Name: "locklab campaign", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: suite.Time, Suites: []testSuite{suite}}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode junit: %w", err)
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}
