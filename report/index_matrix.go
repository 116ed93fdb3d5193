package report

import (
	"fmt"
	"strings"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report/page"
	"github.com/locklab/locklab/report/wording"
)

// matrixIndexView is the matrix's index.html: its verdict tables, each run of a cell
// linked to its picture and Porcupine page, and a table of every run.
type matrixIndexView struct {
	matrixView
	Summary string
	Runs    []matrixRunRow
}

// matrixRunRow is one run of the matrix, a row of the runs table.
type matrixRunRow struct {
	Fencing, Scenario, Impl string
	Index                   int
	Seed                    int64
	Class                   string // ok, illegal, underload, unknown, error (matrix.CellRun.Class)
	Verdicts                string // "P1 ok · P2 illegal · …", or "failed to run"
	Notes                   []string
	Files                   page.RunLinks
}

// MatrixIndex renders the matrix's index.html for directory dir (the matrix's output
// directory): links go only to files that exist there.
func MatrixIndex(m matrix.Result, dir string) ([]byte, error) {
	return pages.Render("matrix", matrixIndexOf(m, page.FilesIn(dir)))
}

func matrixIndexOf(m matrix.Result, has page.Files) matrixIndexView {
	v := matrixIndexView{matrixView: matrixViewOf(m, true, has)}
	v.Legend = append(v.Legend, "timeline: the run's picture (timeline.svg); porcupine: Porcupine's visualisation of its history (history.html). A run directory written before pictures existed shows \"no picture\".")
	v.Summary = fmt.Sprintf("%d of %d runs finished, %d failed to run.", m.Meta.Runs, m.Meta.Planned, m.Meta.Errors)
	if m.Meta.Planned == 0 && m.Meta.Runs == 0 {
		v.Summary = "No runs."
	}
	for _, c := range m.Cells {
		for _, r := range c.Runs {
			row := matrixRunRow{Fencing: c.Fencing, Scenario: c.Scenario, Impl: c.Impl, Index: r.Index, Seed: r.Seed,
				Class: r.Class(), Files: has.RunOf(r.Dir)}
			if r.Error != "" {
				row.Verdicts = "failed to run"
				row.Notes = append(row.Notes, "failed to run: "+wording.Truncate(r.Error, 300))
			} else {
				var parts []string
				for _, p := range lin.AllProperties() {
					parts = append(parts, fmt.Sprintf("%s %s", p, r.Verdicts[p]))
				}
				row.Verdicts = strings.Join(parts, " · ")
			}
			if r.Perturbed != "" {
				row.Notes = append(row.Notes, wording.Truncate(perturbedNote(r), 400))
			}
			for _, w := range r.Warnings {
				row.Notes = append(row.Notes, wording.Truncate(w, 300))
			}
			v.Runs = append(v.Runs, row)
		}
	}
	return v
}

// matrixIndexPage: ids verdicts (the section), verdicts-FENCING (each table, class
// verdicts), runs (every run; rows carry data-dir); links of class timeline and porcupine.
const matrixIndexPage = `{{define "matrix"}}{{template "head" .Title}}<h1>{{.Title}}</h1>
<p id="intro">{{md .Intro}}</p>
<p id="summary">{{.Summary}}</p>
<section id="verdicts">
{{range .Tables}}<h2>Fencing {{.Fencing}}</h2>
<table class="verdicts" id="verdicts-{{.Fencing}}" data-fencing="{{.Fencing}}">
<thead><tr><th>scenario</th>{{range .Impls}}<th title="{{.Title}}" data-impl="{{.Name}}">{{.Name}}{{if .Mutant}}<span class="sub">mutant</span>{{end}}<span class="sub">fence source {{.FenceSource}}</span></th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}{{$scenario := .Scenario}}<tr data-scenario="{{.Scenario}}"><th title="{{.Title}}">{{.Scenario}}</th>{{range .Cells}}<td class="cell {{.Class}}" data-scenario="{{$scenario}}" data-impl="{{.Impl}}"{{if .Title}} title="{{.Title}}"{{end}}>{{if .Link}}<a class="cell-link" href="{{.Link}}">{{.Summary}}</a>{{else}}{{.Summary}}{{end}}{{.Note}}{{if .Runs}}<span class="runs">{{range .Runs}}<span class="run {{.Class}}" data-run="{{.Label}}" title="{{.Title}}">{{if .Files.Porcupine}}<a class="porcupine" href="{{.Files.Porcupine}}" title="run {{.Label}}: Porcupine">{{.Label}}</a>{{else if .Files.Error}}<a class="error-file" href="{{.Files.Error}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}{{if .Files.Timeline}} <a class="timeline" href="{{.Files.Timeline}}" title="run {{.Label}}: timeline">◷</a>{{else}} <span class="no-picture" title="run {{.Label}}: no picture">·</span>{{end}}</span>{{end}}</span>{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}</section>
{{if .Notes}}<h2>Notes</h2>
<ol id="notes">{{range .Notes}}<li>{{range $i, $c := .Cells}}{{if $i}}, {{end}}{{$c}}{{end}}: {{.Text}}</li>
{{end}}</ol>
{{end}}<h2>Runs</h2>
{{if .Runs}}<table id="runs">
<thead><tr><th>fencing</th><th>scenario</th><th>implementation</th><th>run</th><th>seed</th><th>verdicts</th><th>links</th><th>notes</th></tr></thead>
<tbody>
{{range .Runs}}<tr class="{{.Class}}" data-dir="{{.Files.Dir}}"><td>{{.Fencing}}</td><td>{{.Scenario}}</td><td>{{.Impl}}</td><td class="num">{{.Index}}</td><td class="num">{{.Seed}}</td><td>{{.Verdicts}}</td><td>{{template "run" .Files}}{{if .Files.Plan}}<a class="plan" href="{{.Files.Plan}}">plan</a>{{end}}{{if .Files.Error}} <a class="error-file" href="{{.Files.Error}}">error</a>{{end}}</td><td>{{range .Notes}}<div>{{.}}</div>{{end}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p id="runs" class="muted">No run finished.</p>
{{end}}<h2>Legend</h2>
<ul id="legend">{{range .Legend}}<li>{{.}}</li>
{{end}}</ul>
{{template "foot"}}{{end}}
`
