package index

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/locklab/locklab/campaign"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/report/page"
	"github.com/locklab/locklab/report/wording"
)

// campaignIndexView is a campaign's index.html (also of a merged one).
type campaignIndexView struct {
	Title       string
	Word        string // PASS, FAIL or INCONCLUSIVE
	Class       string // pass, fail or inconclusive
	Verdict     string // "1 safe-configuration violation, 2 findings; class x found"
	Header      []headerItem
	Properties  []propertyRow
	Classes     []classRow
	Unconfirmed string
	Failures    []failureRow
	Errors      []runErrorRow
	Perturbed   []runErrorRow
	UnderLoad   []runErrorRow // Error: the finding in a line, with the stall
	PlansImpl   []countRow
	PlansFault  []countRow
}

// headerItem is a line of the page's header.
type headerItem struct{ Name, Value string }

type propertyRow struct {
	Property, Name    string
	Violated, Unknown int
	After             string // time to the first violation, or ""
	Run               int
	Files             page.RunLinks // the first violating run
}

type classRow struct {
	Class    string
	Found    bool
	Searched bool
	After    string
	Runs     int
	Run      int
	Files    page.RunLinks
}

type failureRow struct {
	Run         int
	Kind        string // "safe" or "finding"
	What        string // implementation, topology, fencing, faults
	Illegal     string
	Safe        string // the properties the rules expected to hold
	Rules       string
	Classes     string
	Confirmed   string // "P2 2/2; class pause-past-ttl", or "not re-run"
	Shrunk      string // the saved plan's size note, or ""
	SavedPlan   string // href of the saved (shrunk) plan, when there
	Note        string
	Explanation string
	Files       page.RunLinks // the failing run
	ShrunkRun   page.RunLinks // the run that confirmed the saved plan (failures/NNNNN/report)
}

type runErrorRow struct {
	Run   int
	Error string
	Files page.RunLinks
}

type countRow struct {
	Name  string
	Count int
}

// Campaign renders a campaign's index.html for directory dir (where its
// summary.json is; the summary's paths are relative to it): links go only to files that
// exist there.
func Campaign(s *campaign.Summary, dir string) ([]byte, error) {
	return pages.Render("campaign", campaignIndexOf(s, page.FilesIn(dir)))
}

// WriteCampaign writes the campaign's index.html into dir, where its summary.json is.
func WriteCampaign(dir string, s *campaign.Summary) error {
	return pages.WriteIndex(dir, "campaign", campaignIndexOf(s, page.FilesIn(dir)))
}

