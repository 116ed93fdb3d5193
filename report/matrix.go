package report

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/report/page"
)

// WriteMatrix writes matrix.md, matrix.html and index.html into dir, beside the
// matrix.json that matrix.Run wrote. matrix.html is the verdict page that links each run's
// Porcupine page, as it always was; index.html is the directory's page: the same tables,
// every run's picture and Porcupine page, and a table of all runs.
func WriteMatrix(dir string, m matrix.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create matrix directory: %w", err)
	}
	md := "# Verdict matrix\n\n" + MatrixMarkdown(m, true)
	if err := os.WriteFile(filepath.Join(dir, matrix.MarkdownFile), []byte(md), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", matrix.MarkdownFile, err)
	}
	page, err := MatrixHTML(m)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, matrix.HTMLFile), page, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", matrix.HTMLFile, err)
	}
	index, err := MatrixIndex(m, dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, IndexFile), index, 0o644); err != nil {
		return fmt.Errorf("write matrix %s: %w", IndexFile, err)
	}
	return nil
}

// matrixLegend explains the cells; Markdown and HTML share it.
var matrixLegend = []string{
	"✓: every property held in every run.",
	"P1 2/3: the property was violated (illegal) in 2 of 3 runs. P1 mutual exclusion, P2 resource safety, P3 fence monotonicity, L1 progress.",
	"?1/3: the checker ran out of time in 1 of 3 runs (unknown, never read as held).",
	"err 1/3: 1 of 3 runs failed to run (an error of the testbed, not a verdict); see the notes.",
	"perturbed 1/3: in 1 of 3 runs the harness itself stalled (its timer or a server no fault touched answered late), so that run's verdicts are not counted; see the notes.",
	"P2 1/3 under load: 1 of 3 runs violated the property while its harness stalled: a finding under load (the stall may be its cause, or the lock breaks only under load), not counted as a violation; the notes name the stall.",
	"—: the scenario does not apply to the implementation; the notes say why.",
	"none: the implementation grants no fencing token (fence source none), so a fencing mode other than off cannot be tried.",
	"fence source: lock when the lock grants a fencing token with each lease, none when it grants none. (mutant): deliberately broken.",
	"Superscripts refer to the notes.",
}

// linkLegend is the legend's last line, for a table whose cells link to their runs and for
// one without links (a copy outside the matrix's directory, e.g. in the repository).
func linkLegend(links bool) string {
	if links {
		return "Each cell links to the report of its first violating run (else its first run); matrix.html links every run."
	}
	return "The runs are not part of this document: matrix.html in the matrix's output directory links every run's report."
}

// matrixView is the matrix laid out for rendering: tables, cells and numbered notes.
type matrixView struct {
	Title  string
	Meta   matrix.Meta
	Intro  string
	Tables []tableView
	Notes  []noteView
	Legend []string
	Diffs  []diffView // cells where releases of one library disagree
}

type diffView struct {
	Scenario, Fencing string
	Cells             []struct{ Impl, Summary, Class, Link, Timeline string }
}

type tableView struct {
	Fencing string
	Impls   []implView
	Rows    []rowView
}

type implView struct {
	Name, Title, FenceSource string
	Mutant                   bool
}

type rowView struct {
	Scenario, Title string
	Cells           []cellView
}

type cellView struct {
	Summary, Class, Link, Title, Note string // Note: superscript note number, or ""
	Impl                              string
	Runs                              []runView
}

type runView struct {
	Label, Link, Class, Title string
	Files                     page.RunLinks // index.html only
}

type noteView struct {
	Num   int
	Sup   string
	Text  string
	Cells []string // "impl × scenario"
}

