package main

// The measurements `make bench` takes, as data: the go test command of each, and the
// goals of issue 15 read off their metrics.

// run is one go test invocation.
type run struct {
	pkg, bench, benchtime string
}

// args is run's go test command line, as the table prints it.
func (r run) args() []string {
	return []string{"test", "-run", "^$", "-bench", r.bench, "-benchtime", r.benchtime, "-benchmem", r.pkg}
}

// goal is one row of the goals table: a metric of one benchmark against a bound.
type goal struct {
	what   string  // the goal in words
	bench  string  // benchmark name without the -GOMAXPROCS suffix
	metric string  // as the benchmark reports it
	unit   string  // for people
	atMost bool    // the metric must be below target (else at least target)
	target float64 // the bound
	run    int     // index into runs()
}

// The runs, by their place in runs().
const (
	checkRun = iota
	advRun
	workloadRun
	plansRun
	renderRun
	dockerRun
	tenRun
)

// runs are every invocation, in the order make bench takes them.
func runs() []run {
	return []run{
		checkRun:    {"./cmd/locklab", "CheckMillion|CheckSingleKey|CheckScale", "3x"},
		advRun:      {"./linearizability", "Adversarial", "1x"},
		workloadRun: {"./workload", "RecordingOverhead|HarnessThroughput", "1x"},
		plansRun:    {"./campaign", "PlanThroughput", "1x"},
		renderRun:   {"./timeline", "Render", "10x"},
		dockerRun:   {"./runner", "RunOnBackend", "11x"},
		tenRun:      {"./cmd/locklab", "CheckTenMillion", "1x"},
	}
}

func goals() []goal {
	return []goal{
		{"1,000,000 operations over 1,000 keys loaded and checked (P1, P2, P3, L1): wall", "BenchmarkCheckMillion", "wall-s", "s", true, 5, checkRun},
		{"… and peak resident memory", "BenchmarkCheckMillion", "rss-MB", "MB", true, 400, checkRun},
		{"10,000 operations of 8 clients on one key loaded and checked: wall", "BenchmarkCheckSingleKey", "wall-s", "s", true, 0.2, checkRun},
		{"10,000,000 operations over 10,000 keys checked offline, read in windows: wall", "BenchmarkCheckTenMillion", "wall-s", "s", true, 25, tenRun},
		{"… and peak resident memory", "BenchmarkCheckTenMillion", "rss-MB", "MB", true, 1500, tenRun},
		{"Recording overhead: workload throughput recorded ÷ unrecorded (median of 48 interleaved pairs)", "BenchmarkRecordingOverhead", "recorded/unrecorded", "", false, 0.98, workloadRun},
		{"Harness throughput: lock operations/s of 16 clients ÷ redis-benchmark SET NX PX -c 16 (median of 11 interleaved rounds)", "BenchmarkHarnessThroughput", "harness/redis-benchmark", "", false, 0.6, workloadRun},
		{"Plans run and checked per minute, TTL 100 ms, --parallel 2", "BenchmarkPlanThroughput/parallel-2", "plans/min", "", false, 60, plansRun},
		{"A run on the docker backend ÷ the same run on the process backend, single server, containers reused (median of 11 interleaved pairs)", "BenchmarkRunOnBackend/single", "docker/process", "", true, 1.5, dockerRun},
		{"… replicated (3 servers, 3 Sentinels)", "BenchmarkRunOnBackend/replicated", "docker/process", "", true, 1.5, dockerRun},
	}
}
