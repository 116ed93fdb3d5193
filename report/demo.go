package report

import (
	"fmt"

	lin "github.com/locklab/locklab/linearizability"
)

// Demo is what `locklab demo` shows on one page: one scenario run once per fencing mode,
// the runs' timelines side by side, so that the write the store accepted without fencing
// and the same write refused with it are one glance apart.
type Demo struct {
	Scenario    string
	Description string
	Command     string // the command that made the page
	Runs        []DemoRun
}

// DemoRun is one run of a demo. Paths are relative to the page.
type DemoRun struct {
	Title     string // e.g. "pause-past-ttl · fenced · fencing off"
	Fencing   string
	Result    lin.Result
	Timeline  string // the run's timeline.svg
	Porcupine string // the run's history.html
	Narration string // report.Narrate of the run
}

// demoProperty is one verdict of a run on the page.
type demoProperty struct {
	Name, Verdict, Class, Explanation string
}

// DemoHTML is the demo's page: a column per run with its verdicts, its timeline, what
// the checker found and the narration. The timelines are SVG files beside the page
// (objects, so that their tooltips work); the page itself has no script.
func DemoHTML(d Demo) ([]byte, error) {
	type runView struct {
		DemoRun
		Props []demoProperty
	}
	view := struct {
		Demo
		Views []runView
	}{Demo: d}
	for _, r := range d.Runs {
		v := runView{DemoRun: r}
		for _, p := range r.Result.Properties {
			if p.Verdict == lin.NA {
				continue
			}
			v.Props = append(v.Props, demoProperty{
				Name: fmt.Sprintf("%s %s", p.Property, p.Property.Name()), Verdict: string(p.Verdict),
				Class: verdictClass(p.Verdict), Explanation: p.Explanation,
			})
		}
		view.Views = append(view.Views, v)
	}
	return pages.Render("demo", view)
}

// verdictClass is a verdict's CSS class on the pages.
func verdictClass(v lin.Verdict) string {
	switch v {
	case lin.Illegal:
		return "illegal"
	case lin.Unknown:
		return "unknown"
	case lin.NA:
		return "na"
	}
	return "ok"
}

// demoPage is the demo's page, on the stylesheet of the index pages; the runs stand in
// columns on a wide screen and one under the other on a narrow one.
const demoPage = `{{define "demo"}}{{template "head" (print "locklab demo: " .Scenario)}}<style>
body { max-width: none; }
.runs { display: grid; grid-template-columns: repeat({{len .Views}}, minmax(0, 1fr)); gap: 1.5em; }
@media (max-width: 1400px) { .runs { grid-template-columns: minmax(0, 1fr); } }
object.timeline { width: 100%; border: 1px solid #ccc; }
pre.narration { white-space: pre-wrap; font-size: 12px; background: #f6f6f6; padding: .5em; }
</style>
<main id="demo" data-scenario="{{.Scenario}}">
<h1>{{.Scenario}}</h1>
<p class="description">{{.Description}}</p>
{{if .Command}}<p>Made by <code>{{.Command}}</code>.</p>{{end}}
<div class="runs">
{{range .Views}}<section class="run" data-fencing="{{.Fencing}}">
<h2>Fencing {{.Fencing}}</h2>
<table class="verdicts">
{{range .Props}}<tr class="{{.Class}}"><th>{{.Name}}</th><td>{{.Verdict}}</td></tr>
{{end}}</table>
<object class="timeline" type="image/svg+xml" data="{{.Timeline}}" title="{{.Title}}"><a href="{{.Timeline}}">timeline of {{.Title}}</a></object>
<p><a class="timeline" href="{{.Timeline}}">Open the timeline</a> · <a class="porcupine" href="{{.Porcupine}}">Porcupine's view of the history</a></p>
{{range .Props}}{{if .Explanation}}<p class="explanation {{.Class}}"><strong>{{.Name}}:</strong> {{.Explanation}}</p>
{{end}}{{end}}<details><summary>What happened, in words</summary><pre class="narration">{{.Narration}}</pre></details>
</section>
{{end}}</div>
</main>
{{template "foot"}}{{end}}
`
