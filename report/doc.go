// Package report renders for people what the other packages produce: the narration of a
// run from its history, the verdict matrix as Markdown and HTML, campaign summaries as
// Markdown and JUnit, the time-to-detection table, and the index.html of a matrix's,
// campaign's or detection benchmark's directory, which links every run's picture and
// Porcupine page. It depends only on the data it
// renders (histories, matrix.Result, campaign.Summary, campaign.DetectionResult), never
// on how that data was produced: it must not import runner, and nothing of locklab's
// imports report but the CLI.
package report
