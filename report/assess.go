package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locklab/locklab/assess"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/report/junit"
)

// assessView is report.html of an assessment: a card per lock on top, then its
// conformance checks and findings, each finding with its picture, plan and replay.
type assessView struct {
	Title    string
	Word     string // PASS, FAIL or INCONCLUSIVE
	Class    string // pass, fail or inconclusive
	Verdict  string
	Header   []headerItem
	Locks    []assessLockView
	Families []headerItem
	Errors   []string
	Diffs    []assess.ReleaseDiff
}

// headerItem is a line of a header or a card.
type headerItem struct{ Name, Value string }

type assessLockView struct {
	*assess.LockReport
	Word, Class string
	Counts      []headerItem
	Findings    []assessFindingView
	UnderLoad   []assessFindingView
}

type assessFindingView struct {
	assess.Finding
	Picture  template.URL // the timeline inlined as a data: URL, "" when there is none
	PlanText string       // the plan's JSON
	Failing  bool         // its class fails the assessment
}

// assessVerdict is the word and class of the whole assessment, and a line saying why.
func assessVerdict(r *assess.Report) (word, class, why string) {
	var parts []string
	for _, l := range r.Locks {
		parts = append(parts, fmt.Sprintf("%s: %d unexpected, %d avoidable, %d inherent", l.Name,
			l.Counts[assess.Unexpected], l.Counts[assess.Avoidable], l.Counts[assess.Inherent]))
	}
	why = strings.Join(parts, "; ")
	switch {
	case r.Failed():
		return "FAIL", "fail", why
	case r.Inconclusive != "" || len(r.Errors) > 0:
		return "INCONCLUSIVE", "inconclusive", why
	}
	return "PASS", "pass", why
}

// AssessHTML renders report.html of the assessment written in dir: self-contained, the
// pictures and plans inlined.
func AssessHTML(dir string, r *assess.Report) ([]byte, error) {
	word, class, why := assessVerdict(r)
	v := assessView{Title: "locklab assess: " + lockNames(r), Word: word, Class: class, Verdict: why, Errors: r.Errors, Diffs: r.ReleaseDiffs}
	v.Header = []headerItem{
		{"command", r.Meta.Command}, {"date", r.Meta.Date}, {"elapsed", fmt.Sprintf("%s of a budget of %s", r.Meta.Elapsed.D(), r.Meta.Budget.D())},
		{"catalog", fmt.Sprintf("%d runs (%d per cell)", r.Meta.CatalogRuns, r.Meta.Repeat)},
		{"campaign", fmt.Sprintf("%d plans (seed %d)", r.Meta.CampaignRuns, r.Meta.Seed)},
		{"decided", r.Decided.String()},
		{"fails on", joinClasses(r.FailOn)},
	}
	if r.Inconclusive != "" {
		v.Header = append(v.Header, headerItem{"inconclusive", r.Inconclusive})
	}
	if r.Meta.Interrupted {
		v.Header = append(v.Header, headerItem{"interrupted", "the assessment was stopped before its end: what ran is reported"})
	}
	for _, ref := range assess.References() {
		v.Families = append(v.Families, headerItem{ref.Family.String(), ref.Impl + ": " + ref.Why})
	}
	files := runFiles{}
	for _, l := range r.Locks {
		lv := assessLockView{LockReport: l, Word: "PASS", Class: "pass"}
		if l.Failed(r.FailOn) {
			lv.Word, lv.Class = "FAIL", "fail"
		}
		for _, c := range assess.Classes() {
			lv.Counts = append(lv.Counts, headerItem{string(c), fmt.Sprint(l.Counts[c])})
		}
		for _, f := range l.Findings {
			lv.Findings = append(lv.Findings, findingView(dir, files, f, r.FailOn))
		}
		for _, f := range l.UnderLoad {
			lv.UnderLoad = append(lv.UnderLoad, findingView(dir, files, f, nil))
		}
		v.Locks = append(v.Locks, lv)
	}
	return pages.Render("assess", v)
}

func findingView(dir string, files runFiles, f assess.Finding, failOn []assess.Class) assessFindingView {
	fv := assessFindingView{Finding: f, Failing: slices.Contains(failOn, f.Class)}
	if svg := files.read(dir, f.Timeline); svg != nil {
		fv.Picture = template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg))
	}
	fv.PlanText = string(files.read(dir, f.Plan))
	return fv
}

// runFiles are the files of an assessment's runs, read once each: the P1 and P2 findings
// of one run share its picture and its plan (nil: not there).
type runFiles map[string][]byte

func (f runFiles) read(dir, rel string) []byte {
	data, ok := f[rel]
	if !ok && rel != "" {
		data, _ = os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		f[rel] = data
	}
	return data
}

