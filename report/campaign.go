package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/campaign"
	lin "github.com/locklab/locklab/linearizability"
)

// CampaignMarkdown is the summary for people (and for a CI job summary).
func CampaignMarkdown(s *campaign.Summary) string {
	var b strings.Builder
	title := "locklab campaign"
	if s.Class != "" {
		title += ": class " + s.Class
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	fmt.Fprintf(&b, "Seed %d, shard %s: %d plans run (%d re-runs to confirm and shrink, %d errors) in %s, %.1f plans/minute per runner",
		s.Seed, s.Shard, s.Runs, s.Reruns, s.Errors, s.Elapsed.D(), s.PlansPerMinute)
	if s.Interrupted {
		b.WriteString(", **interrupted**")
	}
	b.WriteString(".\n\n")
	if s.Mixed {
		b.WriteString("Space: several; each merged campaign's summary.md says which.\n\n")
	} else {
		fmt.Fprintf(&b, "Space: implementations %s; fault kinds %s; fencing %s; faults per plan up to %s%s.\n\n",
			orAll(s.Space.Impls), orAll(s.Space.Faults), orAll(s.Space.Fencings), maxFaultsText(s.Space), calmText(s.Space)+ttlText(s.Space))
	}
	fmt.Fprintf(&b, "**%s**: %d safe-configuration violations, %d findings", CampaignVerdict(s), s.SafeViolations, s.Findings)
	if len(s.UnderLoad) > 0 {
		fmt.Fprintf(&b, ", %d findings under load", len(s.UnderLoad))
	}
	searched := s.SearchedFor()
	for _, c := range sortedKeys(searched) {
		if searched[c] {
			fmt.Fprintf(&b, "; class %s found", c)
		} else {
			fmt.Fprintf(&b, "; class %s **not found**", c)
		}
	}
	fmt.Fprintf(&b, ".\n\nDecided: %s.", DecidedText(s))
	if err := s.Inconclusive(); err != nil {
		fmt.Fprintf(&b, " **%s**.", err)
	}
	b.WriteString("\n\n| property | runs with a violation | first after | first run |\n|---|---|---|---|\n")
	for _, prop := range lin.AllProperties() {
		first := "–"
		run := "–"
		if f, ok := s.FirstViolation[prop]; ok {
			first, run = f.After.D().String(), fmt.Sprintf("%d (%s)", f.Run, f.Plan)
		}
		fmt.Fprintf(&b, "| %s %s | %d | %s | %s |\n", prop, prop.Name(), s.Violations[prop], first, run)
	}
	if len(s.FirstDetection) > 0 {
		b.WriteString("\n## Bug classes found\n\nA detection counts once a re-run of its plan shows the class again; the time is when that confirmation ended.\n\n| class | confirmed after | runs by then | plan |\n|---|---|---|---|\n")
		for _, c := range sortedKeys(s.FirstDetection) {
			f := s.FirstDetection[c]
			fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", c, f.After.D(), f.Runs, f.Plan)
		}
	}
	if len(s.Unconfirmed) > 0 {
		b.WriteString("\nDetections that did not reproduce in their re-runs (not counted):")
		for _, c := range sortedKeys(s.Unconfirmed) {
			fmt.Fprintf(&b, " %s %d;", c, s.Unconfirmed[c])
		}
		b.WriteString("\n")
	}
	if len(s.Kinds) > 0 {
		b.WriteString("\n## Findings by what they show\n\nA kind is the lock, each violated property with the shape of its first violation, and the plan's fault kinds; the first failure of a kind that reproduced was shrunk")
		if s.CompareWith != "" {
			fmt.Fprintf(&b, " and its plan run on %s", s.CompareWith)
		}
		b.WriteString(".\n\n| lock | shows | faults | failing runs | taken up |")
		if s.CompareWith != "" {
			fmt.Fprintf(&b, " on %s |", s.CompareWith)
		}
		b.WriteString("\n|---|---|---|---|---|")
		if s.CompareWith != "" {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, k := range s.Kinds {
			shows := strings.Join(k.Shows, "<br>")
			if k.Safe {
				shows = "**safe configuration** " + shows
			}
			taken := "none reproduced"
			if k.Taken >= 0 {
				taken = fmt.Sprint("run ", k.Taken)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |", k.Impl, shows, k.Faults, runList(k.Runs), taken)
			if s.CompareWith != "" {
				on := "not compared"
				if k.Compare != nil {
					on = k.Compare.String()
				}
				fmt.Fprintf(&b, " %s |", on)
			}
			b.WriteString("\n")
		}
	}
	failures := func(title string, safe bool) {
		var fs []*campaign.Failure
		for _, f := range s.Failures {
			if (len(f.Safe) > 0) == safe {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		for _, f := range fs {
			fmt.Fprintf(&b, "- run %d: %s %s fencing %s, faults %s: %s illegal", f.Run, f.Impl, f.Topology, f.Fencing, f.Faults, illegalText(f, ","))
			if len(f.Rules) > 0 {
				fmt.Fprintf(&b, " (expected by %s)", strings.Join(f.Rules, "; "))
			}
			if len(f.Classes) > 0 {
				fmt.Fprintf(&b, ", class %s", strings.Join(f.Classes, ", "))
			}
			fmt.Fprintf(&b, " after %s. Run `%s`", f.After.D(), f.Dir)
			if f.Confirms > 0 {
				fmt.Fprintf(&b, "; %s reproduced %d/%d", f.Target, f.Reproduced, f.Confirms)
			}
			if f.Saved != "" {
				fmt.Fprintf(&b, "; saved `%s` (%s)", f.Saved, f.SizeNote())
			}
			if f.Note != "" {
				fmt.Fprintf(&b, "; %s", f.Note)
			}
			if f.Compare != nil {
				fmt.Fprintf(&b, "; **%s**", f.Compare)
			}
			b.WriteString(".\n")
			if f.Explanation != "" {
				fmt.Fprintf(&b, "  %s\n", truncate(f.Explanation, 400))
			}
		}
	}
	failures("Safe-configuration violations", true)
	failures("Findings", false)
	b.WriteString("\n## Plans\n\n| implementation | plans |\n|---|---|\n")
	for _, k := range sortedKeys(s.PlansPerImpl) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, s.PlansPerImpl[k])
	}
	b.WriteString("\n| fault kind | plans with it |\n|---|---|\n")
	for _, k := range sortedKeys(s.PlansPerFault) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, s.PlansPerFault[k])
	}
	if len(s.PerturbedRuns) > 0 {
		fmt.Fprintf(&b, "\n## Perturbed runs (%d)\n\nThe harness itself stalled in these runs, so their verdicts are counted neither as violations nor as passes.\n\n", s.Perturbed)
		for _, e := range s.PerturbedRuns {
			fmt.Fprintf(&b, "- run %d (`%s`): %s\n", e.Run, e.Plan, truncate(e.Error, 300))
		}
	}
	if len(s.UnderLoad) > 0 {
		fmt.Fprintf(&b, "\n## Findings under load (%d)\n\nViolations in runs whose harness stalled: the stall may have caused them, or the lock may break only under load. Counted neither as findings nor as passes; each run is kept.\n\n", len(s.UnderLoad))
		for _, u := range s.UnderLoad {
			fmt.Fprintf(&b, "- run %d: %s\n", u.Run, underLoadText(u))
		}
	}
	if len(s.RunErrors) > 0 {
		fmt.Fprintf(&b, "\n## Errors (%d)\n\n", s.Errors)
		for _, e := range s.RunErrors {
			fmt.Fprintf(&b, "- run %d (`%s`): %s\n", e.Run, e.Plan, truncate(e.Error, 300))
		}
	}
	if len(s.Shards) > 0 {
		fmt.Fprintf(&b, "\nMerged from %s.\n", strings.Join(s.Shards, ", "))
	}
	return b.String()
}

// CampaignVerdict is the campaign's verdict in a word: FAIL (a safe-configuration
// violation, or a class searched for not found), INCONCLUSIVE (too little decided by
// its thresholds) or PASS. A safe-configuration violation fails whatever was decided.
func CampaignVerdict(s *campaign.Summary) string {
	switch {
	case s.SafeViolations > 0:
		return "FAIL"
	case s.Inconclusive() != nil:
		return "INCONCLUSIVE"
	case !s.OK():
		return "FAIL"
	}
	return "PASS"
}

// DecidedText is how many pairs the campaign decided, and by which thresholds.
func DecidedText(s *campaign.Summary) string {
	c := s.Counts()
	t := fmt.Sprintf("%d %s decided (held or violated), %d undecided (a checker ran out of time), %d in perturbed runs; %d of %d runs perturbed",
		c.Decided, s.PairsName(), c.Undecided, c.Perturbed, c.PerturbedRuns, c.Runs)
	if th := s.Thresholds; th != nil {
		t += fmt.Sprintf(" (conclusive with at least %d decided and at most %v of the runs perturbed)", th.MinDecided, th.MaxPerturbed)
	}
	return t
}

// underLoadText is a finding under load in a line: what, where, and the stall.
func underLoadText(u *campaign.UnderLoad) string {
	t := fmt.Sprintf("%s %s fencing %s, faults %s: %s illegal under load", u.Impl, u.Topology, u.Fencing, u.Faults, lin.JoinProperties(u.Illegal, ","))
	if len(u.Safe) > 0 {
		t += fmt.Sprintf(" (%s expected to hold)", lin.JoinProperties(u.Safe, ","))
	}
	return fmt.Sprintf("%s; run `%s`; %s", t, u.Dir, truncate(u.Stall, 300))
}

// CampaignText is the campaign's result in a few lines, for the terminal; out is its
// output directory.
func CampaignText(w io.Writer, out string, s *campaign.Summary) {
	fmt.Fprintf(w, "\n%d plans run, %d re-runs, %d errors in %s (%.1f plans/minute)", s.Runs, s.Reruns, s.Errors, s.Elapsed.D(), s.PlansPerMinute)
	if s.Interrupted {
		fmt.Fprint(w, ", interrupted")
	}
	fmt.Fprintln(w)
	for _, p := range lin.AllProperties() {
		line := fmt.Sprintf("  %s %-20s %4d runs", p, p.Name(), s.Violations[p])
		if f, ok := s.FirstViolation[p]; ok {
			line += fmt.Sprintf(", first after %s (run %d)", f.After.D(), f.Run)
		}
		fmt.Fprintln(w, line)
	}
	for c, f := range s.FirstDetection {
		if s.Class == "" || c == s.Class {
			fmt.Fprintf(w, "  class %s found after %s, %d runs (%s)\n", c, f.After.D(), f.Runs, f.Plan)
		}
	}
	for _, c := range s.Missed() {
		fmt.Fprintf(w, "  class %s NOT found (confirmed) in %d runs\n", c, s.Runs)
	}
	for c, n := range s.Unconfirmed {
		fmt.Fprintf(w, "  class %s: %d detections did not reproduce in their re-runs (not counted)\n", c, n)
	}
	for _, f := range s.Failures {
		kind := "finding"
		if len(f.Safe) > 0 {
			kind = "SAFE-CONFIGURATION VIOLATION"
		}
		fmt.Fprintf(w, "  %s: run %d %s %s fencing %s faults %s: %s illegal", kind, f.Run, f.Impl, f.Topology, f.Fencing, f.Faults, illegalText(f, ","))
		if f.Saved != "" {
			fmt.Fprintf(w, "; saved %s", filepath.Join(out, f.Saved))
		}
		if f.Compare != nil {
			fmt.Fprintf(w, "; %s", f.Compare)
		}
		fmt.Fprintln(w)
	}
	for _, u := range s.UnderLoad {
		fmt.Fprintf(w, "  finding UNDER LOAD: run %d %s\n", u.Run, underLoadText(u))
	}
	fmt.Fprintf(w, "decided: %s\n", DecidedText(s))
	if err := s.Inconclusive(); err != nil {
		fmt.Fprintln(w, err)
	}
	fmt.Fprintf(w, "%s: %d safe-configuration violations, %d findings, %d under load; summary %s, page %s\n", CampaignVerdict(s), s.SafeViolations, s.Findings, len(s.UnderLoad),
		filepath.Join(out, campaign.MarkdownFile), filepath.Join(out, IndexFile))
}

// illegalText is a failure's violated properties with what each showed, when known:
// "P1 (acquire ok while another believed), P6 (extend ok after another's grant)".
func illegalText(f *campaign.Failure, sep string) string {
	if len(f.Shows) == 0 {
		return lin.JoinProperties(f.Illegal, sep)
	}
	var parts []string
	for _, s := range f.Shows {
		prop, shape, ok := strings.Cut(s, ": ")
		if ok {
			parts = append(parts, prop+" ("+shape+")")
		} else {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// runList is runs as "3, 7, 12" (the first 10, then how many more).
func runList(runs []int) string {
	var parts []string
	for i, r := range runs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(runs)-10))
			break
		}
		parts = append(parts, fmt.Sprint(r))
	}
	return strings.Join(parts, ", ")
}