func campaignIndexOf(s *campaign.Summary, has page.Files) campaignIndexView {
	v := campaignIndexView{Title: "locklab campaign", Word: wording.CampaignVerdict(s), Class: strings.ToLower(wording.CampaignVerdict(s))}
	if s.Class != "" {
		v.Title += ": class " + s.Class
	}
	seeds := fmt.Sprint(s.Seed)
	if len(s.Seeds) > 0 {
		var xs []string
		for _, x := range s.Seeds {
			xs = append(xs, fmt.Sprint(x))
		}
		seeds = strings.Join(xs, ", ")
	}
	space := "several; each merged campaign's page says which"
	if !s.Mixed {
		space = wording.Space(s.Space)
	}
	elapsed := s.Elapsed.D().String()
	if s.Interrupted {
		elapsed += " (interrupted)"
	}
	v.Header = []headerItem{
		{"seed", seeds}, {"shard", s.Shard}, {"plans run", fmt.Sprint(s.Runs)},
		{"re-runs", fmt.Sprintf("%d (to confirm and shrink)", s.Reruns)}, {"errors", fmt.Sprint(s.Errors)},
		{"perturbed runs", fmt.Sprint(s.Perturbed)}, {"elapsed", elapsed},
		{"plans/min", fmt.Sprintf("%.1f per runner", s.PlansPerMinute)}, {"space", space},
		{"safe-configuration violations", fmt.Sprint(s.SafeViolations)}, {"findings", fmt.Sprint(s.Findings)},
		{"findings under load", fmt.Sprint(len(s.UnderLoad))}, {"decided", wording.Decided(s)},
	}
	if !s.Started.IsZero() {
		v.Header = append(v.Header, headerItem{"started", s.Started.Format("2006-01-02 15:04:05 MST")})
	}
	if len(s.Shards) > 0 {
		v.Header = append(v.Header, headerItem{"merged from", strings.Join(s.Shards, ", ")})
	}
	verdict := []string{fmt.Sprintf("%d safe-configuration violations, %d findings", s.SafeViolations, s.Findings)}
	searched := s.SearchedFor()
	for _, c := range slices.Sorted(maps.Keys(searched)) {
		if searched[c] {
			verdict = append(verdict, "class "+c+" found")
		} else {
			verdict = append(verdict, "class "+c+" not found")
		}
	}
	if err := s.Inconclusive(); err != nil {
		verdict = append(verdict, err.Error())
	}
	if s.Interrupted {
		verdict = append(verdict, "interrupted")
	}
	v.Verdict = strings.Join(verdict, "; ")
	for _, p := range lin.AllProperties() {
		row := propertyRow{Property: string(p), Name: p.Name(), Violated: s.Violations[p], Unknown: s.Unknown[p]}
		if f, ok := s.FirstViolation[p]; ok {
			row.After, row.Run, row.Files = f.After.D().String(), f.Run, has.RunOf(runDirOf(f.Plan))
		}
		v.Properties = append(v.Properties, row)
	}
	classes := slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for c := range s.FirstDetection {
			seen[c] = true
		}
		for c := range searched {
			seen[c] = true
		}
		for c := range seen {
			if !yield(c) {
				return
			}
		}
	})
	for _, c := range classes {
		_, isSearched := searched[c]
		row := classRow{Class: c, Searched: isSearched}
		if f, ok := s.FirstDetection[c]; ok {
			row.Found, row.After, row.Runs, row.Run, row.Files = true, f.After.D().String(), f.Runs, f.Run, has.RunOf(runDirOf(f.Plan))
		}
		v.Classes = append(v.Classes, row)
	}
	var unconfirmed []string
	for _, c := range slices.Sorted(maps.Keys(s.Unconfirmed)) {
		if n := s.Unconfirmed[c]; n > 0 {
			unconfirmed = append(unconfirmed, fmt.Sprintf("%s %d", c, n))
		}
	}
	v.Unconfirmed = strings.Join(unconfirmed, "; ")
	for _, f := range s.Failures {
		row := failureRow{
			Run: f.Run, Kind: "finding", What: fmt.Sprintf("%s %s fencing %s, faults %s", f.Impl, f.Topology, f.Fencing, f.Faults),
			Illegal: wording.Illegal(f, ", "), Safe: lin.JoinProperties(f.Safe, ", "), Rules: strings.Join(f.Rules, "; "),
			Classes: strings.Join(f.Classes, ", "), Note: f.Note, Explanation: wording.Truncate(f.Explanation, 600),
			Files: has.RunOf(f.Dir), ShrunkRun: has.RunOf(f.Report), SavedPlan: has.Link(f.Saved),
		}
		if len(f.Safe) > 0 {
			row.Kind = "safe"
		}
		var confirmed []string
		if f.Confirms > 0 {
			confirmed = append(confirmed, fmt.Sprintf("%s reproduced %d/%d", f.Target, f.Reproduced, f.Confirms))
		}
		if len(f.Confirmed) > 0 {
			confirmed = append(confirmed, "class "+strings.Join(f.Confirmed, ", ")+" confirmed")
		}
		if f.Compare != nil {
			confirmed = append(confirmed, f.Compare.String())
		}
		row.Confirmed = strings.Join(confirmed, "; ")
		if row.Confirmed == "" {
			row.Confirmed = "not re-run"
		}
		if f.Saved != "" {
			row.Shrunk = f.SizeNote()
		}
		v.Failures = append(v.Failures, row)
	}
	for _, e := range s.RunErrors {
		v.Errors = append(v.Errors, runErrorRow{Run: e.Run, Error: wording.Truncate(e.Error, 600), Files: has.RunOf(e.Dir)})
	}
	for _, e := range s.PerturbedRuns {
		v.Perturbed = append(v.Perturbed, runErrorRow{Run: e.Run, Error: wording.Truncate(e.Error, 600), Files: has.RunOf(e.Dir)})
	}
	for _, u := range s.UnderLoad {
		v.UnderLoad = append(v.UnderLoad, runErrorRow{Run: u.Run, Error: wording.UnderLoad(u), Files: has.RunOf(u.Dir)})
	}
	for _, k := range slices.Sorted(maps.Keys(s.PlansPerImpl)) {
		v.PlansImpl = append(v.PlansImpl, countRow{k, s.PlansPerImpl[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(s.PlansPerFault)) {
		v.PlansFault = append(v.PlansFault, countRow{k, s.PlansPerFault[k]})
	}
	return v
}

// campaignIndexPage: ids verdict, header, verdicts (per property), classes, failures
// (rows carry data-run and class safe or finding), errors, under-load, perturbed, plans-impl,
// plans-fault; run links of class timeline and porcupine, the shrunk run's inside
// td.shrunk-run.
const campaignIndexPage = `{{define "campaign"}}{{template "head" .Title}}<h1>{{.Title}}</h1>
<p id="verdict" class="verdict {{.Class}}"><strong>{{.Word}}</strong>: {{.Verdict}}.</p>
<dl id="header" class="header">{{range .Header}}<dt>{{.Name}}</dt><dd>{{.Value}}</dd>{{end}}</dl>
<h2>Properties</h2>
<table id="verdicts" class="verdicts">
<thead><tr><th>property</th><th>runs with a violation</th><th>runs undecided</th><th>first after</th><th>first run</th></tr></thead>
<tbody>
{{range .Properties}}<tr data-property="{{.Property}}" class="{{if .Violated}}illegal{{else}}ok{{end}}"><td>{{.Property}} {{.Name}}</td><td class="num">{{.Violated}}</td><td class="num">{{.Unknown}}</td><td>{{if .After}}{{.After}}{{else}}–{{end}}</td><td>{{if .After}}run {{.Run}} {{template "run" .Files}}{{else}}–{{end}}</td></tr>
{{end}}</tbody>
</table>
<h2>Bug classes found</h2>
{{if .Classes}}<table id="classes">
<thead><tr><th>class</th><th>found (confirmed)</th><th>confirmed after</th><th>runs by then</th><th>run</th></tr></thead>
<tbody>
{{range .Classes}}<tr data-class="{{.Class}}" class="{{if .Found}}pass{{else}}safe{{end}}"><td>{{.Class}}{{if .Searched}} <span class="muted">(searched for)</span>{{end}}</td><td>{{if .Found}}yes{{else}}not found{{end}}</td><td>{{if .Found}}{{.After}}{{else}}–{{end}}</td><td class="num">{{if .Found}}{{.Runs}}{{else}}–{{end}}</td><td>{{if .Found}}run {{.Run}} {{template "run" .Files}}{{else}}–{{end}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p id="classes" class="muted">No bug class detected (confirmed).</p>
{{end}}{{if .Unconfirmed}}<p id="unconfirmed">Detections that did not reproduce in their re-runs (not counted): {{.Unconfirmed}}.</p>
{{end}}<h2>Failures and findings</h2>
{{if .Failures}}<table id="failures">
<thead><tr><th>run</th><th>kind</th><th>plan</th><th>classes</th><th>properties violated</th><th>confirmed</th><th>shrunk plan</th><th>run links</th><th>shrunk run</th></tr></thead>
<tbody>
{{range .Failures}}<tr class="{{.Kind}}" data-run="{{.Run}}" data-dir="{{.Files.Dir}}"><td class="num">{{.Run}}</td><td>{{if eq .Kind "safe"}}safe-configuration violation{{else}}finding{{end}}</td><td>{{if .Files.Plan}}<a class="plan" href="{{.Files.Plan}}">{{.What}}</a>{{else}}{{.What}}{{end}}</td><td>{{.Classes}}</td><td>{{.Illegal}} illegal{{if .Safe}}<div>expected to hold: {{.Safe}} ({{.Rules}})</div>{{end}}{{if .Explanation}}<div class="explanation">{{.Explanation}}</div>{{end}}</td><td>{{.Confirmed}}</td><td>{{if .SavedPlan}}<a class="shrunk-plan" href="{{.SavedPlan}}">plan.json</a> {{end}}{{.Shrunk}}{{if .Note}}<div class="muted">{{.Note}}</div>{{end}}</td><td class="run-links">{{template "run" .Files}}</td><td class="shrunk-run">{{if .ShrunkRun.Dir}}{{template "run" .ShrunkRun}}{{else}}<span class="muted">none</span>{{end}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p id="failures" class="muted">No run violated a property.</p>
{{end}}{{if .Errors}}<h2>Errors</h2>
<table id="errors">
<thead><tr><th>run</th><th>error</th><th>links</th></tr></thead>
<tbody>
{{range .Errors}}<tr class="error" data-run="{{.Run}}" data-dir="{{.Files.Dir}}"><td class="num">{{.Run}}</td><td>{{.Error}}</td><td>{{if .Files.Plan}}<a class="plan" href="{{.Files.Plan}}">plan</a> {{end}}{{if .Files.Error}}<a class="error-file" href="{{.Files.Error}}">error</a> {{end}}{{template "run" .Files}}</td></tr>
{{end}}</tbody>
</table>
{{end}}{{if .UnderLoad}}<h2>Findings under load</h2>
<p>Violations in runs whose harness stalled: the stall may have caused them, or the lock may break only under load. Counted neither as findings nor as passes.</p>
<table id="under-load">
<thead><tr><th>run</th><th>violation and stall</th><th>links</th></tr></thead>
<tbody>
{{range .UnderLoad}}<tr class="finding" data-run="{{.Run}}" data-dir="{{.Files.Dir}}"><td class="num">{{.Run}}</td><td>{{.Error}}</td><td>{{if .Files.Plan}}<a class="plan" href="{{.Files.Plan}}">plan</a> {{end}}{{template "run" .Files}}</td></tr>
{{end}}</tbody>
</table>
{{end}}{{if .Perturbed}}<h2>Perturbed runs</h2>
<p>The harness itself stalled in these runs, so their verdicts are counted neither as violations nor as passes.</p>
<table id="perturbed">
<thead><tr><th>run</th><th>why</th><th>links</th></tr></thead>
<tbody>
{{range .Perturbed}}<tr class="unknown" data-run="{{.Run}}" data-dir="{{.Files.Dir}}"><td class="num">{{.Run}}</td><td>{{.Error}}</td><td>{{if .Files.Plan}}<a class="plan" href="{{.Files.Plan}}">plan</a> {{end}}{{template "run" .Files}}</td></tr>
{{end}}</tbody>
</table>
{{end}}<h2>Plans</h2>
<table id="plans-impl"><thead><tr><th>implementation</th><th>plans</th></tr></thead>
<tbody>{{range .PlansImpl}}<tr><td>{{.Name}}</td><td class="num">{{.Count}}</td></tr>{{end}}</tbody></table>
<table id="plans-fault"><thead><tr><th>fault kind</th><th>plans with it</th></tr></thead>
<tbody>{{range .PlansFault}}<tr><td>{{.Name}}</td><td class="num">{{.Count}}</td></tr>{{end}}</tbody></table>
{{template "foot"}}{{end}}
`
