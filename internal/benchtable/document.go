package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// document is everything make bench writes: the goals, then what the goals' numbers
// rest on and the measurements without a goal.
func document(res results, header string) (string, int) {
	var b strings.Builder
	b.WriteString(header + "\n\n")
	goalsMD, missed := goalsTable(res)
	b.WriteString(goalsMD)
	b.WriteString("\n" + details(res))
	b.WriteString("\n" + growth(res))
	b.WriteString("\n" + curve(res))
	b.WriteString("\n" + scaling(res))
	b.WriteString("\n" + backends(res))
	return b.String(), missed
}

// details are the two sides of each ratio.
func details(res results) string {
	var b strings.Builder
	b.WriteString("| measurement | value |\n|---|---|\n")
	row := func(what, bench, metric, unit string) {
		if v, ok := res[bench][metric]; ok {
			fmt.Fprintf(&b, "| %s | %s |\n", what, num(v, unit))
		}
	}
	row("check of 1,000,000 operations: operations per second", "BenchmarkCheckMillion", "ops/s", "")
	row("check of 10,000 operations on one key: peak resident memory", "BenchmarkCheckSingleKey", "rss-MB", "MB")
	row("recorded ÷ unrecorded: spread of the pairs (interquartile range)", "BenchmarkRecordingOverhead", "recorded/unrecorded-iqr", "")
	row("workload, recorded: lock operations per second", "BenchmarkRecordingOverhead", "recorded-ops/s", "")
	row("workload, unrecorded: lock operations per second", "BenchmarkRecordingOverhead", "unrecorded-ops/s", "")
	row("harness ÷ redis-benchmark: spread of the rounds (interquartile range)", "BenchmarkHarnessThroughput", "harness/redis-benchmark-iqr", "")
	row("harness, 16 clients: lock operations per second", "BenchmarkHarnessThroughput", "lockops/s", "")
	row("redis-benchmark SET NX PX, 16 clients: operations per second", "BenchmarkHarnessThroughput", "redis-benchmark-ops/s", "")
	row("harness through the clients' Toxiproxy links, as a run has them: lock operations per second", "BenchmarkHarnessThroughput", "linked-lockops/s", "")
	row("… ÷ redis-benchmark", "BenchmarkHarnessThroughput", "linked/redis-benchmark", "")
	if r, ok := res["BenchmarkRender"]; ok {
		fmt.Fprintf(&b, "| timeline of 50,000 operations: time, allocated | %s, %s |\n", num(r["ns/op"]/1e6, "ms"), num(r["B/op"]/1e6, "MB"))
	}
	if r, ok := res["BenchmarkRenderMillion"]; ok {
		fmt.Fprintf(&b, "| timeline of 1,000,000 operations (bounded): time, allocated, picture | %s, %s, %s |\n",
			num(r["ns/op"]/1e9, "s"), num(r["B/op"]/1e6, "MB"), num(r["svg-bytes"]/1e3, "KB"))
	}
	return b.String()
}

// sub lists the sub-benchmarks of parent as (number after prefix, metrics), by number.
func sub(res results, parent, prefix string) ([]int, []map[string]float64) {
	var ns []int
	for name := range res {
		if rest, ok := strings.CutPrefix(name, parent+"/"+prefix); ok {
			if n, err := strconv.Atoi(rest); err == nil {
				ns = append(ns, n)
			}
		}
	}
	slices.Sort(ns)
	ms := make([]map[string]float64, len(ns))
	for i, n := range ns {
		ms[i] = res[fmt.Sprintf("%s/%s%d", parent, prefix, n)]
	}
	return ns, ms
}

// growth is the check's time and memory by history size (BenchmarkCheckScale and
// BenchmarkCheckMillion).
func growth(res results) string {
	ns, ms := sub(res, "BenchmarkCheckScale", "ops-")
	if m, ok := res["BenchmarkCheckMillion"]; ok {
		ns, ms = append(ns, 1_000_000), append(ms, m)
	}
	if len(ns) == 0 {
		return "The check's growth was not measured.\n"
	}
	var b strings.Builder
	b.WriteString("`locklab check` by history size (a key per 1,000 operations, 4 clients per key):\n\n| operations | wall | peak resident | per 1,000 operations |\n|---|---|---|---|\n")
	for i, n := range ns {
		fmt.Fprintf(&b, "| %d | %s | %s | %s, %s |\n", n, num(ms[i]["wall-s"], "s"), num(ms[i]["rss-MB"], "MB"),
			num(ms[i]["wall-s"]*1e6/float64(n), "ms"), num(ms[i]["rss-MB"]*1000/float64(n), "MB"))
	}
	return b.String()
}

// curve is the adversarial histories' cost by size, and where it runs out of time.
func curve(res results) string {
	ns, ms := sub(res, "BenchmarkAdversarial", "concurrent-")
	if len(ns) == 0 {
		return "The adversarial curve was not measured.\n"
	}
	var b strings.Builder
	b.WriteString("Adversarial histories (`BenchmarkAdversarial`: N writes of unknown outcome on one key, all overlapping, and a read none of them explains, beside 9 legal keys; one check each with a 2 s timeout):\n\n")
	b.WriteString("| N | check | verdict |\n|---|---|---|\n")
	decided, first := -1, -1
	for i, n := range ns {
		verdict := "illegal (decided)"
		if ms[i]["decided"] == 0 {
			verdict = "unknown: out of time, key k0 named"
			if first < 0 {
				first = n
			}
		} else {
			decided = n
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", n, num(ms[i]["check-s"], "s"), verdict)
	}
	if first >= 0 {
		fmt.Fprintf(&b, "\nThe search exceeds its timeout from N = %d; the largest N decided is %d.\n", first, decided)
	}
	return b.String()
}

// scaling is plan throughput by --parallel.
func scaling(res results) string {
	ns, ms := sub(res, "BenchmarkPlanThroughput", "parallel-")
	if len(ns) == 0 {
		return "Plan throughput was not measured.\n"
	}
	var b strings.Builder
	b.WriteString("Plan throughput by `--parallel` (`BenchmarkPlanThroughput`):\n\n| --parallel | plans/min | ÷ parallel 1 |\n|---|---|---|\n")
	for i, n := range ns {
		ratio := ""
		if base := ms[0]["plans/min"]; ns[0] == 1 && base > 0 {
			ratio = fmt.Sprintf("%.2f", ms[i]["plans/min"]/base)
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", n, num(ms[i]["plans/min"], ""), ratio)
	}
	return b.String()
}

// backends is one run's cost on each backend (BenchmarkRunOnBackend).
func backends(res results) string {
	var b strings.Builder
	b.WriteString("One run on each backend (`BenchmarkRunOnBackend`: servers started, 500 ms of two clients, checked, stopped; medians of interleaved pairs, the docker backend reusing the previous run's containers):\n\n| topology | process | docker | docker ÷ process | spread of the ratio (IQR) | docker's first run (makes the containers) |\n|---|---|---|---|---|---|\n")
	any := false
	for _, topo := range []string{"single", "replicated"} {
		m, ok := res["BenchmarkRunOnBackend/"+topo]
		if !ok {
			continue
		}
		any = true
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %.2f | %s |\n", topo, num(m["process-s"], "s"), num(m["docker-s"], "s"),
			m["docker/process"], m["docker/process-iqr"], num(m["docker-first-s"], "s"))
	}
	if !any {
		return "The backends were not measured (no Docker engine).\n"
	}
	return b.String()
}