func orAll(xs []string) string {
	if len(xs) == 0 {
		return "all"
	}
	return strings.Join(xs, ", ")
}

func maxFaultsText(s campaign.Space) string {
	switch {
	case s.MaxFaults < 0 || (len(s.Faults) == 1 && s.Faults[0] == campaign.NoFaults):
		return "0"
	case s.MaxFaults == 0:
		return fmt.Sprint(campaign.DefaultMaxFaults)
	}
	return fmt.Sprint(s.MaxFaults)
}

func calmText(s campaign.Space) string {
	if s.Calm {
		return "; calm workloads only"
	}
	return ""
}

// ttlText names the space's fixed TTL, if it has one.
func ttlText(s campaign.Space) string {
	if s.TTL.D() == 0 {
		return ""
	}
	return "; ttl " + s.TTL.D().String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// JUnit XML, as GitHub Actions, GitLab and Jenkins read it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
	SystemErr string        `xml:"system-err,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// CampaignJUnit renders the summary as JUnit XML: one test case per kind of plan (implementation,
// topology, fencing, fault kinds). A safe-configuration violation is a failure; findings
// are listed in the case's output; a kind of plan none of whose runs could run is an
// error. A class search adds a case that fails when the class was not found.
func CampaignJUnit(s *campaign.Summary) ([]byte, error) {
	suite := junitSuite{
		Name: fmt.Sprintf("locklab campaign seed %d shard %s", s.Seed, s.Shard), Time: seconds(s.Elapsed.D()),
		Timestamp: s.Started.Format("2006-01-02T15:04:05"),
		Properties: []junitProperty{
			{"seed", fmt.Sprint(s.Seed)}, {"shard", s.Shard}, {"runs", fmt.Sprint(s.Runs)}, {"reruns", fmt.Sprint(s.Reruns)},
			{"errors", fmt.Sprint(s.Errors)}, {"interrupted", fmt.Sprint(s.Interrupted)},
			{"decided", fmt.Sprint(s.Counts().Decided)}, {"undecided", fmt.Sprint(s.Counts().Undecided)},
			{"perturbed", fmt.Sprint(s.Counts().Perturbed)}, {"perturbed_runs", fmt.Sprint(s.Perturbed)},
			{"under_load", fmt.Sprint(len(s.UnderLoad))},
			{"impls", orAll(s.Space.Impls)}, {"faults", orAll(s.Space.Faults)}, {"fencings", orAll(s.Space.Fencings)},
		},
	}
	if s.Mixed {
		suite.Properties = append(suite.Properties[:11], junitProperty{"space", "several (merged)"})
	}
	for _, g := range s.Groups {
		c := junitCase{Classname: "locklab.campaign." + g.Impl, Name: fmt.Sprintf("%s (%d runs)", g.Name, g.Runs), Time: seconds(g.RunTime.D())}
		var safe, findings, errs strings.Builder
		for _, f := range s.Failures {
			if f.GroupName() != g.Name {
				continue
			}
			line := fmt.Sprintf("run %d: %s illegal; run %s; plan %s", f.Run, lin.JoinProperties(f.Illegal, ","), f.Dir, f.Plan)
			if f.Saved != "" {
				line += fmt.Sprintf("; shrunk plan %s (%s)", f.Saved, f.SizeNote())
			}
			if f.Explanation != "" {
				line += "\n  " + truncate(f.Explanation, 400)
			}
			if len(f.Safe) > 0 {
				fmt.Fprintf(&safe, "%s\n  expected to hold: %s\n", line, strings.Join(f.Rules, "; "))
			} else {
				fmt.Fprintln(&findings, line)
			}
		}
		if g.Errors > 0 {
			fmt.Fprintf(&errs, "%d of %d runs could not be run (see summary.md)\n", g.Errors, g.Runs)
		}
		if safe.Len() > 0 {
			c.Failure = &junitMessage{
				Message: fmt.Sprintf("%d safe-configuration violations", g.SafeViolations),
				Type:    "safe-configuration violation", Text: safe.String(),
			}
			suite.Failures++
		} else if g.Errors == g.Runs && g.Runs > 0 {
			c.Error = &junitMessage{Message: "no run of this kind of plan could run", Type: "error", Text: errs.String()}
			suite.Errors++
		}
		if findings.Len() > 0 {
			c.SystemOut = "findings (violations the models do not rule out):\n" + findings.String()
		}
		var under strings.Builder
		for _, u := range s.UnderLoad {
			if (&campaign.Failure{Impl: u.Impl, Topology: u.Topology, Fencing: u.Fencing, Faults: u.Faults}).GroupName() == g.Name {
				fmt.Fprintf(&under, "run %d: %s\n", u.Run, underLoadText(u))
			}
		}
		if under.Len() > 0 {
			c.SystemOut += "findings under load (violations in runs whose harness stalled; not counted):\n" + under.String()
		}
		c.SystemErr = errs.String()
		suite.Cases = append(suite.Cases, c)
	}
	searched := s.SearchedFor()
	for _, class := range sortedKeys(searched) {
		c := junitCase{Classname: "locklab.campaign.class", Name: "finds " + class, Time: seconds(s.Elapsed.D())}
		if f, ok := s.FirstDetection[class]; ok && searched[class] {
			c.SystemOut = fmt.Sprintf("found and confirmed after %s, %d runs: %s\n", f.After.D(), f.Runs, f.Plan)
		} else {
			c.Failure = &junitMessage{Message: fmt.Sprintf("class %s not found (confirmed) in %d runs; %d detections did not reproduce", class, s.Runs, s.Unconfirmed[class]), Type: "not found"}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	// The evidence itself is a case: a campaign that decided too little is no pass.
	c := junitCase{Classname: "locklab.campaign.evidence", Name: "decides enough", Time: seconds(s.Elapsed.D()), SystemOut: DecidedText(s) + "\n"}
	if err := s.Inconclusive(); err != nil {
		c.Error = &junitMessage{Message: err.Error(), Type: "inconclusive", Text: DecidedText(s) + "\n"}
		suite.Errors++
	}
	suite.Cases = append(suite.Cases, c)
	suite.Tests = len(suite.Cases)
	all := junitSuites{Name: "locklab campaign", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: suite.Time, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode junit: %w", err)
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// WriteCampaign writes summary.md, junit.xml and index.html into dir, beside the
// summary.json that the campaign wrote.
func WriteCampaign(dir string, s *campaign.Summary) error {
	if err := os.WriteFile(filepath.Join(dir, campaign.MarkdownFile), []byte(CampaignMarkdown(s)), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	j, err := CampaignJUnit(s)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, campaign.JUnitFile), j, 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return writeIndex(dir, "campaign", campaignIndexOf(s, filesIn(dir)))
}
