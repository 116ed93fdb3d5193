package report

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locklab/locklab/campaign"
	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/report/index"
	"github.com/locklab/locklab/report/junit"
	"github.com/locklab/locklab/report/wording"
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
		fmt.Fprintf(&b, "Space: %s.\n\n", wording.Space(s.Space))
	}
	fmt.Fprintf(&b, "**%s**: %d safe-configuration violations, %d findings", wording.CampaignVerdict(s), s.SafeViolations, s.Findings)
	if len(s.UnderLoad) > 0 {
		fmt.Fprintf(&b, ", %d findings under load", len(s.UnderLoad))
	}
	searched := s.SearchedFor()
	for _, c := range slices.Sorted(maps.Keys(searched)) {
		if searched[c] {
			fmt.Fprintf(&b, "; class %s found", c)
		} else {
			fmt.Fprintf(&b, "; class %s **not found**", c)
		}
	}
	fmt.Fprintf(&b, ".\n\nDecided: %s.", wording.Decided(s))
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
		for _, c := range slices.Sorted(maps.Keys(s.FirstDetection)) {
			f := s.FirstDetection[c]
			fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", c, f.After.D(), f.Runs, f.Plan)
		}
	}
	if len(s.Unconfirmed) > 0 {
		b.WriteString("\nDetections that did not reproduce in their re-runs (not counted):")
		for _, c := range slices.Sorted(maps.Keys(s.Unconfirmed)) {
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
			fmt.Fprintf(&b, "- run %d: %s %s fencing %s, faults %s: %s illegal", f.Run, f.Impl, f.Topology, f.Fencing, f.Faults, wording.Illegal(f, ","))
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
				fmt.Fprintf(&b, "  %s\n", wording.Truncate(f.Explanation, 400))
			}
		}
	}
	failures("Safe-configuration violations", true)
	failures("Findings", false)
	b.WriteString("\n## Plans\n\n| implementation | plans |\n|---|---|\n")
	for _, k := range slices.Sorted(maps.Keys(s.PlansPerImpl)) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, s.PlansPerImpl[k])
	}
	b.WriteString("\n| fault kind | plans with it |\n|---|---|\n")
	for _, k := range slices.Sorted(maps.Keys(s.PlansPerFault)) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, s.PlansPerFault[k])
	}
	if len(s.PerturbedRuns) > 0 {
		fmt.Fprintf(&b, "\n## Perturbed runs (%d)\n\nThe harness itself stalled in these runs, so their verdicts are counted neither as violations nor as passes.\n\n", s.Perturbed)
		for _, e := range s.PerturbedRuns {
			fmt.Fprintf(&b, "- run %d (`%s`): %s\n", e.Run, e.Plan, wording.Truncate(e.Error, 300))
		}
	}
	if len(s.UnderLoad) > 0 {
		fmt.Fprintf(&b, "\n## Findings under load (%d)\n\nViolations in runs whose harness stalled: the stall may have caused them, or the lock may break only under load. Counted neither as findings nor as passes; each run is kept.\n\n", len(s.UnderLoad))
		for _, u := range s.UnderLoad {
			fmt.Fprintf(&b, "- run %d: %s\n", u.Run, wording.UnderLoad(u))
		}
	}
	if len(s.RunErrors) > 0 {
		fmt.Fprintf(&b, "\n## Errors (%d)\n\n", s.Errors)
		for _, e := range s.RunErrors {
			fmt.Fprintf(&b, "- run %d (`%s`): %s\n", e.Run, e.Plan, wording.Truncate(e.Error, 300))
		}
	}
	if len(s.Shards) > 0 {
		fmt.Fprintf(&b, "\nMerged from %s.\n", strings.Join(s.Shards, ", "))
	}
	return b.String()
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
		fmt.Fprintf(w, "  %s: run %d %s %s fencing %s faults %s: %s illegal", kind, f.Run, f.Impl, f.Topology, f.Fencing, f.Faults, wording.Illegal(f, ","))
		if f.Saved != "" {
			fmt.Fprintf(w, "; saved %s", filepath.Join(out, f.Saved))
		}
		if f.Compare != nil {
			fmt.Fprintf(w, "; %s", f.Compare)
		}
		fmt.Fprintln(w)
	}
	for _, u := range s.UnderLoad {
		fmt.Fprintf(w, "  finding UNDER LOAD: run %d %s\n", u.Run, wording.UnderLoad(u))
	}
	fmt.Fprintf(w, "decided: %s\n", wording.Decided(s))
	if err := s.Inconclusive(); err != nil {
		fmt.Fprintln(w, err)
	}
	fmt.Fprintf(w, "%s: %d safe-configuration violations, %d findings, %d under load; summary %s, page %s\n", wording.CampaignVerdict(s), s.SafeViolations, s.Findings, len(s.UnderLoad),
		filepath.Join(out, campaign.MarkdownFile), filepath.Join(out, IndexFile))
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

// WriteCampaign writes summary.md, junit.xml and index.html into dir, beside the
// summary.json that the campaign wrote.
func WriteCampaign(dir string, s *campaign.Summary) error {
	if err := os.WriteFile(filepath.Join(dir, campaign.MarkdownFile), []byte(CampaignMarkdown(s)), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	j, err := junit.Campaign(s)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, campaign.JUnitFile), j, 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return index.WriteCampaign(dir, s)
}
