package workflows

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot holds go.mod (which pins actionlint) and .github/workflows.
const repoRoot = "../.."

// actionlint runs the pinned actionlint on files and returns what it printed and its exit
// status (0 clean, 1 problems found). shellcheck and pyflakes are turned off: actionlint
// runs them only when they are installed, and the verdict must not depend on the machine.
func actionlint(t *testing.T, files ...string) (string, int) {
	t.Helper()
	args := append([]string{"tool", "actionlint", "-no-color", "-shellcheck=", "-pyflakes="}, files...)
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = repoRoot
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("go tool actionlint: %v\n%s", err, stderr.String())
	}
	return string(out) + stderr.String(), cmd.ProcessState.ExitCode()
}

// TestWorkflowsLint: actionlint finds nothing in the repository's workflows.
func TestWorkflowsLint(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.yml", "*.yaml"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, ".github", "workflows", pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, err := filepath.Rel(repoRoot, f)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, rel)
		}
	}
	// docs/nightly.md tells people to copy this one.
	if !slices.Contains(files, filepath.Join(".github", "workflows", "nightly.yml")) {
		t.Fatalf("no .github/workflows/nightly.yml among the workflows %q", files)
	}
	if out, code := actionlint(t, files...); code != 0 {
		t.Errorf("actionlint on %s (exit status %d):\n%s", strings.Join(files, " "), code, out)
	}
}

// TestBrokenWorkflowsFail: actionlint does report the mistakes the lint is there for, so
// that TestWorkflowsLint cannot pass by linting nothing.
func TestBrokenWorkflowsFail(t *testing.T) {
	for _, c := range []struct {
		name, workflow, want string
	}{
		{"undefined input", `on:
  workflow_dispatch:
    inputs:
      budget: {default: "20m"}
jobs:
  assess:
    runs-on: ubuntu-latest
    steps:
      - run: echo "${{ inputs.budgt }}"
`, `property "budgt" is not defined`},
		{"unknown key", `on: push
jobs:
  assess:
    runs_on: ubuntu-latest
    steps:
      - run: "true"
`, `unexpected key "runs_on"`},
		{"action input", `on: push
jobs:
  assess:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/upload-artifact@v4
        with: {name: report, paths: out/assess}
`, `input "paths" is not defined in action "actions/upload-artifact@v4"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "broken.yml")
			if err := os.WriteFile(f, []byte(c.workflow), 0o644); err != nil {
				t.Fatal(err)
			}
			out, code := actionlint(t, f)
			if code != 1 || !strings.Contains(out, c.want) {
				t.Errorf("actionlint exited %d, want 1 with %q in its output:\n%s", code, c.want, out)
			}
		})
	}
}