// matrixViewOf lays the matrix out, with links to the runs (relative to the matrix
// directory) or without any; with has, each run's files that exist (for index.html).
func matrixViewOf(m matrix.Result, links bool, has page.Files) matrixView {
	prefix := ""
	v := matrixView{Title: "Verdict matrix", Meta: m.Meta, Intro: matrixIntro(m), Legend: append(slices.Clone(matrixLegend), linkLegend(links))}
	notes := map[string]int{}
	note := func(text, where string) string {
		k, ok := notes[text]
		if !ok {
			k = len(v.Notes)
			notes[text] = k
			v.Notes = append(v.Notes, noteView{Num: k + 1, Sup: superscript(k + 1), Text: text})
		}
		if !slices.Contains(v.Notes[k].Cells, where) {
			v.Notes[k].Cells = append(v.Notes[k].Cells, where)
		}
		return v.Notes[k].Sup
	}
	for _, fencing := range m.Fencings {
		t := tableView{Fencing: fencing}
		for _, i := range m.Impls {
			t.Impls = append(t.Impls, implView{Name: i.Name, Title: i.Description, FenceSource: i.FenceSource, Mutant: i.Mutant})
		}
		for _, s := range m.Scenarios {
			row := rowView{Scenario: s.Name, Title: s.Description}
			for _, i := range m.Impls {
				c, ok := m.Cell(s.Name, i.Name, fencing)
				if !ok {
					row.Cells = append(row.Cells, cellView{Summary: "", Class: "pending", Impl: i.Name})
					continue
				}
				where := c.Impl + " × " + c.Scenario
				cv := cellView{Summary: c.Summary(), Class: c.Class(), Title: c.Reason, Impl: c.Impl}
				if l := c.Link(); l != "" && links {
					cv.Link = prefix + l
				}
				var sups []string
				switch {
				case c.Status == matrix.CellNA:
					sups = append(sups, note("n/a: "+c.Reason, where))
				case c.Note != "":
					sups = append(sups, note(c.Note, where))
				}
				for _, r := range c.Runs {
					rv := runView{Label: fmt.Sprint(r.Index), Class: r.Class(), Title: runTitle(r)}
					if links {
						rv.Link = prefix + r.Link
					}
					if has != nil {
						rv.Files = has.RunOf(r.Dir)
					}
					cv.Runs = append(cv.Runs, rv)
					if r.Error != "" {
						sups = append(sups, note(fmt.Sprintf("run %d failed to run: %s", r.Index, r.Error), where))
					}
					if r.Perturbed != "" {
						sups = append(sups, note(perturbedNote(r), where))
					}
				}
				cv.Note = strings.Join(sups, ",")
				row.Cells = append(row.Cells, cv)
			}
			t.Rows = append(t.Rows, row)
		}
		v.Tables = append(v.Tables, t)
	}
	return v
}

// intro is the line that says what produced the matrix.
func matrixIntro(m matrix.Result) string {
	s := fmt.Sprintf("Produced by `%s` on %s: %s", m.Meta.Command, m.Meta.Date, perCell(m.Meta.Repeat))
	if len(m.Meta.Parts) > 0 {
		parts := make([]string, len(m.Meta.Parts))
		for i, p := range m.Meta.Parts {
			parts[i] = strings.TrimSuffix(fmt.Sprintf("`%s` on %s, %s, rows %s, columns %s", p.Meta.Command, p.Meta.Date, perCell(p.Meta.Repeat), strings.Join(p.Scenarios, ", "), strings.Join(p.Impls, ", ")), ", columns ")
		}
		s = fmt.Sprintf("Merged by `%s` from %d matrices, each cell from the last with its row and column: %s", m.Meta.Command, len(parts), strings.Join(parts, "; "))
	}
	s += strings.TrimSuffix(fmt.Sprintf("; redis-server %s, %s. %s.", m.Meta.RedisVersion, m.Meta.GoVersion, m.Meta.Rechecked), " .")
	if m.Meta.Errors > 0 {
		s += fmt.Sprintf(" %d of %d runs failed to run (err).", m.Meta.Errors, m.Meta.Runs)
	}
	if d := m.Meta.Decided; d.Runs > 0 {
		s += fmt.Sprintf(" Decided: %s.", d)
	}
	if !m.Meta.Complete {
		s += fmt.Sprintf(" **Incomplete:** interrupted after %d of %d runs; cells marked … were not run.", m.Meta.Runs, m.Meta.Planned)
	}
	return s
}

