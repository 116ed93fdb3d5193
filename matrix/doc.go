// Package matrix is the verdict matrix: every implementation × catalog scenario ×
// fencing mode, R runs per cell through the runner, with per-property verdict counts,
// n/a cells that say why, and matrix.json. report renders it for people.
//
// matrix imports runner, plan and the packages below them; it must not import campaign
// or report.
package matrix
