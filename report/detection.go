package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/campaign/detection"
	"github.com/locklab/locklab/internal/jsonfile"
	"github.com/locklab/locklab/report/index"
	"github.com/locklab/locklab/report/wording"
)

// DetectionMarkdown renders the result as BENCHMARKS.md's time-to-detection section.
func DetectionMarkdown(r detection.Result, command string) string {
	var b strings.Builder
	if r.Seeds == 0 {
		// False alarms only: no class was searched.
		fmt.Fprintf(&b, "Produced by `%s` on %s (%s, %s in all), false alarms only.\n", command, r.Started.Format(time.RFC3339), r.GoVersion, r.Elapsed.D().Round(time.Second))
		if r.Interrupted {
			b.WriteString("\n**Interrupted:** the rows below are what was measured before.\n")
		}
		falseAlarmTable(&b, r)
		faultedAlarmTable(&b, r)
		return b.String()
	}
	fmt.Fprintf(&b, "Produced by `%s` on %s (%s, %s in all). Each class: %d class searches (seeds %d…%d), each until the first confirmed detection or %d plans; a search draws random plans from the class's space only (its implementation and fault kinds, never times, targets or points). A detection counts only when a re-run of its plan shows the class again, and its time is when that confirmation ended; detections that did not reproduce are in the last column.\n\n",
		command, r.Started.Format(time.RFC3339), r.GoVersion, r.Elapsed.D().Round(time.Second), r.Seeds, r.FirstSeed, r.FirstSeed+int64(r.Seeds)-1, r.MaxRuns)
	if r.Interrupted {
		b.WriteString("**Interrupted:** the rows below are what was measured before.\n\n")
	}
	b.WriteString("| class | detects | found | median time | worst time | median plans | worst plans | shrunk counterexample (first seed) | unconfirmed |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		c := wording.DetectionCellsOf(r, row)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", row.Class, c.Detect, c.Found, c.MedianTime, c.WorstTime, c.MedianPlans, c.WorstPlans, c.Shrunk, row.Unconfirmed)
	}
	falseAlarmTable(&b, r)
	faultedAlarmTable(&b, r)
	return b.String()
}

// falseAlarmTable is the false alarms per implementation, when any were measured.
func falseAlarmTable(b *strings.Builder, r detection.Result) {
	if len(r.FalseAlarms) == 0 {
		return
	}
	fmt.Fprintf(b, "\nFalse alarms, counted only where the models make a claim: per correct implementation, fault-free calm plans (critical sections well inside the lease) until at least %d (plan, property) pairs that an expectation rule claims were decided by the checkers. A violated claimed pair is a false alarm.\n\n", r.ClaimedPairs)
	b.WriteString("| implementation | plans | claimed pairs decided | false alarms | undecided (checker timeout) | failed to run |\n|---|---|---|---|---|---|\n")
	var total campaign.ClaimCount
	for _, fa := range r.FalseAlarms {
		total.Add(fa.Claims)
		fmt.Fprintf(b, "| %s | %d | %d | **%d** | %d | %d |\n", fa.Impl, fa.Plans, fa.Claims.Decided(), fa.Claims.Violated, fa.Claims.Undecided, fa.Errors)
	}
	fmt.Fprintf(b, "| all | | %d | **%d** | %d | |\n", total.Decided(), total.Violated, total.Undecided)
}

// faultedAlarmTable is the false alarms per rule family under faults, when any were measured.
func faultedAlarmTable(b *strings.Builder, r detection.Result) {
	if len(r.Faulted) == 0 {
		return
	}
	fmt.Fprintf(b, "\nFalse alarms under faults: per rule family, random plans with the faults its rules speak of (times, targets and points drawn, as in any campaign) until at least %d (plan, property) pairs that the family's rules claim were decided by the checkers; a pair counts once however many rules claim it. A violated claimed pair is a false alarm.\n\n", r.ClaimedPairs)
	b.WriteString("| rule family | rules | what | plans | claimed pairs decided | false alarms | undecided (checker timeout) | failed to run |\n|---|---|---|---|---|---|---|---|\n")
	for _, fa := range r.Faulted {
		what := ""
		if f, err := detection.FamilyByName(fa.Family); err == nil {
			what = f.Description
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %d | **%d** | %d | %d |\n", fa.Family, strings.Join(fa.Rules, ", "), what, fa.Plans, fa.Claims.Decided(), fa.Claims.Violated, fa.Claims.Undecided, fa.Errors)
	}
}

// WriteDetection writes the benchmark's files into dir: detection.json, detection.md
// and index.html; it returns the Markdown.
func WriteDetection(dir string, r detection.Result, command string) (string, error) {
	md := DetectionMarkdown(r, command)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return md, fmt.Errorf("create detection directory: %w", err)
	}
	if err := jsonfile.Write(filepath.Join(dir, "detection.json"), r); err != nil {
		return md, err
	}
	if err := os.WriteFile(filepath.Join(dir, "detection.md"), []byte(md), 0o644); err != nil {
		return md, err
	}
	return md, index.WriteDetection(dir, r, command)
}
