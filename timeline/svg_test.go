package timeline

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/browsertest"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func renderString(t *testing.T, run Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, run); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// wellFormed decodes the whole output as XML and checks it is self-contained.
func wellFormed(t *testing.T, svg string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "script", "image", "foreignObject":
				t.Errorf("<%s> in the picture", se.Name.Local)
			}
			for _, a := range se.Attr {
				if a.Name.Local == "href" || strings.HasPrefix(a.Name.Local, "on") {
					t.Errorf("attribute %s=%q on <%s>", a.Name.Local, a.Value, se.Name.Local)
				}
			}
		}
	}
	if strings.Contains(strings.ToLower(svg), "<script") || strings.Count(svg, "http://") != 1 { // the xmlns only
		t.Error("script or external reference in the picture")
	}
}

func TestRenderWellFormedAndDeterministic(t *testing.T) {
	run := pausePastTTL()
	a, b := renderString(t, run), renderString(t, run)
	if a != b {
		t.Error("two renders differ")
	}
	wellFormed(t, a)
	for _, want := range []string{`<svg id="timeline"`, `class="lane client" data-client="0"`, `class="lane client" data-client="1"`,
		`class="lane server" data-server="lock-0"`, `class="lane store"`, `class="violation"`, `class="legend"`, `class="danger"`,
		"pause &lt;past&gt; &amp; ttl", "pause 1.57s", `data-verdict="unknown"`} {
		if !contains(a, want) {
			t.Errorf("no %s in the picture", want)
		}
	}
	if n := strings.Count(a, `class="lane client"`); n != 2 {
		t.Errorf("%d client lanes", n)
	}
	if n := strings.Count(a, `class="lane server"`); n != 1 {
		t.Errorf("%d server lanes", n)
	}
}

func TestWritesAcceptedAndRefusedDiffer(t *testing.T) {
	svg := renderString(t, pausePastTTL())
	if n := strings.Count(svg, `class="mark write ok"`); n != 2 { // client lane and store lane
		t.Errorf("%d accepted write marks, want 2", n)
	}
	if n := strings.Count(svg, `class="mark write fail"`); n != 2 {
		t.Errorf("%d refused write marks, want 2", n)
	}
	if !contains(svg, "w 1 f1 ✗ refused") || !contains(svg, "c1 w 1 f2 ✓") {
		t.Error("the write labels are missing")
	}
}

func TestNoViolationNoViolationGroup(t *testing.T) {
	run := pausePastTTL()
	run.Result = linearizability.Result{Verdict: linearizability.OK}
	if svg := renderString(t, run); contains(svg, `class="violation"`) {
		t.Error("a violation group without a violation")
	}
}

func TestEmptyAndFaultsOnly(t *testing.T) {
	for name, h := range map[string]histories.History{
		"empty":       {},
		"faults only": {Faults: []histories.FaultWindow{{Kind: "server-pause", Target: "store", Start: 0, End: -1}, {Kind: "net-reset", Target: "any", Start: 5, End: 9}}},
	} {
		t.Run(name, func(t *testing.T) {
			svg := renderString(t, Run{History: h})
			wellFormed(t, svg)
			if !contains(svg, `class="lane store"`) || !contains(svg, `data-server="lock-0"`) {
				t.Error("store or lock-0 lane missing")
			}
		})
	}
}

