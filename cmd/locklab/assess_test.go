package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/assess"
	"github.com/locklab/locklab/internal/jsonfile"
)

func TestAssessBadInput(t *testing.T) {
	dir := t.TempDir()
	wantRefused(t, []flagCase{
		{[]string{"assess", "--out", dir}, "flag --impl: name the lock to assess"},
		{[]string{"assess", "--impl", "nope", "--out", dir}, `flag --impl: unknown lock implementation "nope"`},
		{[]string{"assess", "--impl", "setnx", "--budget", "0s", "--out", dir}, "flag --budget: want a positive duration, got 0s"},
		{[]string{"assess", "--impl", "setnx", "--fail-on", "fatal", "--out", dir}, `flag --fail-on: unknown class "fatal"`},
		{[]string{"assess", "--impl", "setnx", "--kind", "zookeeper", "--out", dir}, `flag --kind "zookeeper": unknown lock kind`},
		{[]string{"assess", "--impl", "setnx,fenced", "--kind", "renewing", "--out", dir}, "want NAME=KIND when several locks are assessed"},
		{[]string{"assess", "--impl", "setnx", "--repeat", "0", "--out", dir}, "flag --repeat: want at least 1, got 0"},
		{[]string{"assess", "--impl", "setnx", "--scenario", "nope", "--out", dir}, `flag --scenario: unknown scenario "nope"`},
	})
}

// TestAssessMutant assesses the mutant whose release is a plain DEL on its own catalog
// scenario, on real Redis: its conformance check of ownership fails (unexpected, by
// construction: the check orders the steps), the scenario breaks P1 where setnx, the
// family's reference, holds it (avoidable), and the assessment exits 1 with report.html,
// report.json and junit.xml written and a replay command for the finding.
func TestAssessMutant(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := locklab(t, "assess", "--impl", "unsafe-release", "--scenario", "unsafe-release", "--repeat", "2",
		"--budget", "40s", "--out", out)
	if code != exitViolation {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitViolation, stdout, stderr)
	}
	var rep assess.Report
	if err := jsonfile.Read(filepath.Join(out, assess.JSONFile), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Locks) != 1 {
		t.Fatalf("%d locks in the report", len(rep.Locks))
	}
	l := rep.Locks[0]
	if l.Reference != "setnx" {
		t.Errorf("reference %q, want setnx", l.Reference)
	}
	var check, cell *assess.Finding
	for i, f := range l.Findings {
		switch {
		case f.Source == assess.SourceConformance && f.Scenario == "release-and-extend-check-ownership":
			check = &l.Findings[i]
		case f.Source == assess.SourceCatalog && f.Scenario == "unsafe-release" && f.Property == "P1":
			cell = &l.Findings[i]
		}
	}
	if check == nil || check.Class != assess.Unexpected {
		t.Errorf("the ownership check's finding: %+v, want unexpected (findings %+v)", check, l.Findings)
	}
	if cell == nil || cell.Class != assess.Avoidable || !strings.Contains(cell.ReferenceDid, "held it") || !strings.Contains(cell.Replay, "locklab replay ") {
		t.Errorf("the catalog's P1 finding: %+v, want avoidable, setnx held it, a replay command (findings %+v)", cell, l.Findings)
	}
	for _, f := range []string{assess.HTMLFile, assess.JUnitFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	for _, want := range []string{"assess: FAIL — unsafe-release:", "avoidable  P1 catalog: unsafe-release, fencing off", "report: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout)
		}
	}
}
