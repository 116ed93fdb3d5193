package junit

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/locklab/locklab/report/reporttest"
)

// TestCampaign: junit.xml is XML with a failure for the safe-configuration violation
// only, and the findings in their cases' output.
func TestCampaign(t *testing.T) {
	data, err := Campaign(reporttest.SampleSummary())
	if err != nil {
		t.Fatal(err)
	}
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

// TestCampaignFailsForEveryMissedClass: junit.xml of a merge fails for each class
// searched for and not found.
func TestCampaignFailsForEveryMissedClass(t *testing.T) {
	data, err := Campaign(reporttest.MissedClassesSummary())
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

// TestInconclusiveCampaign: a campaign that decided nothing of what its rules claim has
// an error case (so that CI does not show it green) and its counts; its finding under
// load is in its group's output with the stall.
func TestInconclusiveCampaign(t *testing.T) {
	s, stall := reporttest.InconclusiveSummary()
	data, err := Campaign(s)
	if err != nil {
		t.Fatal(err)
	}
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
}
