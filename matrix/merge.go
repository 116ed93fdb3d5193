package matrix

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Part is one of the matrices a merged matrix was made of: how it was produced, and the
// rows the merged one took from it.
type Part struct {
	Meta      Meta     `json:"meta"`
	Scenarios []string `json:"scenarios"`
}

// Merge is parts as one matrix, for a matrix run in pieces: a shard per machine, or rows
// run again after their scenarios changed or were added. A row (a scenario, under every
// fencing mode) comes whole from the last part that has it, so that no row mixes the runs
// of two commands. Every part must have the same implementations and fencing modes,
// in the same order. parts[i] was read from dirs[i]; its runs' directories and links are
// made relative to out, the merged matrix's directory. The merged meta lists the parts;
// its counts are those of the rows it kept, and Command is the caller's to set.
func Merge(out string, dirs []string, parts []Result) (Result, error) {
	if len(parts) == 0 || len(parts) != len(dirs) {
		return Result{}, fmt.Errorf("merge: %d matrices and %d directories: want at least one of each, as many", len(parts), len(dirs))
	}
	rels := make([]string, len(dirs))
	for i, d := range dirs {
		var err error
		if rels[i], err = relativeTo(out, d); err != nil {
			return Result{}, err
		}
	}
	first := parts[0]
	rowFrom := map[string]int{} // scenario → the part its row comes from
	for i, p := range parts {
		if d := sameColumns(first, p); d != "" {
			return Result{}, fmt.Errorf("merge: %s and %s differ: %s; run every part with the same --impl and --fencing", dirs[0], dirs[i], d)
		}
		for _, s := range p.Scenarios {
			rowFrom[s.Name] = i
		}
	}
	m := Result{Impls: first.Impls, Fencings: first.Fencings}
	m.Meta = Meta{Date: first.Meta.Date, Finished: first.Meta.Finished, Repeat: first.Meta.Repeat, Nodes: first.Meta.Nodes,
		Parallel: first.Meta.Parallel, GoVersion: first.Meta.GoVersion, RedisVersion: first.Meta.RedisVersion}
	for i, p := range parts {
		part := Part{Meta: p.Meta}
		part.Meta.Parts = nil
		for _, s := range p.Scenarios {
			if rowFrom[s.Name] == i {
				part.Scenarios = append(part.Scenarios, s.Name)
				m.Scenarios = append(m.Scenarios, s)
			}
		}
		m.Meta.Parts = append(m.Meta.Parts, part)
		m.Meta.Date = min(m.Meta.Date, p.Meta.Date) // RFC 3339 in UTC sorts as text
		m.Meta.Finished = max(m.Meta.Finished, p.Meta.Finished)
		m.Meta.Repeat = min(m.Meta.Repeat, p.Meta.Repeat)
		for _, v := range []struct {
			merged *string
			part   string
		}{{&m.Meta.GoVersion, p.Meta.GoVersion}, {&m.Meta.RedisVersion, p.Meta.RedisVersion}} {
			if !slices.Contains(strings.Split(*v.merged, ", "), v.part) {
				*v.merged += ", " + v.part
			}
		}
	}
	// Rows in matrix order: the baseline first, the others by name, as the catalog runs.
	slices.SortStableFunc(m.Scenarios, func(a, b Scenario) int {
		switch {
		case a.Name == b.Name:
			return 0
		case a.Name == BaselineScenario:
			return -1
		case b.Name == BaselineScenario:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, fencing := range m.Fencings {
		for _, s := range m.Scenarios {
			i := rowFrom[s.Name]
			for _, impl := range m.Impls {
				c, ok := parts[i].Cell(s.Name, impl.Name, fencing)
				if !ok {
					continue // an interrupted part's cell that never came: shown pending
				}
				c.Runs = slices.Clone(c.Runs)
				for k := range c.Runs {
					c.Runs[k].Dir = path.Join(rels[i], c.Runs[k].Dir)
					if c.Runs[k].Link != "" {
						c.Runs[k].Link = path.Join(rels[i], c.Runs[k].Link)
					}
				}
				if c.Status == CellPlanned {
					m.Meta.Planned += parts[i].Meta.Repeat
				}
				m.Meta.Runs += len(c.Runs)
				m.Meta.Errors += c.Errors
				m.Cells = append(m.Cells, c)
			}
		}
	}
	m.Meta.Decided = m.Decided()
	m.Meta.Complete = m.Meta.Runs == m.Meta.Planned
	return m, nil
}

// sameColumns says how a and b differ in their columns and tables ("" when they do not).
func sameColumns(a, b Result) string {
	names := func(r Result) []string {
		var out []string
		for _, i := range r.Impls {
			out = append(out, i.Name)
		}
		return out
	}
	switch {
	case !slices.Equal(names(a), names(b)):
		return fmt.Sprintf("implementations %s against %s", strings.Join(names(a), ","), strings.Join(names(b), ","))
	case !slices.Equal(a.Fencings, b.Fencings):
		return fmt.Sprintf("fencing modes %s against %s", strings.Join(a.Fencings, ","), strings.Join(b.Fencings, ","))
	}
	return ""
}

// relativeTo is dir as seen from out, with forward slashes.
func relativeTo(out, dir string) (string, error) {
	absOut, err := filepath.Abs(out)
	if err == nil {
		dir, err = filepath.Abs(dir)
	}
	if err == nil {
		dir, err = filepath.Rel(absOut, dir)
	}
	if err != nil {
		return "", fmt.Errorf("merge: %s from %s: %w", dir, out, err)
	}
	return filepath.ToSlash(dir), nil
}
