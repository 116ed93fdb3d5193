package junit

import (
	"bytes"
	"testing"

	"github.com/locklab/locklab/report/reporttest"
)

// TestAssess: junit.xml fails a case for each finding of a failing class and each failed
// check, and skips a skipped check.
func TestAssess(t *testing.T) {
	r := reporttest.AssessReport(t, t.TempDir())
	junit, err := Assess(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<testsuite name="mylock" tests="6" failures="3" errors="0" skipped="1"`, `<testsuite name="setnx" tests="1" failures="0"`,
		`type="avoidable"`, `<skipped message="renews"`} {
		if !bytes.Contains(junit, []byte(want)) {
			t.Errorf("junit.xml lacks %q:\n%s", want, junit)
		}
	}
}
