package junit

import (
	"encoding/xml"
	"fmt"
	"slices"

	"github.com/locklab/locklab/assess"
)

// Assess is junit.xml of an assessment: a suite per lock, a case per conformance
// check and per finding; a finding fails when its class fails the assessment.
func Assess(r *assess.Report) ([]byte, error) {
	doc := testSuites{Name: "locklab assess"}
	for _, l := range r.Locks {
		s := testSuite{Name: l.Name}
		for _, c := range l.Checks {
			tc := testCase{Name: "conformance " + c.Name, Classname: l.Name}
			switch c.Status {
			case assess.CheckFailed:
				tc.Failure = &message{Message: c.Detail, Type: "unexpected", Text: c.Asks}
			case assess.CheckSkipped:
				tc.Skipped = &message{Message: c.Detail}
			}
			s.Cases = append(s.Cases, tc)
		}
		for _, f := range l.Findings {
			if f.Source == assess.SourceConformance {
				continue // its check's case says it
			}
			tc := testCase{Name: fmt.Sprintf("%s %s %s fencing %s", f.Property, f.Source, f.Scenario, f.Fencing), Classname: l.Name}
			msg := &message{Message: string(f.Class) + ": " + f.Evidence, Type: string(f.Class), Text: f.Advice + "\n" + f.Replay}
			if slices.Contains(r.FailOn, f.Class) {
				tc.Failure = msg
			} else {
				tc.SystemOut = msg.Message + "\n" + msg.Text
			}
			s.Cases = append(s.Cases, tc)
		}
		for _, c := range s.Cases {
			s.Tests++
			if c.Failure != nil {
				s.Failures++
			}
			if c.Skipped != nil {
				s.Skipped++
			}
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Suites = append(doc.Suites, s)
	}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}
