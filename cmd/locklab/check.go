package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/linearizability/online"
	"github.com/locklab/locklab/timeline"
)

func newCheckCmd() *cobra.Command {
	var html, svg string
	var timeout time.Duration
	var windows, whole bool
	cmd := &cobra.Command{
		Use:   "check DIR|FILE",
		Short: "Re-check a saved run directory or history file offline",
		Long: `Check loads history.jsonl (and faults.jsonl beside it) and checks every property
again, without any server. A long run's segments (locklab soak), a history larger than
512 MB, or --windows are checked as they are read, in windows, without holding the
history (the verdicts are the same; there is no visualisation or timeline then).
Exit status: 0 no violation, 1 violation, 2 error, 3 timeout.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			size, segmented, err := histories.Size(args[0])
			if err != nil {
				return &statusError{exitError, err}
			}
			if !whole && (windows || segmented || size > streamAbove) {
				return checkWindows(cmd, args[0], timeout)
			}
			h, err := histories.Load(args[0])
			if err != nil {
				return &statusError{exitError, err}
			}
			linearizability.LimitMemory(h)
			if st, err := os.Stat(args[0]); err == nil && st.IsDir() {
				if html == "" {
					html = filepath.Join(args[0], "recheck.html")
				}
				if svg == "" {
					svg = filepath.Join(args[0], "recheck-"+timeline.File)
				}
			}
			res, err := linearizability.Check(h, linearizability.Options{HTMLPath: html, Timeout: timeout})
			if err != nil {
				return &statusError{exitError, fmt.Errorf("check %s: %w", args[0], err)}
			}
			if svg != "" {
				title := fmt.Sprintf("%s · %s · fencing %s (re-checked)", filepath.Base(args[0]), h.Meta.Impl, res.Fencing)
				if err := timeline.Write(svg, timeline.Run{History: h, Result: res, Title: title}); err != nil {
					return &statusError{exitError, err}
				}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: %d operations, %d fault windows, fencing %s\n", args[0], len(h.Ops), len(h.Faults), h.Meta.Fencing)
			fmt.Fprint(w, res.String())
			if html != "" {
				fmt.Fprintf(w, "visualisation: %s\n", html)
			}
			if svg != "" {
				fmt.Fprintf(w, "timeline: %s\n", svg)
			}
			return verdictStatus(res)
		},
	}
	cmd.Flags().StringVar(&html, "html", "", "write the Porcupine visualisation here (default: DIR/recheck.html for a directory)")
	cmd.Flags().StringVar(&svg, "timeline", "", "write the run's timeline picture (SVG) here (default: DIR/recheck-timeline.svg for a directory)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "checker timeout per property (0: default); a timeout is unknown, never a pass")
	cmd.Flags().BoolVar(&windows, "windows", false, "check the history as it is read, in windows, without holding it (the default for a long run's segments and histories over 512 MB)")
	cmd.Flags().BoolVar(&whole, "whole", false, "check the history whole, held in memory, even a long run's segments (the check the windows are measured against)")
	return cmd
}

// streamAbove is the size of a history file above which check reads it in windows: about
// two million operations, which whole take about 700 MB.
const streamAbove = 512 << 20

// checkWindows checks the history at path as it is read (online.Sorted), in flat memory.
func checkWindows(cmd *cobra.Command, path string, timeout time.Duration) error {
	meta, faults, err := histories.Head(path)
	if err != nil {
		return &statusError{exitError, err}
	}
	res, st, err := online.Sorted(meta, faults, 64, online.Options{Check: linearizability.Options{Timeout: timeout}}, func(yield func(histories.Op) error) error {
		_, err := histories.Scan(path, func(histories.Meta) error { return nil }, yield)
		return err
	})
	if err != nil {
		return &statusError{exitError, fmt.Errorf("check %s: %w", path, err)}
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%s: %d operations, %d fault windows, fencing %s; checked in %d windows, the largest %d operations\n",
		path, st.Ops, len(faults), meta.Fencing, st.Windows, st.LargestWindow)
	fmt.Fprint(w, res.String())
	return verdictStatus(res)
}
