package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/internal/browsertest"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/timeline"
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

// TestDemoPageInBrowser: the page and the two timelines it embeds load in Chromium
// without an error, side by side on a wide screen.
func TestDemoPageInBrowser(t *testing.T) {
	dir := t.TempDir()
	d := Demo{Scenario: "pause-past-ttl", Description: "Kleppmann's pause."}
	for _, mode := range []string{"off", "full"} {
		run := filepath.Join(dir, "run-"+mode)
		if err := os.MkdirAll(run, 0o755); err != nil {
			t.Fatal(err)
		}
		svg := `<svg xmlns="http://www.w3.org/2000/svg" id="timeline" width="600" height="80"><text x="10" y="40">fencing ` + mode + `</text></svg>`
		for name, body := range map[string]string{timeline.File: svg, "history.html": "<!DOCTYPE html><title>h</title>"} {
			if err := os.WriteFile(filepath.Join(run, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d.Runs = append(d.Runs, DemoRun{Title: mode, Fencing: mode, Result: demoResult(lin.P1),
			Timeline: "run-" + mode + "/" + timeline.File, Porcupine: "run-" + mode + "/history.html", Narration: "story"})
	}
	page, err := DemoHTML(d)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pause-past-ttl.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.Open(t, path)
	b.MustHave("main#demo", "section.run[data-fencing=off] object.timeline", "section.run[data-fencing=full] object.timeline",
		"tr.illegal", "a.porcupine[href$='/history.html']", "details pre.narration")
	if n := b.Count("object.timeline"); n != 2 {
		t.Errorf("%d timelines on the page, want 2", n)
	}
	b.Screenshot()
}
