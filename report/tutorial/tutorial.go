package tutorial

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/timeline"
	"github.com/locklab/locklab/tla/bridge"
)

// Experiment is one experiment of the tutorial: one plan run Repeat times per fencing mode.
type Experiment struct {
	Name        string // names its pictures: NAME-fencing-MODE.svg
	Description string
	Command     string   // how a reader runs it
	Fencings    []string // in the order run
	Runs        map[string][]ExperimentRun
}

// ExperimentRun is one run of an experiment.
type ExperimentRun struct {
	Dir       string // its run directory, with timeline.svg
	Result    lin.Result
	Narration string
}

// Tutorial writes a document from a template whose numbers and pictures come from real
// runs: the template asks for experiments (run), and the CLI's Run runs them.
type Tutorial struct {
	// Run runs an experiment: source is a catalog scenario or a plan file, settings are
	// key=value overrides of the plan (name=… names the experiment).
	Run func(source string, settings []string) (*Experiment, error)
	// Pictures is the directory timelines are copied into; Link is how the document
	// reaches that directory (relative to the document).
	Pictures, Link string
	// Root is the repository's root, where tla/testdata holds TLC's counterexamples.
	Root string
	// Unchecked skips the claims the prose makes of the runs (expect): for checking a
	// template's structure with made-up runs.
	Unchecked bool
}

