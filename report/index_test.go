package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/browsertest"
	"github.com/locklab/locklab/internal/gate"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/campaign/detection"
	"github.com/locklab/locklab/campaign/merge"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/timeline"
)

// hostile is a name that must reach the page as text, never as markup.
const hostile = `<script>alert("x")</script>&`

// node is an element of a parsed page.
type node struct {
	name     string
	attr     map[string]string
	children []*node
	text     strings.Builder // all text inside, children's included
}

// parsePage parses an index page strictly, as XML: every element closed and nested, every
// attribute quoted, nothing unescaped. The pages are written so that this holds.
func parsePage(t *testing.T, page []byte) *node {
	t.Helper()
	if bytes.Contains(bytes.ToLower(page), []byte("<script")) {
		t.Errorf("page has a <script> element:\n%s", page)
	}
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	root := &node{name: "#document", attr: map[string]string{}}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("page is not well-formed: %v\n%s", err, page)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			for _, n := range stack {
				n.text.Write(tok)
			}
		}
	}
	if len(stack) != 1 {
		t.Fatalf("page has %d unclosed elements", len(stack)-1)
	}
	ids := map[string]bool{}
	for _, n := range root.all(func(n *node) bool { return n.attr["id"] != "" }) {
		if ids[n.attr["id"]] {
			t.Errorf("id %q used twice", n.attr["id"])
		}
		ids[n.attr["id"]] = true
	}
	return root
}

// all is every element under n (n excluded) that match accepts, in document order.
func (n *node) all(match func(*node) bool) []*node {
	var out []*node
	for _, c := range n.children {
		if match(c) {
			out = append(out, c)
		}
		out = append(out, c.all(match)...)
	}
	return out
}

func (n *node) hasClass(c string) bool { return slices.Contains(strings.Fields(n.attr["class"]), c) }

// byID is the element with the id, or fails the test.
func (n *node) byID(t *testing.T, id string) *node {
	t.Helper()
	found := n.all(func(c *node) bool { return c.attr["id"] == id })
	if len(found) != 1 {
		t.Fatalf("%d elements with id %q", len(found), id)
	}
	return found[0]
}

// hrefs is the href of every link of class c under n, in document order.
func (n *node) hrefs(c string) []string {
	var out []string
	for _, a := range n.all(func(x *node) bool { return x.name == "a" && x.hasClass(c) }) {
		out = append(out, a.attr["href"])
	}
	return out
}

// rows is the tr elements under n that have the attribute.
func (n *node) rows(attr string) []*node {
	return n.all(func(x *node) bool { return x.name == "tr" && x.attr[attr] != "" })
}

// assertLinksResolve checks that every link of the page is relative and leads to a file
// under (or beside) dir.
// readIndex parses dir's index.html and checks that every link on it resolves.
func readIndex(t *testing.T, dir string) *node {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	root := parsePage(t, page)
	assertLinksResolve(t, dir, root)
	return root
}

func assertLinksResolve(t *testing.T, dir string, root *node) {
	t.Helper()
	for _, a := range root.all(func(x *node) bool { return x.name == "a" }) {
		href := a.attr["href"]
		u, err := url.Parse(href)
		if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(href, "/") || href == "" {
			t.Errorf("link %q is not a relative path", href)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(u.Path))); err != nil {
			t.Errorf("link %q leads nowhere: %v", href, err)
		}
	}
}

