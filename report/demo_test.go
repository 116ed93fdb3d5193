package report

import (
	"strings"
	"testing"

	lin "github.com/locklab/locklab/linearizability"
)

// demoResult is a result that violates the given properties.
func demoResult(illegal ...lin.Property) lin.Result {
	res := lin.Result{Verdict: lin.OK}
	for _, p := range []lin.Property{lin.P1, lin.P2, lin.P3, lin.L1} {
		pr := lin.PropertyResult{Property: p, Verdict: lin.OK}
		for _, q := range illegal {
			if p == q {
				pr.Verdict, pr.Explanation, res.Verdict = lin.Illegal, string(p)+" broke", lin.Illegal
			}
		}
		res.Properties = append(res.Properties, pr)
	}
	return res
}

func TestDemoPage(t *testing.T) {
	off, full := demoResult(lin.P1, lin.P2), demoResult(lin.P1)
	page, err := DemoHTML(Demo{
		Scenario: "pause-past-ttl", Description: "a <script>alert(1)</script> pause", Command: "locklab demo pause-past-ttl",
		Runs: []DemoRun{
			{Title: "off", Fencing: "off", Result: off, Timeline: "run-off/timeline.svg", Porcupine: "run-off/history.html", Narration: "  0.001 s  client 0 acquired k0\n"},
			{Title: "full", Fencing: "full", Result: full, Timeline: "run-full/timeline.svg", Porcupine: "run-full/history.html"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, want := range []string{
		`<section class="run" data-fencing="off">`, `<section class="run" data-fencing="full">`,
		`<object class="timeline" type="image/svg+xml" data="run-off/timeline.svg"`, `href="run-full/history.html"`,
		`<tr class="illegal"><th>P2 resource safety</th><td>illegal</td></tr>`, `<tr class="ok"><th>P2 resource safety</th><td>ok</td></tr>`,
		"grid-template-columns: repeat(2,", "&lt;script&gt;",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("demo page lacks %q", want)
		}
	}
	if strings.Contains(s, "<script>") {
		t.Error("the demo page has a script (or an unescaped one)")
	}
}
