package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/plan"
)

func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List lock implementations, fault kinds and catalog scenarios",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
}

func firstSentence(s string) string {
	for i, r := range s {
		if r == '.' {
			return s[:i+1]
		}
	}
	return s
}