func lockNames(r *assess.Report) string {
	var names []string
	for _, l := range r.Locks {
		names = append(names, l.Name)
	}
	return strings.Join(names, ", ")
}

func joinClasses(cs []assess.Class) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c))
	}
	if len(s) == 0 {
		return "nothing (report only)"
	}
	return strings.Join(s, ", ")
}

const assessPage = `{{define "assess"}}{{template "head" .Title}}
<h1>{{.Title}}</h1>
<p><span id="verdict" class="verdict {{.Class}}">{{.Word}}</span> {{.Verdict}}</p>
<div id="cards" class="cards">
{{range .Locks}}<div class="card {{.Class}}" id="card-{{.Name}}">
<h2>{{.Name}} <span class="verdict {{.Class}}">{{.Word}}</span></h2>
<p class="muted">{{.Family}}{{if .Reference}}; compared with {{.Reference}}{{end}}</p>
<dl class="header">{{range .Counts}}<dt>{{.Name}}</dt><dd class="count {{.Name}}">{{.Value}}</dd>{{end}}</dl>
<p>Held everywhere: {{range $i, $p := .Held}}{{if $i}}, {{end}}{{$p}}{{else}}none{{end}}</p>
</div>
{{end}}</div>
<dl class="header">{{range .Header}}<dt>{{.Name}}</dt><dd>{{.Value}}</dd>{{end}}</dl>
{{if .Diffs}}<h2>Where the releases differ</h2>
<p class="muted">Catalog cells where the releases of one library assessed together broke different properties; each links its first violating run's timeline.</p>
<table id="release-diffs"><tr><th>scenario</th><th>fencing</th><th>releases</th></tr>
{{range .Diffs}}<tr class="release-diff"><td>{{.Scenario}}</td><td>{{.Fencing}}</td><td>{{range $i, $c := .Releases}}{{if $i}} · {{end}}{{$c.Name}}: {{if $c.Broke}}{{if $c.Timeline}}<a href="{{$c.Timeline}}">{{$c.Broke}}</a>{{else}}{{$c.Broke}}{{end}}{{else}}✓{{end}}{{end}}</td></tr>
{{end}}</table>{{end}}
{{if .Errors}}<h2>Errors</h2><ul id="errors">{{range .Errors}}<li class="error">{{.}}</li>{{end}}</ul>{{end}}
{{range .Locks}}<section class="lock" id="lock-{{.Name}}">
<h2>{{.Name}}</h2>
<p>{{.Description}}</p>
<p>It says it {{range $i, $s := .Says}}{{if $i}}, {{end}}{{$s}}{{end}}.</p>
<h3>Conformance</h3>
<table class="checks"><tr><th>check</th><th>a correct lock</th><th>result</th></tr>
{{range .Checks}}<tr class="check {{.Status}}"><td>{{.Name}}</td><td>{{.Asks}}</td><td>{{.Status}}{{if .Detail}}: {{.Detail}}{{end}}</td></tr>
{{end}}</table>
<h3>Findings</h3>
{{range .Findings}}<div class="finding {{.Class}}">
<h4><span class="class {{.Class}}">{{.Class}}</span> {{if .Property}}{{.Property}} violated{{else}}check failed{{end}} · {{.Source}}: {{.Scenario}}{{if .Fencing}} · fencing {{.Fencing}}{{end}}{{if .Faults}} · faults {{.Faults}}{{end}}</h4>
{{if .Runs}}<p>{{.Violated}} of {{.Runs}} runs violated it{{if .Also}}; it stands for {{.Also}} more failing plans of the same kind{{end}}.</p>{{end}}
<p class="evidence"><strong>Why {{.Class}}:</strong> {{.Evidence}}</p>
{{range .Releases}}<p class="release"><strong>{{.String}}</strong></p>{{end}}
<p class="advice"><strong>What to do:</strong> {{.Advice}}</p>
{{if .Explanation}}<p class="explanation">{{.Explanation}}</p>{{end}}
{{if .Replay}}<p>Replay: <code class="replay">{{.Replay}}</code></p>{{end}}
{{if .Picture}}<p><img class="timeline" alt="timeline of the run" src="{{.Picture}}"/></p>{{end}}
{{if .PlanText}}<details><summary>plan</summary><pre class="plan">{{.PlanText}}</pre></details>{{end}}
</div>
{{else}}<p class="none-found">No violation.</p>
{{end}}
{{if .UnderLoad}}<h3>Under load</h3><p class="muted">Violations in runs whose harness stalled: not classified, never dropped.</p>
<ul>{{range .UnderLoad}}<li class="underload">{{.Property}} · {{.Source}}: {{.Scenario}}{{if .Faults}} · faults {{.Faults}}{{end}}: {{.Stall}}</li>{{end}}</ul>{{end}}
</section>
{{end}}
<h2>Families and their reference locks</h2>
<table class="families"><tr><th>family</th><th>reference</th></tr>{{range .Families}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>{{end}}</table>
<p class="muted">Inherent: the family's reference breaks on the same plan too, or no rule of the models claims the property there. Avoidable: the reference held it on the same plan. Unexpected: a rule of the models claims it for a lock of this family, or a conformance check failed.</p>
{{template "foot"}}{{end}}
`

