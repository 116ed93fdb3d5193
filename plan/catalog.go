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

// Scenarios returns the catalog: scripted plans that reproduce docs/design.md's bug
// classes, by name. They are data (scenarios/*.json), validated against reg like any
// plan file.
func Scenarios(reg *lockimpl.Registry) ([]Plan, error) {
	entries, err := scenarioFiles.ReadDir("scenarios")
	if err != nil {
		return nil, fmt.Errorf("read scenario catalog: %w", err)
	}
	var plans []Plan
	for _, e := range entries {
		name := path.Join("scenarios", e.Name())
		data, err := scenarioFiles.ReadFile(name)
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
	plans, err := Scenarios(reg)
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
	return Plan{}, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(names, ", "))
}
