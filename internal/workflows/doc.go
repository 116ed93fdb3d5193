// Package workflows holds no code: its test lints the GitHub Actions workflows under
// .github/workflows with actionlint, the release pinned as a tool in go.mod (go tool
// actionlint), so that a workflow people copy is checked by make test like the code. It
// imports nothing of locklab's.
package workflows
