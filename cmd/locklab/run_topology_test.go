package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/plan"
)

// TestRunMapsTopologyForImpl: without --topology, run plays a scenario or the defaults on
// the topology the matrix gives the implementation (etcd:3 for etcd's lock, nodes:5 for
// Redlock's), says so in its first line and records it in plan.json. Like the other etcd
// tests, it needs bin/locklab-etcd (`make build`).
func TestRunMapsTopologyForImpl(t *testing.T) {
	reg := locks.All()
	for _, c := range []struct {
		name, header string
		args         []string
		scenario     string // the matrix cell the run must agree with; "" for the defaults
		impl         string
	}{
		{"etcd", "topology etcd:3 (pause-past-ttl's single, mapped for etcd)",
			[]string{"--scenario", "pause-past-ttl", "--impl", "etcd"}, "pause-past-ttl", "etcd"},
		{"redlock", "topology nodes:5 (the default single, mapped for redlock)",
			[]string{"--impl", "redlock", "--duration", "300ms"}, "", "redlock"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := locklab(t, append([]string{"run", "--out", out}, c.args...)...)
			if code == exitError {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if first, _, _ := strings.Cut(stderr, "\n"); first != c.header {
				t.Errorf("first line %q, want %q\n%s", first, c.header, stderr)
			}
			dirs, err := filepath.Glob(filepath.Join(out, "*-fencing-off"))
			if err != nil || len(dirs) != 1 {
				t.Fatalf("run directories: %v %v", dirs, err)
			}
			ran, err := plan.Read(filepath.Join(dirs[0], "plan.json"), reg)
			if err != nil {
				t.Fatal(err)
			}
			// The matrix's cell of the same scenario and implementation: one mapping for both.
			s := plan.Default()
			if c.scenario != "" {
				if s, err = plan.Scenario(c.scenario, reg); err != nil {
					t.Fatal(err)
				}
			}
			impl, err := reg.Get(c.impl)
			if err != nil {
				t.Fatal(err)
			}
			cell, _ := matrix.PlanCell(reg, s, impl, "off", plan.DefaultNodes)
			if ran.Topology != cell.Topology || ran.Impl != c.impl {
				t.Errorf("run played %s on %s; the matrix's cell runs on %q", ran.Impl, ran.Topology, cell.Topology)
			}
		})
	}
}