// A long run is cropped around the violation; what is left out is counted.
func TestCropKeepsTheViolation(t *testing.T) {
	var ops []histories.Op
	proc := 10
	cycle := func(client int, at int64) { // one critical section: acquire, write, release
		ops = append(ops, acquire(proc, client, at, at+1, 0), write(proc+1, client, at+2, at+3, 1, 0, histories.OK), release(proc, client, at+4, at+5, histories.OK))
		proc += 2
	}
	for at := int64(0); at < 5000; at += 50 { // 100 sections before
		cycle(0, at)
	}
	run := pausePastTTL()
	for _, op := range run.History.Ops {
		op.Call += 5000 * ms
		op.Return += 5000 * ms
		ops = append(ops, op)
	}
	for at := int64(7000); at < 9000; at += 50 { // 40 after
		cycle(1, at)
	}
	h := run.History
	h.Ops = ops
	h.Faults[0].Start += 5000 * ms
	h.Faults[0].End += 5000 * ms
	for i := range run.Result.Properties {
		p := &run.Result.Properties[i]
		if p.Verdict == linearizability.Illegal {
			p.At += 5000 * ms
			p.Until += 5000 * ms
		}
	}
	run.History = h
	m := build(run)
	v := m.violations[0]
	if m.view.from > v.from || m.view.to < v.to {
		t.Fatalf("view %v drops the violation %d–%d", m.view, v.from, v.to)
	}
	if m.view.from > 5010*ms {
		t.Errorf("view starts at %d, after the grant of the belief the violation involves", m.view.from)
	}
	if m.before == nil || m.after == nil {
		t.Fatalf("not cropped: %+v", m.view)
	}
	before, after := 0, 0 // the cycles wholly outside the view (each ends 5 ms after it starts)
	for at := int64(0); at < 5000; at += 50 {
		if (at+5)*ms < m.view.from {
			before++
		}
	}
	for at := int64(7000); at < 9000; at += 50 {
		if at*ms > m.view.to {
			after++
		}
	}
	if before < 90 || after < 30 {
		t.Fatalf("the view %+v keeps too much", m.view)
	}
	if m.before.ops != 3*before || m.before.sections != before || m.before.violations != 0 || m.before.faults != 0 {
		t.Errorf("before: %+v, want %d ops, %d sections", *m.before, 3*before, before)
	}
	if m.after.ops != 3*after || m.after.sections != after {
		t.Errorf("after: %+v, want %d ops, %d sections", *m.after, 3*after, after)
	}
	svg := renderString(t, run)
	wellFormed(t, svg)
	want := fmt.Sprintf("0.000–%.3f s not drawn: %d operations, %d critical sections, 0 violations", float64(m.view.from)/1e9, 3*before, before)
	if !contains(svg, want) {
		t.Errorf("no summary line for %s", m.before)
	}
}

func TestShortRunNotCropped(t *testing.T) {
	m := build(pausePastTTL())
	if m.before != nil || m.after != nil || m.view.from != 0 {
		t.Errorf("a short run is cropped: %+v", m.view)
	}
}

// The samples in testdata are real runs; each renders.
func TestSamples(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), File)
			if err := Write(path, sampleRun(t, dir)); err != nil {
				t.Fatal(err)
			}
			svg, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			wellFormed(t, string(svg))
			if !contains(string(svg), `class="violation"`) || !contains(string(svg), `class="danger"`) {
				t.Error("the restart's violation or danger zone is not drawn")
			}
		})
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		step int64
		text string
	}{{time.Second, int64(100 * time.Millisecond), "0.3"}, {300 * time.Millisecond, int64(50 * time.Millisecond), "0.15"}, {20 * time.Second, int64(2 * time.Second), "6"}} {
		if got := niceStep(int64(c.d)); got != c.step {
			t.Errorf("step for %s: %d, want %d", c.d, got, c.step)
		}
		if got := tickText(3*c.step, c.step); got != c.text {
			t.Errorf("tick %s, want %s", got, c.text)
		}
	}
}

// TestTimelineInBrowser: the picture opens in Chromium on its own, with every lane, the
// violation and the legend.
func TestTimelineInBrowser(t *testing.T) {
	path := filepath.Join(t.TempDir(), File)
	if err := Write(path, pausePastTTL()); err != nil {
		t.Fatal(err)
	}
	b := browsertest.Open(t, path)
	b.MustHave("svg#timeline", "g.header", "g.lane.client[data-client='0']", "g.lane.client[data-client='1']",
		"g.lane.server[data-server='lock-0']", "g.lane.store", "g.violation rect.band.first", "g.legend", "g.axis",
		"rect.belief", "rect.danger", "g.lease", "rect.fault[data-kind='client-pause']", "g.mark.write.fail")
	b.Screenshot()
}