// touch creates files (paths relative to dir, forward slashes).
func touch(t *testing.T, dir string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sampleMatrix: two implementations (one with a hostile name) on two scenarios, fencing
// off; the run of baseline × setnx has a picture, the run of pause × setnx is an old
// directory without one, the hostile implementation's pause run failed to run.
func sampleMatrix() matrix.Result {
	ok := map[lin.Property]lin.Verdict{lin.P1: lin.OK, lin.P2: lin.OK, lin.P3: lin.NA, lin.L1: lin.OK}
	bad := map[lin.Property]lin.Verdict{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.NA, lin.L1: lin.OK}
	run := func(dir string, v map[lin.Property]lin.Verdict, verdict lin.Verdict) []matrix.CellRun {
		return []matrix.CellRun{{Index: 0, Seed: 7, Dir: dir, Link: dir + "/history.html", Verdict: verdict, Verdicts: v}}
	}
	cells := []matrix.Cell{
		{Scenario: "baseline", Impl: "setnx", Fencing: "off", Status: matrix.CellPlanned, Runs: run("runs/baseline/setnx/off/0", ok, lin.OK)},
		{Scenario: "baseline", Impl: hostile, Fencing: "off", Status: matrix.CellPlanned, Runs: run("runs/baseline/h/off/0", ok, lin.OK)},
		{Scenario: "pause", Impl: "setnx", Fencing: "off", Status: matrix.CellPlanned, Runs: run("runs/pause/setnx/off/0", bad, lin.Illegal)},
		{Scenario: "pause", Impl: hostile, Fencing: "off", Status: matrix.CellPlanned,
			Runs: []matrix.CellRun{{Index: 0, Seed: 7, Dir: "runs/pause/h/off/0", Link: "runs/pause/h/off/0/error.txt", Error: "start: " + hostile}}},
	}
	m := matrix.Result{
		Meta:      matrix.Meta{Command: "locklab matrix --impl setnx", Date: "2026-01-02T03:04:05Z", Repeat: 1, Runs: 4, Planned: 4, Errors: 1, Complete: true},
		Impls:     []matrix.Impl{{Name: "setnx", FenceSource: matrix.FenceSourceNone}, {Name: hostile, Description: hostile, FenceSource: matrix.FenceSourceLock}},
		Scenarios: []matrix.Scenario{{Name: "baseline"}, {Name: "pause", Description: hostile}},
		Fencings:  []string{"off"},
		Cells:     cells,
	}
	for i := range m.Cells {
		m.Cells[i].Counts = map[lin.Property]matrix.VerdictCounts{}
		for _, r := range m.Cells[i].Runs {
			for p, v := range r.Verdicts {
				c := m.Cells[i].Counts[p]
				switch v {
				case lin.OK:
					c.OK++
				case lin.Illegal:
					c.Illegal++
				}
				m.Cells[i].Counts[p] = c
			}
			if r.Error != "" {
				m.Cells[i].Errors++
			}
		}
	}
	return m
}

// TestMatrixIndex: index.html has one verdict table per fencing mode, links each run's
// picture and Porcupine page where they exist (and only there), lists every run, and
// shows a hostile name as text.
func TestMatrixIndex(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir,
		"runs/baseline/setnx/off/0/"+timeline.File, "runs/baseline/setnx/off/0/history.html", "runs/baseline/setnx/off/0/plan.json",
		"runs/baseline/h/off/0/"+timeline.File, "runs/baseline/h/off/0/history.html",
		"runs/pause/setnx/off/0/history.html", // an old run directory: no picture
		"runs/pause/h/off/0/error.txt")
	m := sampleMatrix()
	if err := WriteMatrix(dir, m); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, matrix.HTMLFile)); err != nil {
		t.Errorf("matrix.html is no longer written: %v", err)
	}
	root := parsePage(t, page)
	assertLinksResolve(t, dir, root)

	table := root.byID(t, "verdicts-off")
	if !table.hasClass("verdicts") || table.attr["data-fencing"] != "off" {
		t.Errorf("verdict table: attributes %v", table.attr)
	}
	if got, want := table.hrefs("timeline"), []string{"runs/baseline/setnx/off/0/timeline.svg", "runs/baseline/h/off/0/timeline.svg"}; !slices.Equal(got, want) {
		t.Errorf("timeline links in the verdict table: %q, want %q", got, want)
	}
	if got, want := table.hrefs("porcupine"), []string{"runs/baseline/setnx/off/0/history.html", "runs/baseline/h/off/0/history.html", "runs/pause/setnx/off/0/history.html"}; !slices.Equal(got, want) {
		t.Errorf("porcupine links in the verdict table: %q, want %q", got, want)
	}
	cells := table.all(func(n *node) bool { return n.name == "td" && n.hasClass("cell") })
	if len(cells) != 4 {
		t.Fatalf("%d cells, want 4", len(cells))
	}
	pause := cells[2]
	if pause.attr["data-scenario"] != "pause" || pause.attr["data-impl"] != "setnx" || !pause.hasClass("illegal") ||
		!strings.Contains(pause.text.String(), "P1 1/1") {
		t.Errorf("pause × setnx cell: %v %q", pause.attr, pause.text.String())
	}
	if n := len(pause.all(func(n *node) bool { return n.hasClass("no-picture") })); n != 1 {
		t.Errorf("pause × setnx (no timeline.svg): %d no-picture marks, want 1", n)
	}
	if cells[1].attr["data-impl"] != hostile {
		t.Errorf("hostile implementation's cell: data-impl %q", cells[1].attr["data-impl"])
	}
	if got := cells[3].hrefs("error-file"); !slices.Equal(got, []string{"runs/pause/h/off/0/error.txt"}) {
		t.Errorf("a run that failed to run links %q, want its error.txt", got)
	}

	runs := root.byID(t, "runs").rows("data-dir")
	if len(runs) != 4 {
		t.Fatalf("runs table: %d rows, want 4", len(runs))
	}
	if r := runs[0]; r.attr["data-dir"] != "runs/baseline/setnx/off/0" || !slices.Equal(r.hrefs("timeline"), []string{"runs/baseline/setnx/off/0/timeline.svg"}) ||
		!slices.Equal(r.hrefs("porcupine"), []string{"runs/baseline/setnx/off/0/history.html"}) || !slices.Equal(r.hrefs("plan"), []string{"runs/baseline/setnx/off/0/plan.json"}) {
		t.Errorf("first run's row: %v, links %q %q", r.attr, r.hrefs("timeline"), r.hrefs("porcupine"))
	}
	if r := runs[3]; !strings.Contains(r.text.String(), "failed to run: start: "+hostile) || len(r.hrefs("porcupine")) != 0 {
		t.Errorf("failed run's row: %q", r.text.String())
	}
	head := root.all(func(n *node) bool { return n.name == "th" && n.attr["data-impl"] == hostile })
	if len(head) != 1 || !strings.HasPrefix(head[0].text.String(), hostile) {
		t.Errorf("hostile implementation's heading not shown as text: %d headings", len(head))
	}
	if !strings.Contains(root.byID(t, "intro").text.String(), "locklab matrix --impl setnx") {
		t.Errorf("intro: %q", root.byID(t, "intro").text.String())
	}

	// In a real browser: no script error, the tables and links are there.
	b := browsertest.Open(t, filepath.Join(dir, IndexFile))
	b.MustHave("section#verdicts table.verdicts#verdicts-off", "td.cell.illegal", "a.timeline[href$='/timeline.svg']", "a.porcupine", "table#runs", "span.no-picture")
	b.Screenshot()
}

