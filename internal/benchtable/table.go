package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// results are the metrics of each benchmark: name (without the -GOMAXPROCS suffix) →
// unit → value. A benchmark reported twice keeps its last line.
type results map[string]map[string]float64

// benchLine is a result line of go test -bench: name, iterations, then value-unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$`)

// parse reads go test -bench output, ignoring every other line.
func parse(r io.Reader, into results) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		fields := strings.Fields(m[4])
		if len(fields)%2 != 0 {
			return fmt.Errorf("benchmark line %q: values and units do not pair up", sc.Text())
		}
		metrics := map[string]float64{}
		for i := 0; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return fmt.Errorf("benchmark line %q: %w", sc.Text(), err)
			}
			metrics[fields[i+1]] = v
		}
		into[m[1]] = metrics
	}
	return sc.Err()
}

// command is how a run is shown: the go test line a reader can paste.
func command(r run) string {
	q := make([]string, len(r.args()))
	for i, a := range r.args() {
		if strings.ContainsAny(a, "^$|*") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return "go " + strings.Join(q, " ")
}

// goalsTable renders the goals against res; missed counts the goals not met or not
// measured.
func goalsTable(res results) (md string, missed int) {
	var b strings.Builder
	b.WriteString("| goal | bound | measured | measured ÷ bound | met | command |\n|---|---|---|---|---|---|\n")
	for _, g := range goals() {
		bound := "≥ " + num(g.target, g.unit)
		if g.atMost {
			bound = "< " + num(g.target, g.unit)
		}
		v, ok := res[g.bench][g.metric]
		if !ok {
			missed++
			fmt.Fprintf(&b, "| %s | %s | not measured | | **no** | `%s` |\n", g.what, bound, command(runs()[g.run]))
			continue
		}
		met := v >= g.target
		if g.atMost {
			met = v < g.target
		}
		verdict := "yes"
		if !met {
			verdict, missed = "**no**", missed+1
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %s | `%s` |\n", g.what, bound, num(v, g.unit), v/g.target, verdict, command(runs()[g.run]))
	}
	return b.String(), missed
}

// num renders a value with its unit and three significant digits.
func num(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'g', 3, 64)
	if strings.Contains(s, "e") {
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}
