package index

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/campaign/detection"
	"github.com/locklab/locklab/report/page"
	"github.com/locklab/locklab/report/wording"
)

// detectionSearch is one campaign of the benchmark (a class search or a fault-free
// campaign), in its own directory under the benchmark's, with its own index.html.
type detectionSearch struct {
	Seed    int64
	Dir     string // relative to the benchmark's directory
	Index   string // href of its index.html, "" when it has none
	Summary *campaign.Summary
}

// detectionIndexView is the detection benchmark's index.html.
type detectionIndexView struct {
	Title       string
	Intro       string
	Pass        bool
	Word        string // PASS, FAIL or INCONCLUSIVE
	Class       string // pass, fail or inconclusive
	Verdict     string
	Interrupted bool
	Rows        []detectionRowView
	FalseAlarms []falseAlarmView
	Faulted     []falseAlarmView // per rule family: Impl is the family's name
	Claimed     int
	Total       campaign.ClaimCount
}

type detectionRowView struct {
	Class string
	wording.DetectionCells
	Unconfirmed int
	AllFound    bool
	Searches    []searchView
	First       *searchView // the first seed that found the class
}

type searchView struct {
	Seed  int64
	Dir   string
	Index string
	Found bool   // the class was found, confirmed
	Known bool   // its summary was read
	What  string // "found after 3.2s, 4 plans" or "not found in 60 plans"
	Files page.RunLinks
}

type falseAlarmView struct {
	detection.FalseAlarms
	Decided  int
	Searches []searchView
}

// Detection renders the benchmark's index.html for directory dir (its --out): the
// detection and false-alarm tables, with links into each search's own index.html and to
// the run of each first detection, where those files exist.
func Detection(r detection.Result, command, dir string) ([]byte, error) {
	return pages.Render("detection", detectionIndexOf(r, command, detectionSearches(dir, r), page.FilesIn(dir)))
}

// WriteDetection writes the benchmark's index.html into dir.
func WriteDetection(dir string, r detection.Result, command string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create detection directory: %w", err)
	}
	return pages.WriteIndex(dir, "detection", detectionIndexOf(r, command, detectionSearches(dir, r), page.FilesIn(dir)))
}

// detectionSearches finds the searches of r under dir, by the directory each has: the
// class searches by their seeds, the fault-free campaigns by listing their directory (a
// count of batches the result does not keep). A search whose summary cannot be read is
// listed without one.
func detectionSearches(dir string, r detection.Result) map[string][]detectionSearch {
	out := map[string][]detectionSearch{}
	read := func(key, rel string, seed int64) {
		s := detectionSearch{Seed: seed, Dir: rel}
		if sum, err := campaign.ReadSummary(filepath.Join(dir, filepath.FromSlash(rel), campaign.SummaryFile)); err == nil {
			s.Summary = sum
		}
		out[key] = append(out[key], s)
	}
	for _, row := range r.Rows {
		for k := range row.Seeds {
			seed := r.FirstSeed + int64(k)
			rel := path.Join(row.Class, fmt.Sprint(seed))
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil {
				read(row.Class, rel, seed)
			}
		}
	}
	batches := func(sub string) {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(sub)))
		if err != nil {
			return
		}
		var seeds []int64
		for _, e := range entries {
			if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && e.IsDir() {
				seeds = append(seeds, n)
			}
		}
		slices.Sort(seeds)
		for _, seed := range seeds {
			read(sub, path.Join(sub, fmt.Sprint(seed)), seed)
		}
	}
	for _, fa := range r.FalseAlarms {
		batches(detection.FaultFreeDir + "/" + fa.Impl)
	}
	for _, fa := range r.Faulted {
		batches(detection.FaultedDir + "/" + fa.Family)
	}
	return out
}