// campaignFiles are the files of sampleSummary's runs: run 0 with its picture, its shrunk
// run without one (history.html only), the error run's error.txt; run 1's directory is
// gone.
func campaignFiles(t *testing.T, dir string) {
	touch(t, dir, "runs/00000/"+timeline.File, "runs/00000/history.html", "runs/00000/plan.json",
		"failures/x/plan.json", "failures/x/report/history.html",
		"runs/err/error.txt", "runs/err/plan.json")
}

// TestCampaignIndex: the verdict, the header, the property table and the failures with
// their runs' and shrunk runs' links, relative to the page; hostile names as text.
func TestCampaignIndex(t *testing.T) {
	dir := t.TempDir()
	campaignFiles(t, dir)
	s := sampleSummary()
	s.Failures[1].Impl = hostile
	s.FirstDetection = map[string]campaign.First{"pause-past-ttl": {Run: 0, Runs: 1, After: plan.D(2 * time.Second), Plan: "runs/00000/plan.json"}}
	s.Failures[0].Confirmed = []string{"pause-past-ttl"}
	if err := WriteCampaign(dir, s); err != nil {
		t.Fatal(err)
	}
	root := readIndex(t, dir)

	v := root.byID(t, "verdict")
	if !v.hasClass("fail") || !strings.HasPrefix(v.text.String(), "FAIL: 1 safe-configuration violations, 1 findings") {
		t.Errorf("verdict: %v %q", v.attr, v.text.String())
	}
	header := root.byID(t, "header").text.String()
	for _, want := range []string{"seed9", "shard0/1", "plans run3", "plans/min0.0 per runner", "safe-configuration violations1", "findings1"} {
		if !strings.Contains(header, want) {
			t.Errorf("header lacks %q: %q", want, header)
		}
	}
	props := root.byID(t, "verdicts").rows("data-property")
	if len(props) != len(lin.AllProperties()) || !props[0].hasClass("illegal") || !strings.Contains(props[0].text.String(), "run 0") ||
		!slices.Equal(props[0].hrefs("timeline"), []string{"runs/00000/timeline.svg"}) {
		t.Errorf("property table: %d rows; P1 %q", len(props), props[0].text.String())
	}
	if got := root.byID(t, "classes").hrefs("porcupine"); !slices.Equal(got, []string{"runs/00000/history.html"}) {
		t.Errorf("classes table links %q", got)
	}

	rows := root.byID(t, "failures").rows("data-run")
	if len(rows) != 2 {
		t.Fatalf("failures table: %d rows, want 2", len(rows))
	}
	safe, finding := rows[0], rows[1]
	if !safe.hasClass("safe") || safe.attr["data-dir"] != "runs/00000" {
		t.Errorf("safe-configuration violation's row: %v", safe.attr)
	}
	runLinks := safe.all(func(n *node) bool { return n.hasClass("run-links") })[0]
	if !slices.Equal(runLinks.hrefs("timeline"), []string{"runs/00000/timeline.svg"}) || !slices.Equal(runLinks.hrefs("porcupine"), []string{"runs/00000/history.html"}) {
		t.Errorf("failing run's links: %q %q", runLinks.hrefs("timeline"), runLinks.hrefs("porcupine"))
	}
	shrunk := safe.all(func(n *node) bool { return n.hasClass("shrunk-run") })[0]
	if len(shrunk.hrefs("timeline")) != 0 || !slices.Equal(shrunk.hrefs("porcupine"), []string{"failures/x/report/history.html"}) ||
		len(shrunk.all(func(n *node) bool { return n.hasClass("no-picture") })) != 1 {
		t.Errorf("shrunk run's links: %q %q", shrunk.hrefs("timeline"), shrunk.hrefs("porcupine"))
	}
	if got := safe.hrefs("shrunk-plan"); !slices.Equal(got, []string{"failures/x/plan.json"}) {
		t.Errorf("shrunk plan link %q", got)
	}
	text := safe.text.String()
	for _, want := range []string{"P1, P2 illegal", "expected to hold: P2", "pause-past-ttl", "P2 reproduced 1/1", "class pause-past-ttl confirmed", "faults 2→1", `two writers <&> "quoted"`} {
		if !strings.Contains(text, want) {
			t.Errorf("safe row lacks %q: %q", want, text)
		}
	}
	if !finding.hasClass("finding") || len(finding.hrefs("timeline")) != 0 || len(finding.all(func(n *node) bool { return n.hasClass("no-picture") })) != 1 ||
		!strings.Contains(finding.text.String(), hostile+" single fencing off") || !strings.Contains(finding.text.String(), "not re-run") {
		t.Errorf("finding's row (its directory gone, a hostile implementation): %q", finding.text.String())
	}
	errs := root.byID(t, "errors").rows("data-run")
	if len(errs) != 1 || !slices.Equal(errs[0].hrefs("error-file"), []string{"runs/err/error.txt"}) || !strings.Contains(errs[0].text.String(), "boom") {
		t.Errorf("errors table: %d rows", len(errs))
	}

	b := browsertest.Open(t, filepath.Join(dir, IndexFile))
	b.MustHave("p#verdict.fail", "table#verdicts", "table#failures tr.safe", "td.run-links a.timeline", "a.porcupine", "table#classes")
	b.Screenshot()
}