// Write executes the template at tmpl into w.
func (t *Tutorial) Write(w io.Writer, tmpl string) error {
	src, err := os.ReadFile(tmpl)
	if err != nil {
		return fmt.Errorf("tutorial: %w", err)
	}
	tp, err := template.New(filepath.Base(tmpl)).Option("missingkey=error").Funcs(template.FuncMap{
		"run": func(source string, settings ...string) (*Experiment, error) {
			return t.Run(source, settings)
		},
		"verdicts": verdictTable,
		"count":    illegalCount,
		"explain":  explanation,
		"expect": func(e *Experiment, fencing, property, want string) (string, error) {
			if t.Unchecked {
				return "", nil
			}
			return expectation(e, fencing, property, want)
		},
		"narration": narration,
		"picture":   t.picture,
		"tla":       t.counterexample,
	}).Parse(string(src))
	if err != nil {
		return fmt.Errorf("tutorial: %w", err)
	}
	var b bytes.Buffer
	if err := tp.Execute(&b, nil); err != nil {
		return fmt.Errorf("tutorial: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// shown is the run an experiment's picture and words come from in one fencing mode: the
// first whose verdict is the most common one, so that a rare outcome is not what the
// reader sees.
func (e *Experiment) shown(fencing string) (ExperimentRun, error) {
	runs := e.Runs[fencing]
	if len(runs) == 0 {
		return ExperimentRun{}, fmt.Errorf("experiment %s has no run with fencing %s (it ran %s)", e.Name, fencing, strings.Join(e.Fencings, ", "))
	}
	n := map[lin.Verdict]int{}
	for _, r := range runs {
		n[r.Result.Verdict]++
	}
	best := runs[0]
	for _, r := range runs {
		if n[r.Result.Verdict] > n[best.Result.Verdict] {
			best = r
		}
	}
	return best, nil
}

// verdictTable is a Markdown table: a row per property, a column per fencing mode, each
// cell how many runs violated it (or that it held in every run).
func verdictTable(e *Experiment) string {
	var b strings.Builder
	b.WriteString("| property |")
	for _, f := range e.Fencings {
		fmt.Fprintf(&b, " fencing %s |", f)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(e.Fencings)) + "\n")
	for _, p := range lin.AllProperties() {
		var cells []string
		applies := false
		for _, f := range e.Fencings {
			cell, ok := countCell(e.Runs[f], p)
			applies = applies || ok
			cells = append(cells, cell)
		}
		if applies {
			fmt.Fprintf(&b, "| %s %s | %s |\n", p, p.Name(), strings.Join(cells, " | "))
		}
	}
	return b.String()
}

// countCell says how property p fared over runs; false when it applied to none of them.
func countCell(runs []ExperimentRun, p lin.Property) (string, bool) {
	var illegal, unknown, na int
	for _, r := range runs {
		pr, _ := r.Result.Property(p)
		switch pr.Verdict {
		case lin.Illegal:
			illegal++
		case lin.Unknown:
			unknown++
		case lin.NA, "":
			na++
		}
	}
	n := len(runs)
	switch {
	case na == n:
		return "n/a", false
	case illegal > 0:
		return fmt.Sprintf("**violated %d/%d**", illegal, n), true
	case unknown > 0:
		return fmt.Sprintf("undecided %d/%d", unknown, n), true
	}
	return fmt.Sprintf("held %d/%d", n-na, n), true
}

// illegalCount is "2/3": in how many runs with fencing mode property p was violated.
func illegalCount(e *Experiment, fencing, property string) (string, error) {
	n, runs, err := illegalRuns(e, fencing, property)
	return fmt.Sprintf("%d/%d", n, runs), err
}

// illegalRuns is how many of the experiment's runs with fencing mode violated property,
// and how many there were.
func illegalRuns(e *Experiment, fencing, property string) (n, runs int, err error) {
	if len(e.Runs[fencing]) == 0 {
		return 0, 0, fmt.Errorf("experiment %s has no run with fencing %s", e.Name, fencing)
	}
	for _, r := range e.Runs[fencing] {
		if pr, _ := r.Result.Property(lin.Property(property)); pr.Verdict == lin.Illegal {
			n++
		}
	}
	return n, len(e.Runs[fencing]), nil
}

// expectation checks a claim the prose makes against the runs, and writes nothing: want
// "held" means no run violated property, "violated" that most runs did. A claim the runs
// do not bear out stops the document being written.
func expectation(e *Experiment, fencing, property, want string) (string, error) {
	n, runs, err := illegalRuns(e, fencing, property)
	if err != nil {
		return "", err
	}
	switch want {
	case "held":
		if n > 0 {
			return "", fmt.Errorf("the text says %s held in experiment %s with fencing %s, but %d of %d runs violated it", property, e.Name, fencing, n, runs)
		}
	case "violated":
		if 2*n <= runs {
			return "", fmt.Errorf("the text says experiment %s violates %s with fencing %s, but only %d of %d runs did", e.Name, property, fencing, n, runs)
		}
	default:
		return "", fmt.Errorf("expect %q: want held or violated", want)
	}
	return "", nil
}

// explanation is the checker's words on property in the shown run, or "" when it held.
func explanation(e *Experiment, fencing, property string) (string, error) {
	r, err := e.shown(fencing)
	if err != nil {
		return "", err
	}
	pr, _ := r.Result.Property(lin.Property(property))
	if pr.Verdict != lin.Illegal {
		return "", nil
	}
	return pr.Explanation, nil
}

// narration is the shown run told in words, as an indented block.
func narration(e *Experiment, fencing string) (string, error) {
	r, err := e.shown(fencing)
	if err != nil {
		return "", err
	}
	return "```\n" + strings.TrimRight(r.Narration, "\n") + "\n```", nil
}

// picture copies the shown run's timeline into the pictures directory and links it.
func (t *Tutorial) picture(e *Experiment, fencing string) (string, error) {
	r, err := e.shown(fencing)
	if err != nil {
		return "", err
	}
	svg, err := os.ReadFile(filepath.Join(r.Dir, timeline.File))
	if err != nil {
		return "", fmt.Errorf("picture of %s: %w", e.Name, err)
	}
	name := fmt.Sprintf("%s-fencing-%s.svg", e.Name, fencing)
	if err := os.MkdirAll(t.Pictures, 0o755); err != nil {
		return "", fmt.Errorf("picture of %s: %w", e.Name, err)
	}
	if err := os.WriteFile(filepath.Join(t.Pictures, name), svg, 0o644); err != nil {
		return "", fmt.Errorf("picture of %s: %w", e.Name, err)
	}
	return fmt.Sprintf("![%s, fencing %s: timeline of a real run](%s)", e.Name, fencing, path.Join(t.Link, name)), nil
}

// counterexample is TLC's counterexample for config (tla/testdata/CONFIG.trace) as a
// numbered list of the steps the spec records, with the model's clock.
func (t *Tutorial) counterexample(config string) (string, error) {
	file := filepath.Join(t.Root, "tla", "testdata", config+".trace")
	tr, err := bridge.ReadTrace(file)
	if err != nil {
		return "", fmt.Errorf("TLA+ counterexample: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "TLC's shortest counterexample for `%s` (spec `%s`, invariant `%s` violated; [trace](../tla/testdata/%s.trace), [config](../%s)):\n\n",
		tr.Config, tr.Spec, tr.Invariant, config, tr.ConfigPath)
	for i, s := range tr.States {
		step := strings.TrimSpace(s.Event.Name + " " + strings.Join(s.Event.Args, " "))
		now := cmp.Or(s.Vars["now"], "?")
		fmt.Fprintf(&b, "%d. t = %s: `%s`\n", i+1, now, step)
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