// WriteAssess writes report.html and junit.xml of the assessment into dir, beside its
// report.json.
func WriteAssess(dir string, r *assess.Report) error {
	page, err := AssessHTML(dir, r)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, assess.HTMLFile), page, 0o644); err != nil {
		return err
	}
	junit, err := junit.Assess(r)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, assess.JUnitFile), junit, 0o644)
}

// AssessText is the terminal summary: per lock its verdict and findings, one line each,
// with the replay command of each that fails the assessment.
func AssessText(w io.Writer, dir string, r *assess.Report) {
	word, _, why := assessVerdict(r)
	var b bytes.Buffer
	fmt.Fprintf(&b, "assess: %s — %s (%s, %d catalog runs, %d campaign plans; %s)\n", word, why, r.Meta.Elapsed.D(),
		r.Meta.CatalogRuns, r.Meta.CampaignRuns, r.Decided)
	for _, l := range r.Locks {
		fmt.Fprintf(&b, "\n%s, a %s", l.Name, l.Family)
		if l.Reference != "" {
			fmt.Fprintf(&b, " (compared with %s)", l.Reference)
		}
		b.WriteString(":\n")
		for _, c := range l.Checks {
			if c.Status != assess.CheckPassed {
				fmt.Fprintf(&b, "  conformance %s: %s %s\n", c.Name, c.Status, c.Detail)
			}
		}
		// Unexpected and avoidable findings in full; the inherent ones, what every lock
		// of the family shows, one line per property (report.html has each).
		inherent := map[lin.Property][]string{}
		for _, f := range l.Findings {
			if f.Class == assess.Inherent {
				where := strings.TrimPrefix(f.Scenario, "campaign ")
				if f.Fencing != "" && f.Fencing != "off" {
					where += " (fencing " + f.Fencing + ")"
				}
				inherent[f.Property] = append(inherent[f.Property], where)
				continue
			}
			what := string(f.Property)
			if what == "" {
				what = "check"
			}
			fmt.Fprintf(&b, "  %-10s %s %s: %s", f.Class, what, f.Source, f.Scenario)
			if f.Fencing != "" {
				fmt.Fprintf(&b, ", fencing %s", f.Fencing)
			}
			fmt.Fprintf(&b, "\n             %s\n", f.Evidence)
			fmt.Fprintf(&b, "             %s\n", f.Advice)
			if f.Replay != "" {
				fmt.Fprintf(&b, "             %s\n", f.Replay)
			}
			for _, c := range f.Releases {
				fmt.Fprintf(&b, "             %s\n", c)
			}
		}
		for _, p := range lin.AllProperties() {
			if where := inherent[p]; len(where) > 0 {
				fmt.Fprintf(&b, "  %-10s %s in %d places: %s\n", assess.Inherent, p, len(where), strings.Join(where, ", "))
			}
		}
		if len(l.Findings) == 0 {
			b.WriteString("  no violation\n")
		}
		if n := len(l.UnderLoad); n > 0 {
			fmt.Fprintf(&b, "  %d violations under load (the harness stalled): listed in the report, not classified\n", n)
		}
	}
	if len(r.ReleaseDiffs) > 0 {
		fmt.Fprintf(&b, "\nwhere the releases differ (%d catalog cells):\n", len(r.ReleaseDiffs))
		for _, d := range r.ReleaseDiffs {
			var parts []string
			for _, c := range d.Releases {
				broke := c.Broke
				if broke == "" {
					broke = "✓"
				}
				parts = append(parts, c.Name+" "+broke)
			}
			fmt.Fprintf(&b, "  %s, fencing %s: %s\n", d.Scenario, d.Fencing, strings.Join(parts, " · "))
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	if r.Inconclusive != "" {
		fmt.Fprintf(&b, "%s\n", r.Inconclusive)
	}
	fmt.Fprintf(&b, "\nreport: %s\n", filepath.Join(dir, assess.HTMLFile))
	w.Write(b.Bytes())
}
