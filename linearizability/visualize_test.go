package linearizability

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/internal/browsertest"
)

func TestHTML(t *testing.T) {
	tests := []struct {
		name    string
		h       histories.History
		verdict Verdict
		has     []string
		hasNot  []string
	}{
		{"illegal", kleppmann("off", histories.OK), Illegal, []string{
			// the fault window, on the faults lane and on client 0's lane
			`"Tag":"faults"`, `"Description":"client-pause client 0"`, `"Description":"client-pause"`,
			"GC pause of 150 ms",
			// the violations, with their explanations
			`"Tag":"violations"`, `"Description":"P1 illegal"`, `"Description":"P2 illegal"`, "lost update",
			// every property's partitions
			"P1 k: p1 acquire → ok", "P2 res: p0 write 1 over 0, fence 1 → ok", "P3 k: p0 acquire → ok, fence 1",
			"op 6: process 0 (client 0), called at 0.200 s, returned at 0.210 s",
		}, []string{`"Description":"P3 illegal"`}},
		{"legal", kleppmann("full", histories.Fail), Illegal, []string{
			`"Description":"client-pause client 0"`, "P2 res: p0 write 1 over 0, fence 1 → fail",
			"P2: {value 1, max fence 2}", // a set: the register is nondeterministic
		}, []string{`"Description":"P2 illegal"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.html")
			res := checkOrFail(t, tt.h, Options{HTMLPath: path})
			if res.Verdict != tt.verdict || res.HTML != path {
				t.Errorf("verdict %s html %q, want %s %q", res.Verdict, res.HTML, tt.verdict, path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			html := string(data)
			for _, s := range tt.has {
				if !strings.Contains(html, s) {
					t.Errorf("visualisation lacks %q", s)
				}
			}
			for _, s := range tt.hasNot {
				if strings.Contains(html, s) {
					t.Errorf("visualisation has %q", s)
				}
			}
		})
	}
}

// TestHTMLInBrowser: Porcupine's page of an illegal history runs in Chromium without a
// script error and draws the operations, the fault and violation lanes and the
// linearization that fails; selecting an operation highlights it.
func TestHTMLInBrowser(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.html")
	checkOrFail(t, kleppmann("off", histories.OK), Options{HTMLPath: path})
	p := browsertest.Open(t, path)
	p.MustHave("#canvas svg", "#canvas rect.history-rect", "#canvas rect.client-annotation-rect",
		"#canvas text.history-text", "#canvas .linearization-invalid", "#legend svg", "#jump-link")
	texts := p.Texts("#canvas svg text")
	for _, want := range []string{"faults", "violations", "P1 illegal", "P2 illegal", "client-pause client 0", "P2 res: p0 write 1 over 0, fence 1 → ok"} {
		if !slices.Contains(texts, want) {
			t.Errorf("the page shows no text %q", want)
		}
	}
	p.Click("#canvas rect.target-rect")
	p.MustHave("#canvas rect.history-rect.selected")
	p.Screenshot()
}

func TestHTMLOfLegalHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.html")
	h := generate(3, 4, 2, 400, 0.05)
	h.Faults = []histories.FaultWindow{{Kind: "latency", Target: "redis 0", Start: ms(1), End: -1}}
	res := checkOrFail(t, h, Options{HTMLPath: path})
	if res.Verdict != OK {
		t.Fatalf("generated history: %s", res)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"Description":"latency redis 0"`) || strings.Contains(string(data), `"Tag":"violations"`) {
		t.Error("visualisation of a legal history should show the fault and no violation")
	}
}

func TestHTMLWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "history.html")
	res, err := Check(kleppmann("off", histories.OK), Options{HTMLPath: path, Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "write visualisation") {
		t.Errorf("error = %v, want a failure to write the visualisation", err)
	}
	if res.Verdict != Illegal || res.HTML != "" {
		t.Errorf("the result should be complete without an HTML path: %+v", res)
	}
}

// TestWriteHTMLAfterCheck: the page drawn after a check without HTMLPath is the page the
// check writes with it, violations and faults included.
func TestWriteHTMLAfterCheck(t *testing.T) {
	for _, h := range []histories.History{kleppmann("off", histories.OK), kleppmann("full", histories.Fail)} {
		dir := t.TempDir()
		during, after := filepath.Join(dir, "during.html"), filepath.Join(dir, "after.html")
		checkOrFail(t, h, Options{HTMLPath: during})
		res := checkOrFail(t, h, Options{})
		res, err := WriteHTML(h, res, after, Options{})
		if err != nil || res.HTML != after {
			t.Fatalf("WriteHTML: %v, html %q", err, res.HTML)
		}
		a, errA := os.ReadFile(during)
		b, errB := os.ReadFile(after)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if string(a) != string(b) {
			t.Errorf("fencing %s: the page drawn after the check differs from the check's own", h.Meta.Fencing)
		}
	}
}
