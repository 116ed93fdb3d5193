package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/runner"
)

// asCLI makes the test binary act as locklab itself, so that a test can send a real
// process a real SIGINT.
const asCLI = "LOCKLAB_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		main() // exits
	}
	if spec := os.Getenv(asSynth); spec != "" {
		writeSynth(spec) // exits
	}
	os.Exit(m.Run())
}

// TestInterruptedRunKeepsItsEvidence: Ctrl-C in the middle of `locklab run` stops the
// servers and keeps what was recorded: the partial history is saved, checked and marked
// interrupted in result.json, beside the plan, the visualisation and the server logs.
func TestInterruptedRunKeepsItsEvidence(t *testing.T) {
	clustertest.Backend(t) // skips with the reason when redis-server is missing
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--impl", "fenced", "--fencing", "full", "--duration", "1m", "--out", out)
	cmd.Env = append(os.Environ(), asCLI+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // a no-op once it has exited
	var lines []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "running run with fencing full") {
			break
		}
	}
	// The clients run for a minute: interrupt them once some history is recorded.
	start := time.Now()
	dir := waitForRunDir(t, out)
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError {
		t.Fatalf("exit %v, want status %d; stderr:\n%s", err, exitError, strings.Join(lines, "\n"))
	}
	if took := time.Since(start); took > 45*time.Second {
		t.Errorf("locklab took %s to stop after SIGINT", took)
	}
	if msg := strings.Join(lines, "\n"); !strings.Contains(msg, "run interrupted") || !strings.Contains(msg, dir) {
		t.Errorf("stderr does not say the run was interrupted and where its evidence is:\n%s", msg)
	}

	for _, f := range []string{runner.PlanFile, runner.ResultFile, runner.HTMLFile, histories.HistoryFile, histories.FaultsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	logs, _ := os.ReadDir(filepath.Join(dir, runner.LogsDir))
	if len(logs) == 0 {
		t.Errorf("no server logs in %s", filepath.Join(dir, runner.LogsDir))
	}
	var rep runner.Report
	data, err := os.ReadFile(filepath.Join(dir, runner.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || rep.Ops == 0 || rep.RunTime >= time.Minute {
		t.Errorf("result.json: interrupted %v, %d ops, run time %s; want an interrupted run with a partial history", rep.Interrupted, rep.Ops, rep.RunTime)
	}
	if rep.Result.Verdict == linearizability.Illegal {
		t.Errorf("the partial history of a fault-free run with fencing full shows a violation:\n%s", rep.Result)
	}
	h, err := histories.Load(dir)
	if err != nil || len(h.Ops) != rep.Ops {
		t.Errorf("saved history: %d ops (%v), result.json says %d", len(h.Ops), err, rep.Ops)
	}
	// The saved run re-checks offline like any other.
	if code, stdout, stderr := locklab(t, "check", dir); code != exitOK {
		t.Errorf("locklab check %s: exit %d\n%s%s", dir, code, stdout, stderr)
	}
}

// waitForRunDir waits for the run directory that locklab run creates under out.
func waitForRunDir(t *testing.T, out string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ms, _ := filepath.Glob(filepath.Join(out, "*", runner.PlanFile)); len(ms) == 1 {
			return filepath.Dir(ms[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no run directory under %s", out)
	return ""
}
