package report

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
)

// RunReports prints the verdicts of runs of one plan side by side (a run per fencing
// mode), then every explanation: what locklab run and demo print.
func RunReports(w io.Writer, pl plan.Plan, reps []runner.Report) {
	name := pl.Name
	if name == "" {
		name = "run"
	}
	fmt.Fprintf(w, "\n%s: impl %s, %d clients, %d keys, ttl %s, %d faults\n", name, pl.Impl, pl.Clients, pl.Keys, pl.TTL.D(), len(pl.Faults))
	fmt.Fprintf(w, "%-26s", "")
	for _, r := range reps {
		fmt.Fprintf(w, "%-22s", "fencing "+r.Plan.Fencing)
	}
	fmt.Fprintln(w)
	for _, prop := range linearizability.AllProperties() {
		if (prop == linearizability.P4 || prop == linearizability.P5) && pl.Workload != plan.WorkloadJobs {
			continue // the job-queue properties, n/a on any other workload
		}
		fmt.Fprintf(w, "%-26s", fmt.Sprintf("%s %s", prop, prop.Name()))
		for _, r := range reps {
			pr, _ := r.Result.Property(prop)
			fmt.Fprintf(w, "%-22s", ShownVerdict(pr.Verdict))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%-26s", "operations")
	for _, r := range reps {
		fmt.Fprintf(w, "%-22d", r.Ops)
	}
	fmt.Fprintln(w)
	for _, r := range reps {
		fmt.Fprintf(w, "\nfencing %s: report %s\n", r.Plan.Fencing, filepath.Join(r.Dir, runner.HTMLFile))
		Explanations(w, "  ", r.Result)
	}
}

// ShownVerdict makes a violation stand out in a table of verdicts.
func ShownVerdict(v linearizability.Verdict) string {
	if v == linearizability.Illegal {
		return "ILLEGAL"
	}
	return string(v)
}

// Explanations prints why each property of r is illegal or undecided.
func Explanations(w io.Writer, indent string, r linearizability.Result) {
	for _, pr := range r.Properties {
		if pr.Explanation != "" && (pr.Verdict == linearizability.Illegal || pr.Verdict == linearizability.Unknown) {
			fmt.Fprintf(w, "%s%s %s: %s\n", indent, pr.Property, ShownVerdict(pr.Verdict), pr.Explanation)
		}
	}
}