// perCell says how many runs a cell has, and their seeds.
func perCell(repeat int) string {
	if repeat == 1 {
		return "1 run per cell (seed: the scenario's)"
	}
	return fmt.Sprintf("%d runs per cell (seeds: the scenario's seed + 0 … %d)", repeat, repeat-1)
}

// perturbedNote says that run r was perturbed, and which properties it violated under load.
func perturbedNote(r matrix.CellRun) string {
	var illegal []linearizability.Property
	for _, p := range linearizability.AllProperties() {
		if r.Verdicts[p] == linearizability.Illegal {
			illegal = append(illegal, p)
		}
	}
	if len(illegal) == 0 {
		return fmt.Sprintf("run %d was perturbed: %s", r.Index, r.Perturbed)
	}
	return fmt.Sprintf("run %d violated %s under load (a finding under load, not counted): %s", r.Index, linearizability.JoinProperties(illegal, ","), r.Perturbed)
}

func runTitle(r matrix.CellRun) string {
	if r.Error != "" {
		return fmt.Sprintf("run %d (seed %d): failed to run: %s", r.Index, r.Seed, r.Error)
	}
	var parts []string
	for _, p := range linearizability.AllProperties() {
		parts = append(parts, fmt.Sprintf("%s %s", p, r.Verdicts[p]))
	}
	return fmt.Sprintf("run %d (seed %d): %s", r.Index, r.Seed, strings.Join(parts, ", "))
}

