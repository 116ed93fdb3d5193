package report

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/locklab/locklab/timeline"
)

// IndexFile is the page of an output directory (a matrix, a campaign, a detection
// benchmark): its verdicts, with every run's picture and Porcupine page linked.
const IndexFile = "index.html"

// Files an index links in a run directory. historyFile is runner.HTMLFile, Porcupine's
// visualisation of the run; report must not import runner (docs/design.md), so the name
// is repeated here.
const (
	historyFile = "history.html"
	planFile    = "plan.json"    // runner.PlanFile
	errorFile   = "error.txt"    // matrix.ErrorFile, campaign.ErrorFile: why a run failed to run
	summaryJSON = "summary.json" // campaign.SummaryFile
)

// files says whether a file exists, by its path relative to the page (forward slashes):
// an index links only what is there, so that old run directories without a picture do not
// leave broken links.
type files func(rel string) bool

// filesIn checks paths relative to dir, the directory the page is written into.
func filesIn(dir string) files {
	return func(rel string) bool {
		if rel == "" {
			return false
		}
		p := filepath.FromSlash(rel)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		_, err := os.Stat(p)
		return err == nil
	}
}

// runLinks is what a page links of one run directory: its picture and its Porcupine
// page, each "" when the file is not there.
type runLinks struct {
	Dir       string // the run directory, relative to the page
	Timeline  string // its timeline.svg
	Porcupine string // its history.html
	Plan      string // its plan.json
	Error     string // its error.txt, when it failed to run
}

// runOf links the run in dir (relative to the page, forward slashes).
func (has files) runOf(dir string) runLinks {
	if dir == "" {
		return runLinks{}
	}
	l := runLinks{Dir: dir}
	for _, f := range []struct {
		name string
		to   *string
	}{{timeline.File, &l.Timeline}, {historyFile, &l.Porcupine}, {planFile, &l.Plan}, {errorFile, &l.Error}} {
		if p := path.Join(dir, f.name); has(p) {
			*f.to = p
		}
	}
	return l
}

// link is an href if the file exists, else "".
func (has files) link(rel string) string {
	if has(rel) {
		return rel
	}
	return ""
}

// pageStyle is the one stylesheet of every index page: inline, no external resource.
const pageStyle = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 110em; }
h1 { margin-bottom: .2em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
th, td { border: 1px solid #bbb; padding: .3em .5em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
th .sub { display: block; font-weight: normal; font-size: 85%; color: #555; }
table.verdicts td.cell { text-align: center; }
td .runs { display: block; font-size: 80%; margin-top: .2em; white-space: nowrap; }
td .runs .run { margin: 0 .2em; }
td.num { text-align: right; }
a { color: #0645ad; }
table.verdicts td.cell a { color: inherit; }
a.timeline, a.porcupine, a.campaign, span.no-picture, span.no-porcupine { margin-right: .4em; white-space: nowrap; }
span.no-picture, span.no-porcupine, .muted { color: #888; font-style: italic; }
dl.header { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; }
dl.header dt { font-weight: bold; }
dl.header dd { margin: 0; }
.verdict { font-size: 120%; padding: .3em .6em; display: inline-block; border-radius: .3em; }
.verdict.pass { background: #d4edda; } .verdict.fail { background: #f8d7da; } .verdict.inconclusive { background: #fff3cd; }
.explanation { font-size: 90%; color: #444; max-width: 50em; }
.ok, tr.pass { background: #d4edda; } .illegal, tr.safe { background: #f8d7da; } .unknown, tr.finding { background: #fff3cd; }
.error { background: #ffd8a8; } .na { background: #eee; color: #777; } .none { background: #e2e3e5; color: #555; }
.pending { background: #fff; color: #999; }
.runs .ok { color: #155724; background: none; } .runs .illegal { color: #a00; font-weight: bold; background: none; }
.runs .unknown, .runs .error { color: #8a6d00; background: none; }
.underload { background: #e5d4f5; } .runs .underload { color: #5a2d82; font-weight: bold; background: none; }
`

// inlineMarkdown renders a line's ` + "`code`" + ` and **bold**, escaping everything else.
func inlineMarkdown(s string) template.HTML {
	s = template.HTMLEscapeString(s)
	for _, m := range []struct{ mark, open, close string }{{"`", "<code>", "</code>"}, {"**", "<strong>", "</strong>"}} {
		for strings.Count(s, m.mark) >= 2 {
			s = strings.Replace(s, m.mark, m.open, 1)
			s = strings.Replace(s, m.mark, m.close, 1)
		}
	}
	return template.HTML(s)
}

// pageLayout is what every index shares: the head with the stylesheet, and how one run's
// links look. Pages are written as well-formed XML too (every element closed), so that a
// test can parse them strictly.
const pageLayout = `{{define "head"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"/><title>{{.}}</title>
<style>{{style}}</style></head>
<body>
{{end}}
{{define "foot"}}<footer class="muted"><p>Written by locklab. Links lead to files beside this page; a run without a picture shows "no picture".</p></footer>
</body></html>
{{end}}
{{define "run"}}{{if .Timeline}}<a class="timeline" href="{{.Timeline}}">timeline</a>{{else}}<span class="no-picture">no picture</span>{{end}}{{if .Porcupine}}<a class="porcupine" href="{{.Porcupine}}">porcupine</a>{{else}}<span class="no-porcupine">no history.html</span>{{end}}{{end}}
`

// pages holds every index's template; each is executed by name.
var pages = template.Must(template.New("pages").Funcs(template.FuncMap{
	"md":    inlineMarkdown,
	"style": func() template.CSS { return template.CSS(pageStyle + assessStyle) },
}).Parse(pageLayout + matrixIndexPage + campaignIndexPage + detectionIndexPage + demoPage + assessPage))

// renderPage executes the named page template on data.
func renderPage(name string, data any) ([]byte, error) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("render %s index: %w", name, err)
	}
	return b.Bytes(), nil
}

// writeIndex renders the named page into dir/index.html.
func writeIndex(dir, name string, data any) error {
	page, err := renderPage(name, data)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, IndexFile), page, 0o644); err != nil {
		return fmt.Errorf("write %s index: %w", name, err)
	}
	return nil
}
