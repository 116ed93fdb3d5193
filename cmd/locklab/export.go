package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/histories"
)

// exportFormats are the formats export writes, by --format name.
func exportFormats() map[string]func(io.Writer, histories.History) error {
	return map[string]func(io.Writer, histories.History) error{"edn": histories.WriteEDN}
}

func newExportCmd() *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "export DIR|FILE",
		Short: "Write a saved history in another checker's format (Jepsen EDN, for Knossos)",
		Long: `Export loads history.jsonl from a run directory (or a history file) and writes it in
another checker's format, to stdout or to --out. Format edn is Jepsen's history.edn: one
operation map per line, an :invoke at each call and an :ok, :fail or :info (unknown
outcome) at each return; docs/export.md describes the mapping and how to feed it to
Knossos. Exit status: 0 written, 2 error.`,
		Example: `  locklab export --format edn out/20260101-120000-pause-past-ttl-fencing-off > history.edn
  locklab export runs/x/history.jsonl --out history.edn`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			formats := exportFormats()
			write, ok := formats[format]
			if !ok {
				known := make([]string, 0, len(formats))
				for name := range formats {
					known = append(known, name)
				}
				slices.Sort(known)
				return &statusError{exitError, fmt.Errorf("flag --format: unknown format %q (known: %s)", format, strings.Join(known, ", "))}
			}
			h, err := histories.Load(args[0])
			if err != nil {
				return &statusError{exitError, err}
			}
			// The whole export is built before anything is written, so that a history the
			// format cannot express leaves no partial file behind.
			var b bytes.Buffer
			if err := write(&b, h); err != nil {
				return &statusError{exitError, fmt.Errorf("export %s: %w", args[0], err)}
			}
			if out == "" {
				if _, err := cmd.OutOrStdout().Write(b.Bytes()); err != nil {
					return &statusError{exitError, fmt.Errorf("export %s: %w", args[0], err)}
				}
				return nil
			}
			if err := writeFileAtomic(out, b.Bytes()); err != nil {
				return &statusError{exitError, fmt.Errorf("flag --out: write %s: %w", out, err)}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d operations written to %s (%s)\n", args[0], len(h.Ops), out, format)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "edn", "output format: edn (Jepsen history, for Knossos)")
	cmd.Flags().StringVar(&out, "out", "", "write here instead of stdout")
	return cmd
}

// writeFileAtomic writes data to a temporary file beside path and renames it into place,
// so that a reader never sees half an export.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
