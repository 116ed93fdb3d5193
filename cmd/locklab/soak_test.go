package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSoakThenCheck soaks a small plan whose recurring pause loses an update at every
// strike (by construction: client 0 is held until client 1 took the lock, wrote and
// released it), then checks its segments offline: both exit 1 with the same verdicts, and
// the violations were written while it ran, each with a plan that replays.
func TestSoakThenCheck(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := locklab(t, "soak", "--impl", "fenced", "--fencing", "off", "--clients", "2", "--keys", "1",
		"--ttl", "300ms", "--duration", "4s", "--segment-ops", "300", "--out", out,
		"--fault", "client-pause:at=200ms,duration=1s,target=client:0,point=before-write,until=client:1@after-release,every=1500ms")
	if code != exitViolation {
		t.Fatalf("soak: exit %d, want %d\n%s\n%s", code, exitViolation, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-fencing-off"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v", dirs)
	}
	vs, _ := filepath.Glob(filepath.Join(dirs[0], "violations", "*"))
	if len(vs) < 2 {
		t.Errorf("%d violation directories, want one per strike", len(vs))
	}
	for _, v := range vs {
		if _, err := os.Stat(filepath.Join(v, "plan.json")); err != nil {
			t.Fatal(err)
		}
	}
	code, checked, _ := locklab(t, "check", dirs[0])
	if code != exitViolation {
		t.Fatalf("check: exit %d\n%s", code, checked)
	}
	verdicts := func(s string) []string { // "P1 illegal", … from the result's table
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) >= 2 && (strings.HasPrefix(f[0], "P") || f[0] == "L1") && len(f[0]) == 2 {
				lines = append(lines, f[0]+" "+f[1])
			}
		}
		return lines
	}
	if a, b := verdicts(stdout), verdicts(checked); strings.Join(a, ",") != strings.Join(b, ",") || len(a) != 7 {
		t.Errorf("soak's verdicts %v, check's %v", a, b)
	}
	if !strings.Contains(stdout, "P2  illegal") {
		t.Errorf("soak found no lost update:\n%s", stdout)
	}
	code, replayOut, stderr := locklab(t, "run", "--plan", filepath.Join(vs[0], "plan.json"), "--out", out)
	if code != exitViolation && code != exitOK {
		t.Fatalf("replay of a violation's plan: exit %d\n%s\n%s", code, replayOut, stderr)
	}
}

// TestSoakDrawsFaults: --draw-faults draws one fault per slot of the kinds asked for,
// written into the run's plan.json in place of the plan's own; the flags' mistakes are
// named.
func TestSoakDrawsFaults(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := locklab(t, "soak", "--impl", "fenced", "--ttl", "200ms", "--duration", "3s", "--out", out,
		"--draw-faults", "1s", "--fault-kinds", "client-pause,net-latency")
	if code != exitOK && code != exitViolation { // a drawn pause past the lease breaks P1: a verdict, not an error
		t.Fatalf("soak: exit %d\n%s\n%s", code, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*", "plan.json"))
	if len(dirs) != 1 {
		t.Fatalf("plans %v", dirs)
	}
	var p struct {
		Faults []struct{ Kind, At, Trigger string }
	}
	data, err := os.ReadFile(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Faults) != 3 {
		t.Fatalf("%d faults in the run's plan, want 3: %s", len(p.Faults), data)
	}
	for _, f := range p.Faults {
		if (f.Kind != "client-pause" && f.Kind != "net-latency") || f.Trigger != "" {
			t.Errorf("drew %+v", f)
		}
	}
	for _, c := range [][]string{
		{"--fault-kinds", "server-pause"},
		{"--draw-faults", "10s"},
		{"--draw-faults", "1s", "--fault-kinds", "nonsense"},
	} {
		code, _, stderr := locklab(t, append([]string{"soak", "--duration", "3s", "--out", out}, c...)...)
		if code != exitError || !strings.Contains(stderr, "flag --") {
			t.Errorf("%v: exit %d, %s; want exit %d naming the flag", c, code, stderr, exitError)
		}
	}
}
