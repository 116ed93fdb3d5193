// Package campaign is random search for violations: rapid generators of whole plans
// (Space), the search that runs them through the runner, confirms and shrinks what
// fails, the expectation rules that say which properties the models guarantee
// (campaign/expect), the known bug classes as search problems, the time-to-detection benchmark,
// and campaign summaries (their merge is campaign/merge). It writes summary.json; report
// renders it.
//
// campaign imports runner, plan and the packages below them; it must not import matrix
// or report.
package campaign
