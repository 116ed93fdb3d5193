// Package report renders for people what the other packages produce: the narration of a
// run from its history, the verdict matrix as Markdown and HTML (and the index.html of a
// matrix's directory), campaign summaries as Markdown and terminal lines, the
// assessment's report card, the time-to-detection table and the demo page; it writes
// each output directory's files, junit.xml with report/junit and the index.html of a
// campaign's or detection benchmark's directory with report/index. It depends only on
// the data it renders (histories, matrix.Result, campaign.Summary,
// campaign.DetectionResult), never on how that data was produced: it must not import
// runner, and nothing of locklab's imports report but the CLI.
package report