// TestMergedCampaignIndex: a merged summary's paths lead out of its directory into the
// shards'; the index links them from where it is.
func TestMergedCampaignIndex(t *testing.T) {
	root := t.TempDir()
	shard, out := filepath.Join(root, "shard0"), filepath.Join(root, "all")
	touch(t, shard, "runs/00003/"+timeline.File, "runs/00003/history.html")
	s := &campaign.Summary{Seed: 1, Shard: "0/2", Runs: 4, Findings: 1, Violations: map[lin.Property]int{lin.P1: 1},
		Failures:      []*campaign.Failure{{Run: 3, Impl: "setnx", Illegal: []lin.Property{lin.P1}, Dir: "runs/00003", Plan: "runs/00003/plan.json"}},
		PerturbedRuns: []*campaign.RunError{{Run: 2, Dir: "runs/00003", Error: "timer stalled"}}, Perturbed: 1}
	m := merge.Merge(out, []string{shard}, []*campaign.Summary{s})
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteCampaign(out, m); err != nil {
		t.Fatal(err)
	}
	doc := readIndex(t, out)
	if got := doc.byID(t, "failures").hrefs("timeline"); !slices.Equal(got, []string{"../shard0/runs/00003/timeline.svg"}) {
		t.Errorf("merged failure's timeline link %q", got)
	}
	if got := doc.byID(t, "perturbed").hrefs("porcupine"); !slices.Equal(got, []string{"../shard0/runs/00003/history.html"}) {
		t.Errorf("perturbed run's link %q", got)
	}
	if v := doc.byID(t, "verdict"); !v.hasClass("pass") || !strings.HasPrefix(v.text.String(), "PASS") {
		t.Errorf("verdict %q", v.text.String())
	}
	if !strings.Contains(doc.byID(t, "header").text.String(), "shardmerged") {
		t.Errorf("header: %q", doc.byID(t, "header").text.String())
	}
}

