package subprocess

import (
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/locklab/locklab/lockimpl"
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

// redisPyOptions are the parameters of redis-py 4.3.4's Lock (Redis.lock(name, timeout,
// sleep, blocking, blocking_timeout, thread_local)) that its users choose; timeout is the
// request's ttl. The client reads them from LOCKLAB_OPTIONS (durations in milliseconds,
// passed to redis-py in seconds).
func redisPyOptions() []lockimpl.Option {
	return []lockimpl.Option{
		{
			Name: "blocking", Kind: lockimpl.KindBool, Default: false, Values: []any{true},
			Neutral: true,
			Doc: "blocking: acquire retries SET NX every sleep until it is granted or blocking_timeout has passed (the library's default True; locklab's False, one try, " +
				"puts every refusal in the history); the tries run inside the request, whose recorded interval covers them, with the same token, " +
				"and the validity counts from the try that was granted: timing only",
		},
		{
			Name: "blocking_timeout", Kind: lockimpl.KindDuration, Default: 500 * time.Millisecond,
			Values: []any{100 * time.Millisecond, time.Second}, Max: int64(time.Second), Neutral: true,
			Doc: "blocking_timeout of a blocking acquire: no try starts later than this after the first (0: one try); " +
				"the library's default None (forever) cannot be run: locklab gives up on an answer after LOCKLAB_TIMEOUT_MS + 1 s, replaces the client and records unknown",
		},
		{
			Name: "sleep", Kind: lockimpl.KindDuration, Default: 100 * time.Millisecond, Values: []any{10 * time.Millisecond},
			Max: int64(time.Second), Neutral: true,
			Doc: "sleep between the tries of a blocking acquire (the library's default 0.1 s)",
		},
		{
			Name: "thread_local", Kind: lockimpl.KindBool, Default: true, Neutral: true,
			Doc: "thread_local: the Lock keeps its token in thread-local storage (the library's default True) or in a plain attribute; " +
				"it matters only to a Lock used from two threads, and the client makes one Lock per lease and answers every request on its main thread, " +
				"so it changes nothing here and is never drawn",
		},
	}
}
