// Package tutorial writes a document from a template whose numbers and pictures come
// from real runs (docs/tutorial.md, made by `locklab tutorial` and `make docs`): the
// template asks for experiments, the caller runs them, and the template's functions turn
// their results into verdict tables, counts, explanations, narrations, pictures (each
// run's timeline.svg) and TLC's counterexamples. It checks every claim the prose makes of
// the runs. Like report, it renders and never runs anything: it must not import runner.
package tutorial