// TestDetectionIndex: the detection table links each class search's own index and the
// run of the first detection; the false-alarm table its campaigns.
func TestDetectionIndex(t *testing.T) {
	dir := t.TempDir()
	const class = "pause-past-ttl"
	found := &campaign.Summary{Seed: 1, Shard: "0/1", Class: class, Runs: 3, Detected: true,
		FirstDetection: map[string]campaign.First{class: {Run: 2, Runs: 3, After: plan.D(1500 * time.Millisecond), Plan: "runs/00002/plan.json"}}}
	missed := &campaign.Summary{Seed: 2, Shard: "0/1", Class: class, Runs: 5}
	calm := &campaign.Summary{Seed: 1, Shard: "0/1", Runs: 10}
	for rel, s := range map[string]*campaign.Summary{class + "/1": found, class + "/2": missed, "fault-free/setnx/1": calm, "faulted/renewal/1": calm} {
		d := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := campaign.WriteSummary(d, s); err != nil {
			t.Fatal(err)
		}
		if err := WriteCampaign(d, s); err != nil {
			t.Fatal(err)
		}
	}
	touch(t, dir, class+"/1/runs/00002/"+timeline.File, class+"/1/runs/00002/history.html")
	r := detection.Result{Seeds: 2, FirstSeed: 1, MaxRuns: 5, GoVersion: "go1.26", Elapsed: plan.D(time.Minute),
		Rows:        []detection.Row{{Class: class, Detect: []lin.Property{lin.P1}, Seeds: 2, Found: 1, Times: []plan.Duration{plan.D(1500 * time.Millisecond)}, Plans: []int{3}, Missed: []int64{2}}},
		FalseAlarms: []detection.FalseAlarms{{Impl: "setnx", Plans: 10, Claims: campaign.ClaimCount{Held: 30, Undecided: 2}}}, ClaimedPairs: 30,
		Faulted: []detection.FamilyAlarms{{Family: "renewal", Plans: 10, Claims: campaign.ClaimCount{Held: 31, Violated: 1}}}}
	if err := WriteDetectionIndex(dir, r, "locklab detection "+hostile); err != nil {
		t.Fatal(err)
	}
	root := readIndex(t, dir)
	if v := root.byID(t, "verdict"); !v.hasClass("fail") || !strings.Contains(v.text.String(), "0 of 1 classes found by every seed, 1 false alarms") {
		t.Errorf("verdict %q", v.text.String())
	}
	if !strings.Contains(root.byID(t, "intro").text.String(), "locklab detection "+hostile) {
		t.Errorf("intro lost the command: %q", root.byID(t, "intro").text.String())
	}
	rows := root.byID(t, "detections").rows("data-class")
	if len(rows) != 1 {
		t.Fatalf("detection table: %d rows", len(rows))
	}
	row := rows[0]
	if got := row.hrefs("campaign"); !slices.Equal(got, []string{class + "/1/index.html", class + "/2/index.html"}) {
		t.Errorf("class searches linked %q", got)
	}
	first := row.all(func(n *node) bool { return n.hasClass("first-detection") })[0]
	if !slices.Equal(first.hrefs("timeline"), []string{class + "/1/runs/00002/timeline.svg"}) || !slices.Equal(first.hrefs("porcupine"), []string{class + "/1/runs/00002/history.html"}) {
		t.Errorf("first detection's links %q %q", first.hrefs("timeline"), first.hrefs("porcupine"))
	}
	for _, want := range []string{"1/2", "> 1.5s (missed)", "> 5 (missed)", "found after 1.5s, 3 plans", "not found in 5 plans"} {
		if !strings.Contains(row.text.String(), want) {
			t.Errorf("class row lacks %q: %q", want, row.text.String())
		}
	}
	fa := root.byID(t, "false-alarms").rows("data-impl")
	if len(fa) != 1 || !slices.Equal(fa[0].hrefs("campaign"), []string{"fault-free/setnx/1/index.html"}) || !strings.Contains(fa[0].text.String(), "30") {
		t.Errorf("false-alarm table: %d rows", len(fa))
	}

	ff := root.byID(t, "faulted-false-alarms").rows("data-impl")
	if len(ff) != 1 || !slices.Equal(ff[0].hrefs("campaign"), []string{"faulted/renewal/1/index.html"}) || !ff[0].hasClass("safe") {
		t.Errorf("false alarms under faults: %d rows", len(ff))
	}

	b := browsertest.Open(t, filepath.Join(dir, IndexFile))
	b.MustHave("table#detections tr[data-class]", "td.first-detection a.timeline", "td.searches a.campaign", "table#false-alarms", "table#faulted-false-alarms")
	b.Screenshot()
	// Asked to decide more than its searches did, the missed seed says nothing: the page
	// reads INCONCLUSIVE, as the command's exit status 3 does.
	// (A false alarm fails it whatever was decided: the one under faults is taken away.)
	r.Thresholds, r.Faulted = &gate.Thresholds{MinDecided: 1000, MaxPerturbed: 0.5}, nil
	if err := WriteDetectionIndex(dir, r, "locklab detection"); err != nil {
		t.Fatal(err)
	}
	if v := readIndex(t, dir).byID(t, "verdict"); !v.hasClass("inconclusive") || !strings.HasPrefix(v.text.String(), "INCONCLUSIVE") ||
		!strings.Contains(v.text.String(), "30 (plan, property) pairs decided (2 undecided, 0 in perturbed runs), fewer than --min-decided 1000") {
		t.Errorf("verdict %q", v.text.String())
	}
}

// TestEmptyIndexes: pages of nothing render, well-formed, saying so.
func TestEmptyIndexes(t *testing.T) {
	dir := t.TempDir()
	m, err := MatrixIndex(matrix.Result{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := parsePage(t, m).byID(t, "runs").text.String(); got != "No run finished." {
		t.Errorf("empty matrix: runs %q", got)
	}
	c, err := CampaignIndex(&campaign.Summary{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, c)
	if doc.byID(t, "failures").name != "p" || !doc.byID(t, "verdict").hasClass("pass") || len(doc.byID(t, "verdicts").rows("data-property")) != len(lin.AllProperties()) {
		t.Errorf("empty campaign page:\n%s", c)
	}
	d, err := DetectionIndex(detection.Result{}, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := parsePage(t, d).byID(t, "empty").text.String(); got != "Nothing was measured." {
		t.Errorf("empty detection: %q", got)
	}
}
