package matrix

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Part is one of the matrices a merged matrix was made of: how it was produced, and the
// rows and columns the merged one took cells from.
type Part struct {
	Meta      Meta     `json:"meta"`
	Scenarios []string `json:"scenarios"`
	// Impls are the columns it gave cells to, when not all of the merged matrix's: a
	// part that added implementations to rows run before.
	Impls []string `json:"impls,omitempty"`
}

// Merge is parts as one matrix, for a matrix run in pieces: a shard per machine, rows run
// again after their scenarios changed or were added, or columns added (an implementation,
// a release of a library) to rows run before. Each cell (a row and a column, under one
// fencing mode) comes from the last part that has both its row and its column, so a row
// run again replaces every cell of its, and a column run again replaces its cells in
// every row it ran. The columns are those of every part: the last part's in its order,
// then any others in the order their parts give them. Every part must have the same
// fencing modes. parts[i] was read from dirs[i]; its runs' directories and links are
// made relative to out, the merged matrix's directory. The merged meta lists the parts;
// its counts are those of the cells it kept, and Command is the caller's to set.
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
	first, last := parts[0], parts[len(parts)-1]
	for i, p := range parts {
		if !slices.Equal(first.Fencings, p.Fencings) {
			return Result{}, fmt.Errorf("merge: %s and %s differ: fencing modes %s against %s; run every part with the same --fencing",
				dirs[0], dirs[i], strings.Join(first.Fencings, ","), strings.Join(p.Fencings, ","))
		}
	}
	m := Result{Fencings: first.Fencings}
	// Columns: the last part's, then the others'; each described as its last part has it.
	col := map[string]int{}
	for _, p := range append([]Result{last}, parts...) {
		for _, impl := range p.Impls {
			if _, ok := col[impl.Name]; !ok {
				col[impl.Name] = len(m.Impls)
				m.Impls = append(m.Impls, impl)
			}
		}
	}
	for _, p := range parts {
		for _, impl := range p.Impls {
			m.Impls[col[impl.Name]] = impl
		}
	}
	type place struct{ scenario, impl string }
	from := map[place]int{} // cell → the part it comes from
	rows := map[string]Scenario{}
	for i, p := range parts {
		for _, s := range p.Scenarios {
			rows[s.Name] = s
			for _, impl := range p.Impls {
				from[place{s.Name, impl.Name}] = i
			}
		}
	}
	m.Meta = Meta{Date: first.Meta.Date, Finished: first.Meta.Finished, Repeat: first.Meta.Repeat, Nodes: first.Meta.Nodes,
		Parallel: first.Meta.Parallel, GoVersion: first.Meta.GoVersion, RedisVersion: first.Meta.RedisVersion}
	for _, s := range rows {
		m.Scenarios = append(m.Scenarios, s)
	}
	// Rows in matrix order: the baseline first, the others by name, as the catalog runs.
	slices.SortFunc(m.Scenarios, func(a, b Scenario) int {
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
	gave := make([]map[string]bool, len(parts)) // per part: the rows and the columns it gave cells to
	cols := make([]map[string]bool, len(parts))
	for i := range parts {
		gave[i], cols[i] = map[string]bool{}, map[string]bool{}
	}
	for _, fencing := range m.Fencings {
		for _, s := range m.Scenarios {
			for _, impl := range m.Impls {
				i, ok := from[place{s.Name, impl.Name}]
				if !ok {
					continue // no part ran this cell: shown pending
				}
				c, ok := parts[i].Cell(s.Name, impl.Name, fencing)
				if !ok {
					continue // an interrupted part's cell that never came: shown pending
				}
				gave[i][s.Name], cols[i][impl.Name] = true, true
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
	for i, p := range parts {
		part := Part{Meta: p.Meta}
		part.Meta.Parts = nil
		for _, s := range m.Scenarios {
			if gave[i][s.Name] {
				part.Scenarios = append(part.Scenarios, s.Name)
			}
		}
		if len(cols[i]) < len(m.Impls) {
			for _, impl := range m.Impls {
				if cols[i][impl.Name] {
					part.Impls = append(part.Impls, impl.Name)
				}
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
	m.Meta.Decided = m.Decided()
	m.Meta.Complete = m.Meta.Runs == m.Meta.Planned && len(m.Cells) == len(m.Fencings)*len(m.Scenarios)*len(m.Impls)
	return m, nil
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
