package layout

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/locklab/locklab/"

// maxLines is the size limit of a package, in non-test lines.
const maxLines = 2100

// overLimit are the packages allowed more for now, each with its limit: cluster (2,678
// lines: the Redis topologies with Redis Cluster and its failovers, Sentinel's promotion after a TILT,
// etcd's members, the node interfaces the docker backend adds, server clocks calibrated at a rate, starting a topology's
// servers at once, the external servers' secrets; what is said to one Sentinel, one
// server's replication and a Redis Cluster's forming went to packages of their own)
// still owes the Sentinel orchestration (sentinel.go) a package of its own. campaign (2,508 lines: generators with the Redis Cluster, WAIT and extend draws,
// the search with confirmation, shrinking and the failures waiting for one, summaries
// with findings by what they show, pauses until another client, a long run's faults
// drawn slot by slot (schedule.go); re-running a plan went to rerun) owes its summaries a
// package of their own. cmd/locklab (2,469 lines, with assess, matrix merge and its recheck, list's
// releases, replay --impl, bisect and campaign --compare-with; it owes a split of its commands; its progress displays went to internal/liveline, the command line
// written again to internal/cmdline).
var overLimit = map[string]int{"cluster": 2680, "campaign": 2510, "cmd/locklab": 2470}

// pkg is what go list says of a package of the module.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module)
		var own []string
		for _, imp := range p.Imports {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				own = append(own, rest)
			}
		}
		p.Imports = own
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestPackagesAreSmall: no package has more than maxLines lines of non-test Go.
func TestPackagesAreSmall(t *testing.T) {
	for _, p := range listPackages(t) {
		n := 0
		for _, f := range p.GoFiles {
			data, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			n += strings.Count(string(data), "\n")
		}
		limit := maxLines
		if l, ok := overLimit[p.ImportPath]; ok {
			limit = l
		}
		if n > limit {
			t.Errorf("package %s has %d lines of non-test code, more than %d: split it by role", p.ImportPath, n, limit)
		}
	}
}

// TestDesignListsEveryPackage: the package table of docs/design.md names exactly the
// packages of the module.
func TestDesignListsEveryPackage(t *testing.T) {
	f, err := os.Open("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([a-z0-9/-]+)` \\|")
	var listed []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "<!-- packages:begin -->":
			in = true
		case line == "<!-- packages:end -->":
			in = false
		case in:
			if m := row.FindStringSubmatch(line); m != nil {
				listed = append(listed, m[1])
			}
		}
	}
	var have []string
	for _, p := range listPackages(t) {
		if p.ImportPath != "internal/layout" {
			have = append(have, p.ImportPath)
		}
	}
	for _, p := range have {
		if !slices.Contains(listed, p) {
			t.Errorf("package %s is missing from the package table of docs/design.md", p)
		}
	}
	for _, p := range listed {
		if !slices.Contains(have, p) {
			t.Errorf("docs/design.md lists package %s, which does not exist", p)
		}
	}
}

// stage is each package's place in the flow of a run; an import may only point to a
// package of an earlier stage (or the same one, for a package and its subpackages).
var stage = map[string]int{
	"model": 0, "internal/jsonfile": 0, "internal/rapidshrink": 0, "internal/mdblock": 0, "internal/benchstat": 0, "internal/browsertest": 0,
	"internal/gate": 0, "internal/liveline": 0, "internal/cmdline": 0,
	"cluster/exactlyonce": 0, // go-redis options every client is built from; imports nothing of ours
	"cluster/serverlog":   0, // a started server's log since its start; imports nothing of ours
	"internal/workflows":  0,
	"internal/benchtable": 18, // make bench: runs go test, imports nothing of the flow
	"histories":           1,
	"linearizability":     2,
	"timeline":            3,
	"cluster/replication": 3, // one server's replication by address, under cluster and clustermode
	"cluster":             4, // and its subpackages: access, netproxy, faketime, etcd, clustermode, sentinel (replication and exactlyonce below them)
	"cluster/docker":      5, // a backend of cluster, on the shared pieces (faketime)
	"cluster/clustertest": 6, // test helpers for every backend
	"lockimpl":            7, // and libs, subprocess, locktest
	"workload":            8, "locks": 8,
	"faults/spec":        8, // a fault's spec, target and window, under every fault family
	"faults/gates":       8, // the client gates the families arm
	"faults":             9, // and faults/network, faults/failover
	"releases":           9, // library releases as implementations, over lockimpl and the registry locks fills
	"plan":               10,
	"internal/planflags": 11, // the command line's plan: flags laid over a plan, for run and soak
	"runner":             11, "tla/bridge": 11,
	"campaign/expect": 12, "bisect": 12, // bisect: the search for the release where a verdict changes; runs nothing itself
	"rerun":    12, // one plan run again N times, and the label another release gets (campaign --compare-with, assess)
	"campaign": 13, "matrix": 13, "jobsbench": 13,
	"assess":            14, // the one-command verdict: conformance, the catalog row, a campaign
	"report/page":       15, // the HTML every page shares: stylesheet, head and foot, a run's links
	"report/wording":    15, // the phrases a result's renderings share
	"report/index":      16, // the index.html of a campaign's and a detection benchmark's directory
	"report/junit":      16, // junit.xml of a campaign and of an assessment
	"report/reporttest": 16, // test helpers for report and its packages
	"report":            17, // and report/tutorial
	"cmd/locklab":       18, "cmd/locklab-lockserve": 18,
}

// TestImportsFollowTheFlow: no package imports one that comes later in the flow, campaign
// and matrix stay apart, and report is imported by the CLI alone.
func TestImportsFollowTheFlow(t *testing.T) {
	for _, p := range listPackages(t) {
		from, ok := stageOf(p.ImportPath)
		if !ok {
			if p.ImportPath != "internal/layout" {
				t.Errorf("package %s has no stage in this test: give it its place in the flow", p.ImportPath)
			}
			continue
		}
		for _, imp := range p.Imports {
			to, ok := stageOf(imp)
			if !ok {
				continue // reported as that package's own error
			}
			switch {
			case to > from:
				t.Errorf("%s imports %s, which comes later in the flow", p.ImportPath, imp)
			case to == from && !strings.HasPrefix(imp, p.ImportPath+"/") && !strings.HasPrefix(p.ImportPath, imp+"/"):
				t.Errorf("%s imports %s, a package of the same stage", p.ImportPath, imp)
			case imp == "report" && p.ImportPath != "cmd/locklab":
				t.Errorf("%s imports report: only the CLI renders", p.ImportPath)
			}
		}
	}
}

// stageOf is the stage of a package, or of the nearest parent that has one.
func stageOf(path string) (int, bool) {
	for p := path; p != "." && p != ""; p = filepath.Dir(p) {
		if s, ok := stage[p]; ok {
			return s, true
		}
	}
	return 0, false
}
