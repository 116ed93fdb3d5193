// Package runner runs one resolved plan on real servers, end to end: it brings the
// topology up, builds the lockers, schedules the faults, records the history, checks it,
// and writes the run directory (plan.json, history.jsonl, faults.jsonl, result.json,
// history.html, logs/). Servers are stopped and faults healed whatever happens; a run
// that ended early (interrupted, past its hard deadline, a workload error, faults not
// healed) keeps its evidence: the history recorded so far is saved and checked.
//
// runner imports plan and the packages below it; it must not import campaign, matrix
// or report.
package runner