// MatrixMarkdown is the matrix as Markdown without a title: the line saying what produced it,
// one table per fencing mode (rows: scenarios, columns: implementations), the notes and
// the legend. With links, each cell links to its run's report, relative to the matrix
// directory (for matrix.md); without, nothing links outside the document (for a copy in
// the repository, whose runs are not in it).
func MatrixMarkdown(m matrix.Result, links bool) string {
	v := matrixViewOf(m, links, nil)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", v.Intro)
	for _, t := range v.Tables {
		fmt.Fprintf(&b, "\n**Fencing %s**\n\n| scenario |", t.Fencing)
		for _, i := range t.Impls {
			name := i.Name
			if i.Mutant {
				name += " (mutant)"
			}
			fmt.Fprintf(&b, " %s |", mdEscape(name))
		}
		b.WriteString("\n|---|")
		for range t.Impls {
			b.WriteString("---|")
		}
		b.WriteString("\n| *fence source* |")
		for _, i := range t.Impls {
			fmt.Fprintf(&b, " %s |", i.FenceSource)
		}
		b.WriteString("\n")
		for _, r := range t.Rows {
			fmt.Fprintf(&b, "| %s |", mdEscape(r.Scenario))
			for _, c := range r.Cells {
				text := c.Summary
				if c.Link != "" {
					text = fmt.Sprintf("[%s](%s)", text, c.Link)
				}
				fmt.Fprintf(&b, " %s%s |", text, c.Note)
			}
			b.WriteString("\n")
		}
	}
	if diffs := m.ReleaseDiffs(); len(diffs) > 0 {
		cells := fmt.Sprintf("%d cells", len(diffs))
		if len(diffs) == 1 {
			cells = "1 cell"
		}
		fmt.Fprintf(&b, "\n**Where the releases differ** (%s; each links its first violating run, whose timeline is beside it):\n\n", cells)
		for _, d := range diffs {
			var sides []string
			for _, c := range d.Cells {
				sides = append(sides, fmt.Sprintf("%s [%s](%s)", mdEscape(c.Impl), c.Summary(), c.Link()))
			}
			fmt.Fprintf(&b, "- %s, fencing %s: %s\n", mdEscape(d.Scenario), d.Fencing, strings.Join(sides, " against "))
		}
	}
	if len(v.Notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range v.Notes {
			fmt.Fprintf(&b, "%d. %s: %s.\n", n.Num, mdEscape(strings.Join(n.Cells, ", ")), mdEscape(strings.TrimSuffix(n.Text, ".")))
		}
	}
	b.WriteString("\nLegend:\n\n")
	for _, l := range v.Legend {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	return b.String()
}

// mdEscape keeps text from being read as Markdown markup or breaking a table.
func mdEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`, "*", `\*`, "`", "\\`", "<", "&lt;", "[", `\[`, "]", `\]`).Replace(s)
}

func superscript(n int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	sup := []rune(digits)
	var b strings.Builder
	for _, d := range fmt.Sprint(n) {
		b.WriteRune(sup[d-'0'])
	}
	return b.String()
}

// MatrixHTML is the matrix as a self-contained page: coloured cells, every run linked.
func MatrixHTML(m matrix.Result) ([]byte, error) {
	var b bytes.Buffer
	v := matrixViewOf(m, true, nil)
	for _, d := range m.ReleaseDiffs() {
		dv := diffView{Scenario: d.Scenario, Fencing: d.Fencing}
		for _, c := range d.Cells {
			dv.Cells = append(dv.Cells, struct{ Impl, Summary, Class, Link, Timeline string }{c.Impl, c.Summary(), c.Class(), c.Link(), c.Timeline()})
		}
		v.Diffs = append(v.Diffs, dv)
	}
	if err := matrixPage.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("render %s: %w", matrix.HTMLFile, err)
	}
	return b.Bytes(), nil
}

var matrixPage = template.Must(template.New("matrix").Funcs(template.FuncMap{
	"md": page.InlineMarkdown, // the intro's `command` and **bold**, nothing else
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
th, td { border: 1px solid #bbb; padding: .3em .5em; text-align: center; vertical-align: top; }
th.scenario, td.scenario { text-align: left; }
th .sub { display: block; font-weight: normal; font-size: 85%; color: #555; }
td .runs { display: block; font-size: 80%; margin-top: .2em; }
td .runs a { margin: 0 .15em; }
a { color: inherit; }
.ok { background: #d4edda; } .illegal { background: #f8d7da; } .unknown { background: #fff3cd; }
.error { background: #ffd8a8; } .na { background: #eee; color: #777; } .none { background: #e2e3e5; color: #555; }
.pending { background: #fff; color: #999; } .underload { background: #e5d4f5; }
.runs .ok { color: #155724; background: none; } .runs .illegal { color: #a00; font-weight: bold; background: none; }
.runs .unknown, .runs .error { color: #8a6d00; background: none; } .runs .underload { color: #5a2d82; font-weight: bold; background: none; }
</style></head><body>
<h1>{{.Title}}</h1>
<p>{{md .Intro}}</p>
{{range .Tables}}<h2>Fencing {{.Fencing}}</h2>
<table>
<tr><th class="scenario">scenario</th>{{range .Impls}}<th title="{{.Title}}">{{.Name}}{{if .Mutant}}<span class="sub">mutant</span>{{end}}<span class="sub">fence source {{.FenceSource}}</span></th>{{end}}</tr>
{{range .Rows}}<tr><td class="scenario" title="{{.Title}}">{{.Scenario}}</td>{{range .Cells}}<td class="{{.Class}}"{{if .Title}} title="{{.Title}}"{{end}}>{{if .Link}}<a href="{{.Link}}">{{.Summary}}</a>{{else}}{{.Summary}}{{end}}{{.Note}}{{if .Runs}}<span class="runs">{{range .Runs}}<a class="{{.Class}}" href="{{.Link}}" title="{{.Title}}">{{.Label}}</a>{{end}}</span>{{end}}</td>{{end}}</tr>
{{end}}</table>
{{end}}{{if .Diffs}}<h2>Where the releases differ</h2>
<table>{{range .Diffs}}<tr><td class="scenario">{{.Scenario}}<span class="sub">fencing {{.Fencing}}</span></td>{{range .Cells}}<td class="{{.Class}}"><a href="{{.Link}}">{{.Impl}}: {{.Summary}}</a>{{if .Timeline}}<br><a href="{{.Link}}"><img src="{{.Timeline}}" alt="timeline of {{.Impl}}" width="480"></a>{{end}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{if .Notes}}<h2>Notes</h2>
<ol>{{range .Notes}}<li>{{range $i, $c := .Cells}}{{if $i}}, {{end}}{{$c}}{{end}}: {{.Text}}</li>
{{end}}</ol>{{end}}
<h2>Legend</h2>
<ul>{{range .Legend}}<li>{{.}}</li>
{{end}}</ul>
</body></html>
`))
