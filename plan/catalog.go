package plan

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/locklab/locklab/lockimpl"
)

//go:embed scenarios/*.json
var scenarioFiles embed.FS

//go:embed soaks/*.json
var soakFiles embed.FS

// Scenarios returns the catalog: scripted plans that reproduce docs/design.md's bug
// classes, by name. They are data (scenarios/*.json), validated against reg like any
// plan file.
func Scenarios(reg *lockimpl.Registry) ([]Plan, error) {
	return embedded(scenarioFiles, "scenarios", reg)
}

// Soaks returns the plans of long runs (locklab soak, soaks/*.json): kept apart from the
// catalog, whose scenarios the matrix runs cell by cell.
func Soaks(reg *lockimpl.Registry) ([]Plan, error) { return embedded(soakFiles, "soaks", reg) }

// Soak returns one soak plan by name.
func Soak(name string, reg *lockimpl.Registry) (Plan, error) {
	return named(name, "soak plan", reg, Soaks)
}

// embedded reads the plans of dir in files, validated against reg, sorted by name.
func embedded(files embed.FS, dir string, reg *lockimpl.Registry) ([]Plan, error) {
	entries, err := files.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var plans []Plan
	for _, e := range entries {
		name := path.Join(dir, e.Name())
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read scenario %s: %w", name, err)
		}
		p, err := Parse(data, "plan/"+name, reg)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(e.Name(), ".json"); p.Name != want {
			return nil, fmt.Errorf("plan/%s: name %q differs from the file name", name, p.Name)
		}
		plans = append(plans, p)
	}
	sort.Slice(plans, func(i, j int) bool { return plans[i].Name < plans[j].Name })
	return plans, nil
}

// Scenario returns one scenario of the catalog by name.
func Scenario(name string, reg *lockimpl.Registry) (Plan, error) {
	return named(name, "scenario", reg, Scenarios)
}

// named finds the plan called name among all's.
func named(name, what string, reg *lockimpl.Registry, all func(*lockimpl.Registry) ([]Plan, error)) (Plan, error) {
	plans, err := all(reg)
	if err != nil {
		return Plan{}, err
	}
	names := make([]string, len(plans))
	for i, p := range plans {
		if p.Name == name {
			return p, nil
		}
		names[i] = p.Name
	}
	return Plan{}, fmt.Errorf("unknown %s %q (known: %s)", what, name, strings.Join(names, ", "))
}
