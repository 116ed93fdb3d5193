// Package cmdline writes a command as it could be typed again, for the provenance lines of
// matrices, campaigns and assessments.
package cmdline

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Of is the command as it could be typed again: the flags the user set, in a
// fixed order. A bool flag is written as --name (or --name=false): "--name true" would
// parse as the flag and a stray argument.
func Of(cmd *cobra.Command) string {
	parts := strings.Fields(cmd.CommandPath()) // "locklab bench jobs"
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Value.Type() == "bool" {
			if v := f.Value.String(); v == "true" {
				parts = append(parts, "--"+f.Name)
			} else {
				parts = append(parts, "--"+f.Name+"="+v)
			}
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		parts = append(parts, "--"+f.Name, Quote(v))
	})
	return strings.Join(parts, " ")
}

// Quote is s as one word of a POSIX shell: as it is when nothing in it is special, else
// in single quotes.
func Quote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
