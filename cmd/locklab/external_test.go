package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// testPassword is a password no file or message can hold by chance.
func testPassword(t *testing.T) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "pw-" + hex.EncodeToString(b[:])
}

// assertNoSecret fails when secret, or a recognisable piece of it (clustertest.Leak),
// appears in any file under dir or in any of texts; dir "" is no directory to look in.
func assertNoSecret(t *testing.T, secret, dir string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if leak := clustertest.Leak(secret, s); leak != "" {
			t.Errorf("output holds %q of the password:\n%s", leak, s)
		}
	}
	if dir == "" {
		return
	}
	files := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if leak := clustertest.Leak(secret, string(data)); leak != "" {
			t.Errorf("%s holds %q of the password", path, leak)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	if files == 0 {
		t.Fatalf("no file under %s: the run wrote nothing", dir)
	}
}

// runDir is the one run directory locklab wrote under out.
func runDir(t *testing.T, out string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(out, "*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("run directories under %s: %v (%v), want one", out, dirs, err)
	}
	return dirs[0]
}

// assertGranted fails unless the run's history holds a granted acquire: the clients did
// reach the server with their credentials.
func assertGranted(t *testing.T, dir string) {
	t.Helper()
	assertOK(t, dir, "acquire")
}

// assertOK fails unless the run's history holds an operation of kind that succeeded.
func assertOK(t *testing.T, dir, kind string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"kind":"`+kind+`"`) && strings.Contains(line, `"outcome":"ok"`) {
			return
		}
	}
	t.Fatalf("%s: no %s succeeded", dir, kind)
}

// TestExternalCredentials runs Go and subprocess lock clients against a server that
// wants a password, given in the URL or in the environment, over plain TCP and TLS, and
// finds the password in no file of the run directories and in no output; a plan
// recorded there names the servers with the password redacted, and replays only with
// the password in the environment.
func TestExternalCredentials(t *testing.T) {
	pw := testPassword(t)
	srv := clustertest.Secured(t, "alice", pw, true)
	base := []string{"run", "--clients", "2", "--duration", "300ms", "--fencing", "off"}
	cases := []struct {
		name      string
		impl      string
		lock      string
		store     string
		tls       bool
		envUser   bool // the user from LOCKLAB_REDIS_USERNAME too
		envSecret bool // the password from LOCKLAB_REDIS_PASSWORD
	}{
		{name: "setnx-url", impl: "setnx", lock: "redis://alice:" + pw + "@" + srv.Addr, store: "redis://:" + pw + "@" + srv.Addr + "/1"},
		{name: "fenced-env", impl: "fenced", lock: "redis://alice@" + srv.Addr, store: srv.Addr, envSecret: true},
		{name: "redis-py-url", impl: "redis-py", lock: "redis://alice:" + pw + "@" + srv.Addr + "/2", store: "redis://alice:" + pw + "@" + srv.Addr},
		{name: "node-ioredis-env", impl: "node-ioredis", lock: srv.Addr, store: srv.Addr, envUser: true, envSecret: true},
		{name: "setnx-tls", impl: "setnx", lock: "rediss://alice:" + pw + "@" + srv.TLSAddr, store: "rediss://alice:" + pw + "@" + srv.TLSAddr, tls: true},
		{name: "rueidislock-tls", impl: "rueidislock", lock: "rediss://alice:" + pw + "@" + srv.TLSAddr, store: "rediss://alice:" + pw + "@" + srv.TLSAddr, tls: true},
		{name: "redis-py-tls-env", impl: "redis-py", lock: "rediss://" + srv.TLSAddr, store: "rediss://" + srv.TLSAddr, tls: true, envSecret: true},
		{name: "node-ioredis-tls", impl: "node-ioredis", lock: "rediss://alice:" + pw + "@" + srv.TLSAddr + "/3", store: "rediss://alice:" + pw + "@" + srv.TLSAddr, tls: true},
		// A Go lock in a process of its own (locklab-lockserve reads the environment too).
		{name: "rueidislock-process-tls-env", impl: "rueidislock-process", lock: "rediss://alice@" + srv.TLSAddr + "/4", store: srv.Addr, tls: true, envSecret: true},
	}
	lockserve := filepath.Join(t.TempDir(), "locklab-lockserve")
	if out, err := exec.Command("go", "build", "-o", lockserve, "../locklab-lockserve").CombinedOutput(); err != nil {
		t.Fatalf("build locklab-lockserve: %v\n%s", err, out)
	}
	t.Setenv(subprocess.EnvLockserve, lockserve)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.envSecret {
				t.Setenv(access.EnvPassword, pw)
			}
			if c.envUser {
				t.Setenv(access.EnvUsername, "alice")
			}
			out := t.TempDir()
			args := append(append([]string(nil), base...), "--impl", c.impl, "--out", out, "--external-lock", c.lock, "--external-store", c.store)
			if c.tls {
				args = append(args, "--external-ca", srv.CAFile)
			}
			code, stdout, stderr := locklab(t, args...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			dir := runDir(t, out)
			assertGranted(t, dir)
			assertNoSecret(t, pw, out, stdout, stderr)
			plan, err := os.ReadFile(filepath.Join(dir, "plan.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(plan), `"external"`) || !strings.Contains(string(plan), access.Redacted) {
				t.Errorf("plan.json does not record the external servers with a redacted password:\n%s", plan)
			}
		})
	}

	t.Run("jobs", func(t *testing.T) {
		// The job queue's producer and reaper use the store's own address.
		planFile := filepath.Join(t.TempDir(), "jobs.json")
		jobs := `{"impl": "setnx", "clients": 2, "ttl": "2s", "work": "10ms", "duration": "300ms",
			"workload": "jobs", "jobs": {"rate": 20, "visibility": "1s", "lock": true}}`
		if err := os.WriteFile(planFile, []byte(jobs), 0o644); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		code, stdout, stderr := locklab(t, "run", "--plan", planFile, "--out", out,
			"--external-lock", "redis://alice:"+pw+"@"+srv.Addr, "--external-store", "rediss://alice:"+pw+"@"+srv.TLSAddr+"/5", "--external-ca", srv.CAFile)
		if code != exitOK {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		dir := runDir(t, out)
		for _, kind := range []string{"acquire", "enqueue", "deliver", "effect"} {
			assertOK(t, dir, kind)
		}
		assertNoSecret(t, pw, out, stdout, stderr)
	})

	t.Run("replay", func(t *testing.T) {
		out := t.TempDir()
		code, stdout, stderr := locklab(t, append(append([]string(nil), base...), "--out", out,
			"--external-lock", "redis://alice:"+pw+"@"+srv.Addr, "--external-store", "redis://alice:"+pw+"@"+srv.Addr)...)
		if code != exitOK {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		planFile := filepath.Join(runDir(t, out), "plan.json")
		again := t.TempDir()
		t.Setenv(access.EnvPassword, "")
		code, stdout, stderr = locklab(t, "run", "--plan", planFile, "--out", again)
		if code != exitError || !strings.Contains(stderr, access.EnvPassword) || !strings.Contains(stderr, "external.lock[0]") {
			t.Fatalf("replay without %s: exit %d, stderr %q; want a refusal naming the variable and the plan's field", access.EnvPassword, code, stderr)
		}
		t.Setenv(access.EnvPassword, pw)
		code, stdout, stderr = locklab(t, "run", "--plan", planFile, "--out", again)
		if code != exitOK {
			t.Fatalf("replay with %s: exit %d\n%s\n%s", access.EnvPassword, code, stdout, stderr)
		}
		assertGranted(t, runDir(t, again))
		assertNoSecret(t, pw, again, stdout, stderr)
	})
}

// TestExternalCredentialErrors: a wrong password, a server that wants one, a bad URL or
// CA bundle are refused with a message that names the flag and shows no password.
func TestExternalCredentialErrors(t *testing.T) {
	pw := testPassword(t)
	srv := clustertest.Secured(t, "alice", pw, true)
	wrong := testPassword(t)
	bad := filepath.Join(t.TempDir(), "not-a-ca.pem")
	if err := os.WriteFile(bad, []byte("no certificate here"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		args   []string
		secret string
		want   []string
	}{
		{"wrong password", []string{"--external-lock", "redis://alice:" + wrong + "@" + srv.Addr, "--external-store", srv.Addr},
			wrong, []string{"refused the credentials", "redis://alice:xxxxx@"}},
		{"no password", []string{"--external-lock", srv.Addr, "--external-store", srv.Addr},
			pw, []string{"NOAUTH", access.EnvPassword}},
		{"bad port", []string{"--external-lock", "redis://alice:" + wrong + "@127.0.0.1:notaport", "--external-store", srv.Addr},
			wrong, []string{"flag --external-lock", "redis://alice:xxxxx@127.0.0.1:notaport"}},
		{"bad scheme", []string{"--external-lock", srv.Addr, "--external-store", "http://alice:" + wrong + "@" + srv.Addr},
			wrong, []string{"flag --external-store", "scheme"}},
		{"query", []string{"--external-lock", "redis://alice:" + wrong + "@" + srv.Addr + "?dial_timeout=1s", "--external-store", srv.Addr},
			wrong, []string{"flag --external-lock", "query"}},
		{"bad CA", []string{"--external-lock", "rediss://alice:" + wrong + "@" + srv.Addr, "--external-store", srv.Addr, "--external-ca", bad},
			wrong, []string{"flag --external-ca", bad}},
		{"CA without TLS", []string{"--external-lock", srv.Addr, "--external-store", srv.Addr, "--external-ca", srv.CAFile},
			pw, []string{"flag --external-ca", "rediss://"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := locklab(t, append([]string{"run", "--duration", "200ms", "--out", out}, c.args...)...)
			if code != exitError {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitError, stdout, stderr)
			}
			t.Logf("stderr: %s", stderr)
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			for _, s := range []string{c.secret, pw} {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("output shows a password:\n%s\n%s", stdout, stderr)
				}
				if _, err := os.Stat(out); err == nil {
					filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
						if err == nil && !d.IsDir() {
							if data, _ := os.ReadFile(path); strings.Contains(string(data), s) {
								t.Errorf("%s holds a password", path)
							}
						}
						return nil
					})
				}
			}
		})
	}
}

// leakyClient is a lock client that prints its environment and arguments to stderr and
// refuses every acquire with an error that holds its server's URL, password and all (as
// JSON, escaped). With argument "die" it dies before its hello instead, its password on
// the last line of its stderr, when it has one (not when locklab registers it).
const leakyClient = `env >&2
echo "args: $0 $*" >&2
if [ "$1" = die ] && [ -n "$LOCKLAB_REDIS_PASSWORD" ]; then
  printf 'cannot AUTH with %s' "$LOCKLAB_REDIS_PASSWORD" >&2
  exit 3
fi
echo '{"hello":"locklab-lock/1","name":"leaky","fencing":false}'
pw=$(printf '%s' "$LOCKLAB_REDIS_PASSWORD" | sed 's/\\/\\\\/g; s/"/\\"/g')
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  printf '{"id":%s,"outcome":"fail","error":"redis://%s:%s@%s refused"}\n' "$id" "$LOCKLAB_REDIS_USERNAME" "$pw" "$LOCKLAB_ADDRS"
done`

// TestExternalAwkwardPassword: a password with , " @ % : (percent-encoded in the URL, as
// users must) reaches the servers whole from --external-lock, --external-store and a
// plan's external section, and neither it nor a recognisable piece of it is in any file
// of the run directories or any output: not when a lock client prints its environment,
// puts the URL in its errors or dies saying it, and not in the errors of bad input.
func TestExternalAwkwardPassword(t *testing.T) {
	pw := clustertest.AwkwardPassword(t)
	srv := clustertest.Secured(t, "alice", pw, false)
	lockURL := "redis://" + url.UserPassword("alice", pw).String() + "@" + srv.Addr
	if !strings.Contains(lockURL, ",") {
		t.Fatalf("URL %s has no comma: the test would not show that flags take URLs whole", access.RedactURL(lockURL))
	}
	script := filepath.Join(t.TempDir(), "leaky.sh")
	if err := os.WriteFile(script, []byte(leakyClient), 0o755); err != nil {
		t.Fatal(err)
	}
	base := []string{"run", "--clients", "2", "--duration", "300ms", "--fencing", "off",
		"--external-lock", lockURL, "--external-store", lockURL + "/1"}

	t.Run("leaky client", func(t *testing.T) {
		out := t.TempDir()
		code, stdout, stderr := locklab(t, append([]string{"--impl-cmd", "leaky=sh " + script + " run", "--impl", "leaky", "--out", out}, base...)...)
		if code == exitError {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		dir := runDir(t, out)
		for file, want := range map[string]string{
			filepath.Join(dir, "logs", "client-0.log"): access.EnvPassword + "=xxxxx",
			filepath.Join(dir, "history.jsonl"):        "redis://alice:xxxxx@",
		} {
			if data, err := os.ReadFile(file); err != nil || !strings.Contains(string(data), want) {
				t.Errorf("%s does not hold %q: the client's words did not reach it redacted (%v)", file, want, err)
			}
		}
		assertNoSecret(t, pw, out, stdout, stderr)
	})

	t.Run("client dies", func(t *testing.T) {
		out := t.TempDir()
		code, stdout, stderr := locklab(t, append([]string{"--impl-cmd", "leaky=sh " + script + " die", "--impl", "leaky", "--out", out}, base...)...)
		if code != exitError || !strings.Contains(stderr, "cannot AUTH with xxxxx") {
			t.Fatalf("exit %d, want %d with the client's last words redacted\n%s\n%s", code, exitError, stdout, stderr)
		}
		assertNoSecret(t, pw, out, stdout, stderr)
	})

	t.Run("plan file", func(t *testing.T) {
		planFile := filepath.Join(t.TempDir(), "plan.json")
		doc, err := json.Marshal(map[string]any{"impl": "setnx", "clients": 2, "duration": "300ms",
			"external": map[string]any{"lock": []string{lockURL}, "store": lockURL + "/2"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(planFile, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		code, stdout, stderr := locklab(t, "run", "--plan", planFile, "--out", out)
		if code != exitOK {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		assertGranted(t, runDir(t, out))
		assertNoSecret(t, pw, out, stdout, stderr)
	})

	t.Run("bad input", func(t *testing.T) {
		for _, c := range []struct {
			name string
			args []string
			want string
		}{
			// Once, servers were a comma-separated list: the password was cut at its comma.
			{"comma list", []string{"--external-lock", lockURL + "," + lockURL, "--external-store", lockURL}, "flag --external-lock: server \"redis://alice:xxxxx@"},
			{"not percent-encoded", []string{"--external-lock", "redis://alice:" + pw + "@" + srv.Addr, "--external-store", lockURL}, "flag --external-lock: server \"redis://alice:xxxxx@"},
			{"wrong user", []string{"--external-lock", strings.Replace(lockURL, "alice", "bob", 1), "--external-store", lockURL}, "refused the credentials"},
			{"store not percent-encoded", []string{"--external-lock", lockURL, "--external-store", "redis://" + pw + "@" + srv.Addr}, "flag --external-store: server \"redis://xxxxx@"},
		} {
			t.Run(c.name, func(t *testing.T) {
				out := t.TempDir()
				code, stdout, stderr := locklab(t, append([]string{"run", "--duration", "200ms", "--out", out}, c.args...)...)
				if code != exitError || !strings.Contains(stderr, c.want) {
					t.Errorf("exit %d, stderr %q; want %d saying %q", code, stderr, exitError, c.want)
				}
				dir := "" // most bad input is refused before a run directory exists
				if written, _ := os.ReadDir(out); len(written) > 0 {
					dir = out
				}
				assertNoSecret(t, pw, dir, stdout, stderr)
			})
		}
	})
}
