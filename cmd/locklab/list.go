package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/releases"
)

func newListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List lock implementations, fault kinds and catalog scenarios; with --versions or --prepare, a library's releases",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			versions, _ := cmd.Flags().GetString("versions")
			if prepare, _ := cmd.Flags().GetStringSlice("prepare"); versions != "" || len(prepare) > 0 {
				return releases.List(cmd.Context(), cmd.OutOrStdout(), versions, prepare)
			}
			reg, err := registryFor(cmd)
			if err != nil {
				return &statusError{exitError, err}
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "IMPLEMENTATION\tFENCES\tTOPOLOGY\tKIND\tDESCRIPTION")
			for _, i := range reg.List() {
				kind, fences := "correct", "none"
				if i.Mutant {
					kind = "mutant: " + i.Bug
				}
				if i.Fencing {
					fences = "yes"
				}
				topology := i.Topology
				if i.Cluster {
					topology += ",cluster"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", i.Name, fences, topology, kind, i.Description)
			}
			fmt.Fprintln(w, "\nIMPLEMENTATION\tOPTION\tDEFAULT\tDRAWN\tDESCRIPTION")
			for _, i := range reg.List() {
				for _, o := range i.Options {
					drawn := make([]string, len(o.Values))
					for k, v := range o.Values {
						drawn[k] = o.Format(v)
					}
					doc := o.Doc
					if o.Neutral {
						doc += " (neutral: timing only, expectations hold)"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", i.Name, o.Name, o.Format(o.Default), strings.Join(drawn, " "), doc)
				}
			}
			fmt.Fprintln(w, "\nFAULT\tTARGETS\tDESCRIPTION")
			for _, k := range faults.Kinds() {
				fmt.Fprintf(w, "%s\t%s\t%s\n", k.Name, k.Targets, k.Description)
			}
			plans, err := plan.Scenarios(reg)
			if err != nil {
				return &statusError{exitError, err}
			}
			fmt.Fprintln(w, "\nSCENARIO\tIMPL\tFAULTS\tDESCRIPTION")
			for _, p := range plans {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", p.Name, p.Impl, len(p.Faults), firstSentence(p.Description))
			}
			return w.Flush()
		},
	}
	c.Flags().String("versions", "", "print the versions of IMPL's library its registry serves, and the pinned one")
	c.Flags().StringSlice("prepare", nil, "build or install NAME@VERSION[,NAME@VERSION...] into the cache ($LOCKLAB_CACHE) and print where")
	return c
}

func firstSentence(s string) string {
	if before, _, ok := strings.Cut(s, "."); ok {
		return before + "."
	}
	return s
}
