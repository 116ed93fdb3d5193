package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/releases"
)

// trackRecord is docs/track-record/record.json: the real bugs locklab reproduced, each
// with a committed plan pinned to an affected release.
const trackRecord = "../../docs/track-record"

type recordedBug struct {
	ID, Impl, Affected, Fixed, Plan string
	// Control is the release without the bug for one not fixed yet: the one before the
	// release that brought it.
	Control string
	Breaks  []string
}

// TestTrackRecord replays every recorded bug's plan on its affected release, where each
// property it breaks must be violated, and with --impl on the release that fixed it (for
// a bug not fixed yet, its control: the release before it came), where none of them may
// be: the track record is a regression suite.
func TestTrackRecord(t *testing.T) {
	if os.Getenv(releases.EnvCache) == "" {
		t.Setenv(releases.EnvCache, t.TempDir())
	}
	data, err := os.ReadFile(filepath.Join(trackRecord, "record.json"))
	if err != nil {
		t.Fatal(err)
	}
	var record struct{ Bugs []recordedBug }
	if err := json.Unmarshal(data, &record); err != nil {
		t.Fatalf("record.json: %v", err)
	}
	if len(record.Bugs) == 0 {
		t.Fatal("record.json records no bug")
	}
	for _, b := range record.Bugs {
		t.Run(b.ID, func(t *testing.T) {
			t.Parallel()
			plan := filepath.Join(trackRecord, b.Plan)
			raw, err := os.ReadFile(plan)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`"impl": %q`, b.Impl+"@"+b.Affected); !strings.Contains(string(raw), want) {
				t.Fatalf("%s is not pinned to the affected release (%s)", plan, want)
			}
			clean := b.Fixed
			if clean == "" {
				clean = b.Control
			}
			if clean == "" {
				t.Fatalf("%s names neither the release that fixed it nor a control", b.ID)
			}
			for _, c := range []struct {
				release  string
				violated bool
			}{{b.Impl + "@" + b.Affected, true}, {b.Impl + "@" + clean, false}} {
				_, stdout, stderr := locklab(t, "replay", plan, "--impl", c.release, "--repeat", "1")
				for _, prop := range b.Breaks {
					got := strings.Contains(stdout, prop+" 1/1")
					if !strings.Contains(stdout, prop+" 0/1") && !got {
						t.Fatalf("%s on %s: no tally of %s\n%s\n%s", b.ID, c.release, prop, stdout, stderr)
					}
					if got != c.violated {
						t.Errorf("%s on %s: %s violated %v, want %v\n%s", b.ID, c.release, prop, got, c.violated, stdout)
					}
				}
			}
		})
	}
}

// TestBisectFindsTheFix: bisect walks from a good release of npm redlock down to a bad one
// and names the neighbours where the recorded bug's property changes: 4.0.0 refuses the
// late release, 3.1.2 does not.
func TestBisectFindsTheFix(t *testing.T) {
	if os.Getenv(releases.EnvCache) == "" {
		t.Setenv(releases.EnvCache, t.TempDir())
	}
	_, stdout, stderr := locklab(t, "bisect", "--impl", "node-redlock", "--good", "4.2.0", "--bad", "3.1.1", "--repeat", "1",
		"--property", "P6", "--versions", "3.1.1,3.1.2,4.0.0,4.2.0", "--plan", filepath.Join(trackRecord, "node-redlock-unlock-votes-missing-keys.json"))
	want := "node-redlock: the verdict changes between 4.0.0 (like --good 4.2.0) and 3.1.2 (like --bad 3.1.1), on P6; 4 releases tried"
	if !strings.Contains(stdout, want) {
		t.Errorf("bisect: want %q\n%s\n%s", want, stdout, stderr)
	}
	_, _, stderr = locklab(t, "bisect", "--impl", "node-redlock", "--good", "4.2.0", "--bad", "3.1.1", "--property", "P9", "--plan", filepath.Join(trackRecord, "node-redlock-unlock-votes-missing-keys.json"))
	if !strings.Contains(stderr, `flag --property "P9": want one of P1, P2, P3, L1, P4, P5, P6`) {
		t.Errorf("bisect --property P9: %s", stderr)
	}
}
