package timeline

import (
	"fmt"
	"io"
	"os"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
)

// File is the picture's name in a run directory.
const File = "timeline.svg"

// Run is what a picture is drawn from.
type Run struct {
	History histories.History
	Result  linearizability.Result
	Title   string // the picture's heading, e.g. "pause-past-ttl · fencing off"
}

// Render writes run's picture as SVG to w.
func Render(w io.Writer, run Run) error {
	if _, err := w.Write(render(build(run))); err != nil {
		return fmt.Errorf("render timeline: %w", err)
	}
	return nil
}

// Write writes run's picture to path.
func Write(path string, run Run) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write timeline: %w", err)
	}
	if err := Render(f, run); err != nil {
		f.Close()
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	return nil
}
