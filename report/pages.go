package report

import "github.com/locklab/locklab/report/page"

// IndexFile is the page of an output directory (a matrix, a campaign, a detection
// benchmark): its verdicts, with every run's picture and Porcupine page linked.
const IndexFile = page.IndexFile

// pages holds the templates of report's own pages (the matrix's index.html, the demo
// page, the assessment's report.html); each is executed by name.
var pages = page.Parse(matrixIndexPage, demoPage, assessPage)
