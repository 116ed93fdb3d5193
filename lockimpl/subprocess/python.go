package subprocess

import (
	"fmt"
	"os"
	"os/exec"
)

// The Python clients (clients/python), run by Debian's interpreter, for which Debian's
// python3-redis is installed.
const (
	// EnvPythonClient points at the Python clients (clients/python/redis_py_lock.py or
	// its folder) when locklab runs from a place where it cannot find them by itself.
	EnvPythonClient = "LOCKLAB_PYTHON_CLIENT"
	// EnvPython is the interpreter that runs them, /usr/bin/python3 when unset (a python3
	// earlier on PATH, such as a pyenv shim, may not have python3-redis).
	EnvPython = "LOCKLAB_PYTHON"

	// pythonMain is redis-py's Lock client, by which the folder of the Python clients is
	// found.
	pythonMain = "redis_py_lock.py"
	// debianPython is Debian's interpreter, the one python3-redis installs for.
	debianPython = "/usr/bin/python3"
	// installPython says what to install.
	installPython = "install Debian's python3-redis (`apt-get install -y python3-redis`; `scripts/install-deps.sh` does it)"
)

// pythonClientCommand finds the interpreter and the Python client file when a Locker is
// built. A client whose interpreter lacks redis-py exits before its hello, saying
// python3-redis is to be installed; the start error quotes it.
func pythonClientCommand(file string) func() ([]string, error) {
	return func() ([]string, error) {
		script, err := findClient("Python", "clients/python", pythonMain, EnvPythonClient, file)
		if err != nil {
			return nil, err
		}
		python := os.Getenv(EnvPython)
		if python == "" {
			python = debianPython
		}
		path, err := exec.LookPath(python)
		if err != nil {
			return nil, fmt.Errorf("no Python interpreter %s (set $%s to another) for %s: %v; %s", python, EnvPython, script, err, installPython)
		}
		return []string{path, script}, nil
	}
}
