package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkCheckMillion-2     	       3	2854535670 ns/op	    404526 ops/s	       357.5 rss-MB	         2.472 wall-s
BenchmarkCheckSingleKey-2   	       3	 137625944 ns/op	     66713 ops/s	        47.39 rss-MB	         0.2499 wall-s
BenchmarkCheckTenMillion-2   	       1	71035530944 ns/op	    140775 ops/s	       889.2 rss-MB	        71.04 wall-s
BenchmarkAdversarial/concurrent-12-2        	       1	 293073486 ns/op	         0.2931 check-s	         1.000 decided
BenchmarkAdversarial/concurrent-8-2         	       1	  50645447 ns/op	         0.05064 check-s	         1.000 decided
BenchmarkAdversarial/concurrent-16-2        	       1	2005418415 ns/op	         2.005 check-s	         0 decided
BenchmarkPlanThroughput/parallel-1-2 1 1 ns/op 40 plans/min
BenchmarkPlanThroughput/parallel-2-2 1 1 ns/op 70 plans/min
BenchmarkRunOnBackend/single-2 11 1 ns/op 0.55 docker-s 2.7 docker-first-s 0.94 docker/process 0.05 docker/process-iqr 0.58 process-s
BenchmarkRunOnBackend/replicated-2 11 1 ns/op 1.6 docker-s 7.1 docker-first-s 1.8 docker/process 0.2 docker/process-iqr 0.9 process-s
PASS
`

func TestTableSaysWhichGoalsAreMet(t *testing.T) {
	res := results{}
	if err := parse(strings.NewReader(sample), res); err != nil {
		t.Fatal(err)
	}
	if v := res["BenchmarkCheckMillion"]["wall-s"]; v != 2.472 {
		t.Fatalf("wall-s %v", v)
	}
	md, missed := document(res, "header")
	// Met: million wall and memory, ten million's memory, plans, docker single; missed:
	// single key (0.25 s), ten million's wall (71 s), docker replicated (1.8), and the
	// recording and harness goals, not measured.
	if missed != 5 {
		t.Errorf("missed %d, want 5\n%s", missed, md)
	}
	for _, want := range []string{
		"| 2.47 s | 0.49 | yes |", "| 0.25 s | 1.25 | **no** |", "not measured", "| 70 | 1.17 | yes |",
		"| 71 s | 2.84 | **no** |", "| 889 MB | 0.59 | yes |",
		"from N = 16; the largest N decided is 12", "| 2 | 70 | 1.75 |",
		"| 0.94 | 0.63 | yes |", "| 1.8 | 1.20 | **no** |", "| single | 0.58 s | 0.55 s | 0.94 | 0.05 | 2.7 s |",
		"`go test -run '^$' -bench 'CheckMillion|CheckSingleKey|CheckScale' -benchtime 3x -benchmem ./cmd/locklab`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
}

func TestParseRefusesUnpairedValues(t *testing.T) {
	if err := parse(strings.NewReader("BenchmarkX-2 1 5 ns/op 7\n"), results{}); err == nil {
		t.Fatal("no error")
	}
}
