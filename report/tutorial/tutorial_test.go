package tutorial

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/timeline"
)

// fakeRun is a run directory with a timeline and a result that violates the given
// properties.
func fakeRun(t *testing.T, svg string, illegal ...lin.Property) ExperimentRun {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, timeline.File), []byte(svg), 0o644); err != nil {
		t.Fatal(err)
	}
	res := lin.Result{Verdict: lin.OK}
	for _, p := range []lin.Property{lin.P1, lin.P2, lin.P3, lin.L1} {
		pr := lin.PropertyResult{Property: p, Verdict: lin.OK}
		for _, q := range illegal {
			if p == q {
				pr.Verdict, pr.Explanation, res.Verdict = lin.Illegal, string(p)+" broke at 1.000 s", lin.Illegal
			}
		}
		res.Properties = append(res.Properties, pr)
	}
	return ExperimentRun{Dir: dir, Result: res, Narration: "  0.001 s  client 0 acquired k0\n"}
}

func TestTutorialFromRuns(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "t.md.tmpl")
	src := `{{$e := run "pause-past-ttl" "name=pause"}}# {{$e.Name}}
{{$e.Command}}
{{picture $e "off"}}
{{verdicts $e}}
P1 off {{count $e "off" "P1"}}, full {{count $e "full" "P1"}}; P2 full {{count $e "full" "P2"}}.
{{explain $e "off" "P1"}}|{{explain $e "full" "P2"}}|{{expect $e "off" "P1" "violated"}}{{expect $e "full" "P2" "held"}}|
{{narration $e "off"}}
{{tla "Redlock5_clockjump"}}
`
	if err := os.WriteFile(tmpl, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	pics := t.TempDir()
	var asked []string
	tu := &Tutorial{
		Run: func(source string, settings []string) (*Experiment, error) {
			asked = append(asked, source+" "+strings.Join(settings, " "))
			return &Experiment{Name: "pause", Command: "locklab run --scenario pause-past-ttl", Fencings: []string{"off", "full"},
				Runs: map[string][]ExperimentRun{
					// the picture comes from the most common outcome, not from the first run
					"off":  {fakeRun(t, "<svg>rare</svg>"), fakeRun(t, "<svg>common</svg>", lin.P1, lin.P2), fakeRun(t, "<svg>common2</svg>", lin.P1, lin.P2)},
					"full": {fakeRun(t, "<svg/>", lin.P1), fakeRun(t, "<svg/>", lin.P1), fakeRun(t, "<svg/>")},
				}}, nil
		},
		Pictures: pics, Link: "tutorial", Root: "../..",
	}
	var b bytes.Buffer
	if err := tu.Write(&b, tmpl); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{
		"# pause", "![pause, fencing off: timeline of a real run](tutorial/pause-fencing-off.svg)",
		"| P1 mutual exclusion | **violated 2/3** | **violated 2/3** |", "| P2 resource safety | **violated 2/3** | held 3/3 |",
		"P1 off 2/3, full 2/3; P2 full 0/3.", "P1 broke at 1.000 s|||", "client 0 acquired k0",
		"invariant `MutualExclusion` violated", "[trace](../tla/testdata/Redlock5_clockjump.trace)", "1. t = 0: `init`",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("tutorial lacks %q:\n%s", want, doc)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(pics, "pause-fencing-off.svg")); string(got) != "<svg>common</svg>" {
		t.Errorf("picture = %q, want the first run with the most common verdict", got)
	}
	if len(asked) != 1 || asked[0] != "pause-past-ttl name=pause" {
		t.Errorf("experiments asked for: %q", asked)
	}
}

func TestTutorialClaimsAreChecked(t *testing.T) {
	e := &Experiment{Name: "x", Fencings: []string{"off"}, Runs: map[string][]ExperimentRun{
		"off": {fakeRun(t, "", lin.P1), fakeRun(t, ""), fakeRun(t, "")},
	}}
	if _, err := expectation(e, "off", "P1", "violated"); err == nil || !strings.Contains(err.Error(), "only 1 of 3 runs") {
		t.Errorf("violated in 1 of 3 runs passed as violated: %v", err)
	}
	if _, err := expectation(e, "off", "P1", "held"); err == nil || !strings.Contains(err.Error(), "1 of 3 runs violated it") {
		t.Errorf("violated in 1 of 3 runs passed as held: %v", err)
	}
	if _, err := expectation(e, "off", "P2", "held"); err != nil {
		t.Errorf("P2 held in every run: %v", err)
	}
	if _, err := expectation(e, "off", "P2", "fine"); err == nil {
		t.Error("an unknown claim passed")
	}
}

func TestTutorialErrorsSayWhere(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "bad.md.tmpl")
	if err := os.WriteFile(tmpl, []byte("line one\n{{$e := run \"x\"}}{{picture $e \"writes\"}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tu := &Tutorial{Run: func(string, []string) (*Experiment, error) {
		return &Experiment{Name: "x", Fencings: []string{"off"}, Runs: map[string][]ExperimentRun{"off": {fakeRun(t, "<svg/>")}}}, nil
	}, Pictures: t.TempDir(), Link: "p", Root: "../.."}
	err := tu.Write(&bytes.Buffer{}, tmpl)
	if err == nil || !strings.Contains(err.Error(), "bad.md.tmpl:2") || !strings.Contains(err.Error(), "no run with fencing writes") {
		t.Fatalf("error = %v, want the template's line and the missing fencing mode", err)
	}
	if err := tu.Write(&bytes.Buffer{}, filepath.Join(t.TempDir(), "missing.tmpl")); err == nil {
		t.Fatal("a missing template gave no error")
	}
}