// searchViewOf is a search as its row links it; class is the class it searched for ("" for a
// fault-free campaign).
func searchViewOf(s detectionSearch, class string, has page.Files) searchView {
	v := searchView{Seed: s.Seed, Dir: s.Dir, Index: has.Link(path.Join(s.Dir, page.IndexFile)), Known: s.Summary != nil}
	if s.Summary == nil {
		v.What = "no summary"
		return v
	}
	sum := s.Summary
	if class == "" {
		v.What = fmt.Sprintf("%d plans, %d errors", sum.Runs, sum.Errors)
		return v
	}
	if f, ok := sum.FirstDetection[class]; ok {
		v.Found = true
		v.What = fmt.Sprintf("found after %s, %d plans", f.After.D().Round(time.Millisecond), f.Runs)
		if d := runDirOf(f.Plan); d != "" {
			v.Files = has.RunOf(path.Join(s.Dir, d))
		}
		return v
	}
	v.What = fmt.Sprintf("not found in %d plans", sum.Runs)
	return v
}

func detectionIndexOf(r detection.Result, command string, searches map[string][]detectionSearch, has page.Files) detectionIndexView {
	v := detectionIndexView{Title: "locklab detection", Pass: true, Interrupted: r.Interrupted, Claimed: r.ClaimedPairs}
	v.Intro = fmt.Sprintf("Produced by `%s` on %s (%s, %s in all).", command, r.Started.Format(time.RFC3339), r.GoVersion, r.Elapsed.D().Round(time.Second))
	if r.Seeds > 0 {
		v.Intro += fmt.Sprintf(" Each class: %d class searches (seeds %d…%d), each until the first confirmed detection or %d plans. A detection counts only when a re-run of its plan shows the class again.",
			r.Seeds, r.FirstSeed, r.FirstSeed+int64(r.Seeds)-1, r.MaxRuns)
	} else {
		v.Intro += " False alarms only."
	}
	missed, alarms := 0, 0
	for _, row := range r.Rows {
		rv := detectionRowView{Class: row.Class, DetectionCells: wording.DetectionCellsOf(r, row), Unconfirmed: row.Unconfirmed, AllFound: row.Found >= row.Seeds}
		if !rv.AllFound {
			missed++
		}
		for _, s := range searches[row.Class] {
			sv := searchViewOf(s, row.Class, has)
			rv.Searches = append(rv.Searches, sv)
			if sv.Found && rv.First == nil {
				first := sv
				rv.First = &first
			}
		}
		v.Rows = append(v.Rows, rv)
	}
	for _, fa := range r.FalseAlarms {
		fv := falseAlarmView{FalseAlarms: fa, Decided: fa.Claims.Decided()}
		for _, s := range searches[detection.FaultFreeDir+"/"+fa.Impl] {
			fv.Searches = append(fv.Searches, searchViewOf(s, "", has))
		}
		v.Total.Add(fa.Claims)
		v.FalseAlarms = append(v.FalseAlarms, fv)
	}
	for _, fa := range r.Faulted {
		fv := falseAlarmView{FalseAlarms: detection.FalseAlarms{Impl: fa.Family, Plans: fa.Plans, Errors: fa.Errors, Perturbed: fa.Perturbed, Claims: fa.Claims}, Decided: fa.Claims.Decided()}
		for _, s := range searches[detection.FaultedDir+"/"+fa.Family] {
			fv.Searches = append(fv.Searches, searchViewOf(s, "", has))
		}
		v.Faulted = append(v.Faulted, fv)
	}
	alarms = r.Alarms()
	v.Pass, v.Word = missed == 0 && alarms == 0, "FAIL"
	v.Verdict = fmt.Sprintf("%d of %d classes found by every seed, %d false alarms; decided: %s", len(r.Rows)-missed, len(r.Rows), alarms, r.Decided())
	switch err := r.Inconclusive(); {
	case err != nil:
		v.Pass, v.Word, v.Verdict = false, "INCONCLUSIVE", v.Verdict+"; "+err.Error()
	case v.Pass:
		v.Word = "PASS"
	}
	v.Class = strings.ToLower(v.Word)
	if r.Interrupted {
		v.Verdict += "; interrupted: the rows are what was measured before"
	}
	return v
}

