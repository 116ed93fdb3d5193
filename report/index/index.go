// Package index renders the index.html of a campaign's and of a detection benchmark's
// output directory: its verdicts, with every run's picture and Porcupine page linked where
// those files exist, and a benchmark's links into each search's own index.html.
package index

import (
	"path"

	"github.com/locklab/locklab/report/page"
)

// pages holds every index's template; each is executed by name.
var pages = page.Parse(campaignIndexPage, detectionIndexPage)

// runDirOf is the run directory of a plan path in a summary (runs/00003/plan.json).
func runDirOf(planPath string) string {
	if planPath == "" {
		return ""
	}
	return path.Dir(planPath)
}
