// Package liveline shows a command's progress: on a terminal as one status line redrawn
// in place, with the lines that must stay printed above it; elsewhere (a file, a CI log)
// as plain lines only, since a redrawn line would pile up there.
package liveline

import (
	"fmt"
	"io"
	"os"
)

// Line is the progress display on one writer.
type Line struct {
	w    io.Writer
	live bool
	open bool // a status line is on screen
}

// New is the display on w, live when w is a terminal.
func New(w io.Writer) *Line { return &Line{w: w, live: IsTerminal(w)} }

// Live says whether the display redraws a status line (w is a terminal).
func (l *Line) Live() bool { return l.live }

// Show redraws the status line with s; it shows nothing when the display is not live.
func (l *Line) Show(s string) {
	if !l.live {
		return
	}
	fmt.Fprint(l.w, "\r\033[K", s)
	l.open = true
}

// Print writes s as a line of its own, above the status line when one is shown (which
// the next Show redraws).
func (l *Line) Print(s string) {
	l.Clear()
	fmt.Fprintln(l.w, s)
}

// End leaves the status line on screen, ended by a newline.
func (l *Line) End() {
	if l.open {
		fmt.Fprintln(l.w)
		l.open = false
	}
}

// Clear takes the status line off the screen.
func (l *Line) Clear() {
	if l.open {
		fmt.Fprint(l.w, "\r\033[K")
		l.open = false
	}
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