// detectionIndexPage: ids verdict, detections (rows carry data-class), false-alarms
// (rows carry data-impl); links of class campaign (a search's index.html), timeline and
// porcupine (the run of a first detection).
const detectionIndexPage = `{{define "detection"}}{{template "head" .Title}}<h1>{{.Title}}</h1>
<p id="intro">{{md .Intro}}</p>
<p id="verdict" class="verdict {{.Class}}"><strong>{{.Word}}</strong>: {{.Verdict}}.</p>
{{if .Rows}}<h2>Time to detection</h2>
<table id="detections" class="verdicts">
<thead><tr><th>class</th><th>detects</th><th>found</th><th>median time</th><th>worst time</th><th>median plans</th><th>worst plans</th><th>shrunk counterexample (first seed)</th><th>unconfirmed</th><th>first detection</th><th>searches</th></tr></thead>
<tbody>
{{range .Rows}}<tr data-class="{{.Class}}" class="{{if .AllFound}}pass{{else}}safe{{end}}"><td>{{.Class}}</td><td>{{.Detect}}</td><td>{{.Found}}</td><td>{{.MedianTime}}</td><td>{{.WorstTime}}</td><td>{{.MedianPlans}}</td><td>{{.WorstPlans}}</td><td>{{.Shrunk}}</td><td class="num">{{.Unconfirmed}}</td><td class="first-detection">{{with .First}}seed {{.Seed}}: {{template "run" .Files}}{{else}}–{{end}}</td><td class="searches">{{range .Searches}}<div data-seed="{{.Seed}}">{{if .Index}}<a class="campaign" href="{{.Index}}">seed {{.Seed}}</a>{{else}}seed {{.Seed}}{{end}} <span class="muted">{{.What}}</span></div>{{else}}<span class="muted">no search directory</span>{{end}}</td></tr>
{{end}}</tbody>
</table>
{{end}}{{if .FalseAlarms}}<h2>False alarms</h2>
<p>Counted only where the models make a claim: per correct implementation, fault-free calm plans until at least {{.Claimed}} (plan, property) pairs that an expectation rule claims were decided by the checkers. A violated claimed pair is a false alarm.</p>
<table id="false-alarms">
<thead><tr><th>implementation</th><th>plans</th><th>claimed pairs decided</th><th>false alarms</th><th>undecided (checker timeout)</th><th>failed to run</th><th>campaigns</th></tr></thead>
<tbody>
{{range .FalseAlarms}}{{template "alarm-row" .}}{{end}}<tr class="total"><td>all</td><td></td><td class="num">{{.Total.Decided}}</td><td class="num"><strong>{{.Total.Violated}}</strong></td><td class="num">{{.Total.Undecided}}</td><td></td><td></td></tr>
</tbody>
</table>
{{end}}{{if .Faulted}}<h2>False alarms under faults</h2>
<p>Per rule family, random plans with the faults its rules speak of until at least {{.Claimed}} (plan, property) pairs that the family's rules claim were decided by the checkers. A violated claimed pair is a false alarm.</p>
<table id="faulted-false-alarms">
<thead><tr><th>rule family</th><th>plans</th><th>claimed pairs decided</th><th>false alarms</th><th>undecided (checker timeout)</th><th>failed to run</th><th>campaigns</th></tr></thead>
<tbody>
{{range .Faulted}}{{template "alarm-row" .}}{{end}}</tbody>
</table>
{{end}}{{if not (or .Rows .FalseAlarms .Faulted)}}<p id="empty" class="muted">Nothing was measured.</p>
{{end}}{{template "foot"}}{{end}}
{{define "alarm-row"}}<tr data-impl="{{.Impl}}" class="{{if .Claims.Violated}}safe{{else}}pass{{end}}"><td>{{.Impl}}</td><td class="num">{{.Plans}}</td><td class="num">{{.Decided}}</td><td class="num"><strong>{{.Claims.Violated}}</strong></td><td class="num">{{.Claims.Undecided}}</td><td class="num">{{.Errors}}</td><td class="searches">{{range .Searches}}<div data-seed="{{.Seed}}">{{if .Index}}<a class="campaign" href="{{.Index}}">seed {{.Seed}}</a>{{else}}seed {{.Seed}}{{end}} <span class="muted">{{.What}}</span></div>{{end}}</td></tr>
{{end}}`
