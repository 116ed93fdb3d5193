package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locklab/locklab/internal/cmdline"
	"github.com/locklab/locklab/locks"
)

// parseCommandLine splits a command line as a POSIX shell would for the quoting
// commandLine produces (single quotes, no expansions) and parses it with the real
// command tree: the subcommand, its flags and its arguments. It runs nothing.
func parseCommandLine(line string) error {
	words, err := locks.ShellWords(line)
	if err != nil {
		return err
	}
	if len(words) == 0 || (words[0] != "locklab" && words[0] != "bin/locklab") {
		return fmt.Errorf("not a locklab command: %q", line)
	}
	root := newRoot()
	cmd, rest, err := root.Find(words[1:])
	if err != nil {
		return err
	}
	if cmd == root {
		return fmt.Errorf("no subcommand in %q", line)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	return cmd.ValidateArgs(cmd.Flags().Args())
}

// TestCommandLineReparses: the command line a matrix or a detection run records (and
// prints into docs/matrix.md and BENCHMARKS.md) parses again with the same flags.
func TestCommandLineReparses(t *testing.T) {
	for _, args := range [][]string{
		{"detection", "--seeds", "10", "--parallel", "2", "--shrink", "--shrink-time", "30s", "--out", "out/detection", "--markdown", "BENCHMARKS.md"},
		{"detection", "--shrink=false", "--class", "pause-past-ttl,check-then-set"},
		{"detection", "--seeds", "0", "--fault-free=false", "--families", "all", "--claimed-pairs", "30"},
		{"bench", "jobs", "--duration", "10m", "--impl", "setnx", "--on-taken", "retry", "--jitter", "5ms", "--stall-rate", "0.1", "--stall-fail", "0"},
		{"matrix", "--repeat", "3", "--parallel", "2", "--out", "out/my matrix", "--readme", "README.md", "--impl", "setnx,fenced"},
	} {
		root := newRoot()
		cmd, rest, err := root.Find(args)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatal(err)
		}
		line := cmdline.Of(cmd)
		if err := parseCommandLine(line); err != nil {
			t.Errorf("%v printed as %q, which does not parse: %v", args, line, err)
			continue
		}
		words, _ := locks.ShellWords(line)
		again, rest2, _ := newRoot().Find(words[1:])
		_ = again.ParseFlags(rest2)
		if got := cmdline.Of(again); got != line {
			t.Errorf("%q re-parsed prints %q", line, got)
		}
	}
}

// TestPrintedCommandsParse: every locklab command line that README.md, BENCHMARKS.md and
// docs/ print — the "Produced by" line of a generated table, and every command of a
// shell block — parses with the real command tree, so a reader can run it as printed.
// (Commands named in prose, such as "locklab replay", are names, not command lines.)
func TestPrintedCommandsParse(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md", "../../BENCHMARKS.md")
	produced := regexp.MustCompile("Produced by `([^`]+)`")
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		block, cont := false, ""
		for i, line := range strings.Split(string(data), "\n") {
			ln := i + 1
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				block, cont = !block, ""
				continue
			}
			var cmds []string
			if block {
				l := strings.TrimSpace(line)
				if k := strings.Index(l, " #"); k >= 0 {
					l = strings.TrimSpace(l[:k])
				}
				if cont != "" {
					l = cont + " " + l
				}
				if c, more := strings.CutSuffix(l, "\\"); more {
					cont = strings.TrimSpace(c)
					continue
				}
				cont = ""
				if strings.HasPrefix(l, "locklab ") || strings.HasPrefix(l, "bin/locklab ") {
					cmds = append(cmds, l)
				}
			} else {
				for _, m := range produced.FindAllStringSubmatch(line, -1) {
					cmds = append(cmds, m[1])
				}
			}
			for _, c := range cmds {
				if placeholder(c) {
					continue
				}
				n++
				if err := parseCommandLine(c); err != nil {
					t.Errorf("%s:%d: %v", f, ln, err)
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("found only %d printed commands: is the extraction broken?", n)
	}
}

// placeholder reports whether a printed command is a template (NAME, DIR, …) rather
// than something to run.
func placeholder(c string) bool {
	return strings.ContainsAny(c, "|…<>") || regexp.MustCompile(`(^|[\s=])[A-Z][A-Z_]{2,}($|[\s,/])`).MatchString(c)
}
