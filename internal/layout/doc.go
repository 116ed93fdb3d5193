// Package layout holds no code: its test enforces the package layout that
// docs/design.md describes — every package listed there, none larger than the size
// limit, and no import against the flow of a run.
package layout
