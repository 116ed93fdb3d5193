// Package page is what every HTML page of report shares: the one stylesheet, the head and
// the foot, how one run's links look, the files of a run directory a page links, and the
// writing of an output directory's index.html. It knows no result of its own.
package page

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

// Files a page links in a run directory. historyFile is runner.HTMLFile, Porcupine's
// visualisation of the run; report must not import runner (docs/design.md), so the name
// is repeated here.
const (
	historyFile = "history.html"
	planFile    = "plan.json" // runner.PlanFile
	errorFile   = "error.txt" // matrix.ErrorFile, campaign.ErrorFile: why a run failed to run
)

// Files says whether a file exists, by its path relative to the page (forward slashes):
// a page links only what is there, so that old run directories without a picture do not
// leave broken links.
type Files func(rel string) bool

// FilesIn checks paths relative to dir, the directory the page is written into.
func FilesIn(dir string) Files {
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

// RunLinks is what a page links of one run directory: its picture and its Porcupine
// page, each "" when the file is not there.
type RunLinks struct {
	Dir       string // the run directory, relative to the page
	Timeline  string // its timeline.svg
	Porcupine string // its history.html
	Plan      string // its plan.json
	Error     string // its error.txt, when it failed to run
}

// RunOf links the run in dir (relative to the page, forward slashes).
func (has Files) RunOf(dir string) RunLinks {
	if dir == "" {
		return RunLinks{}
	}
	l := RunLinks{Dir: dir}
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

// Link is an href if the file exists, else "".
func (has Files) Link(rel string) string {
	if has(rel) {
		return rel
	}
	return ""
}

// InlineMarkdown renders a line's ` + "`code`" + ` and **bold**, escaping everything else.
func InlineMarkdown(s string) template.HTML {
	s = template.HTMLEscapeString(s)
	for _, m := range []struct{ mark, open, close string }{{"`", "<code>", "</code>"}, {"**", "<strong>", "</strong>"}} {
		for strings.Count(s, m.mark) >= 2 {
			s = strings.Replace(s, m.mark, m.open, 1)
			s = strings.Replace(s, m.mark, m.close, 1)
		}
	}
	return template.HTML(s)
}

// layout is what every page shares: the head with the stylesheet, and how one run's
// links look. Pages are written as well-formed XML too (every element closed), so that a
// test can parse them strictly.
const layout = `{{define "head"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"/><title>{{.}}</title>
<style>{{style}}</style></head>
<body>
{{end}}
{{define "foot"}}<footer class="muted"><p>Written by locklab. Links lead to files beside this page; a run without a picture shows "no picture".</p></footer>
</body></html>
{{end}}
{{define "run"}}{{if .Timeline}}<a class="timeline" href="{{.Timeline}}">timeline</a>{{else}}<span class="no-picture">no picture</span>{{end}}{{if .Porcupine}}<a class="porcupine" href="{{.Porcupine}}">porcupine</a>{{else}}<span class="no-porcupine">no history.html</span>{{end}}{{end}}
`

// Pages are page templates on the shared layout, each executed by the name it defines;
// a template may call "head" (with the title), "foot", "run" (with a RunLinks) and the
// functions md (InlineMarkdown) and style.
type Pages struct{ t *template.Template }

// Parse adds the templates defs to the shared layout.
func Parse(defs ...string) Pages {
	return Pages{template.Must(template.New("pages").Funcs(template.FuncMap{
		"md":    InlineMarkdown,
		"style": func() template.CSS { return template.CSS(style + cardStyle) },
	}).Parse(layout + strings.Join(defs, "")))}
}

// Render executes the named page template on data.
func (p Pages) Render(name string, data any) ([]byte, error) {
	var b bytes.Buffer
	if err := p.t.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("render %s index: %w", name, err)
	}
	return b.Bytes(), nil
}

// WriteIndex renders the named page into dir/index.html.
func (p Pages) WriteIndex(dir, name string, data any) error {
	page, err := p.Render(name, data)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, IndexFile), page, 0o644); err != nil {
		return fmt.Errorf("write %s index: %w", name, err)
	}
	return nil
}
