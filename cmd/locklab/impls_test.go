package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const miniLock = "/usr/bin/python3 testdata/minilock.py"

// TestImplCmdRegistersAClient: a lock client in plain Python, registered from the command
// line, runs like a built-in: a fault-free run shows no violation, its stderr is in
// logs/client-N.log, and the matrix gives it a row.
func TestImplCmdRegistersAClient(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	dir := t.TempDir()
	code, stdout, stderr := locklab(t, "run", "--impl-cmd", "minilock="+miniLock, "--impl", "minilock", "--duration", "1s", "--out", dir)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*", "logs", "client-*.log"))
	if len(logs) != 3 {
		t.Fatalf("client logs %v, want one per client (3)", logs)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil || !strings.Contains(string(data), "minilock: started") {
		t.Errorf("%s: %q, %v", logs[0], data, err)
	}

	locks := filepath.Join(dir, "locks.json")
	doc := `{"locks": [{"name": "minilock", "command": ["/usr/bin/python3", "testdata/minilock.py"], "description": "a lock in plain Python"}]}`
	if err := os.WriteFile(locks, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = locklab(t, "matrix", "--locks", locks, "--impl", "minilock", "--scenario", "baseline", "--fencing", "off", "--out", filepath.Join(dir, "m"))
	if code != exitOK || !strings.Contains(stdout+stderr, "minilock") {
		t.Fatalf("matrix: exit %d\n%s\n%s", code, stdout, stderr)
	}
	md, err := os.ReadFile(filepath.Join(dir, "m", "matrix.md"))
	if err != nil || !strings.Contains(string(md), "minilock") {
		t.Errorf("matrix.md has no minilock column: %v\n%s", err, md)
	}
}

func TestImplCmdErrorsNameTheirPlace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badJSON := write("bad.json", "{\"locks\": [\n  {\"name\": \"x\",\n   \"command\": [\"a\"],}\n]}")
	noCmd := write("nocmd.json", "{\"locks\": [\n  {\"name\": \"x\"},\n  {\"name\": \"y\", \"command\": []}\n]}")
	unknown := write("unknown.json", `{"locks": [{"name": "x", "cmd": ["a"]}]}`)
	wantRefused(t, []flagCase{
		{[]string{"list", "--impl-cmd", "nameonly"}, `flag --impl-cmd "nameonly": want NAME=COMMAND`},
		{[]string{"list", "--impl-cmd", "x='unterminated"}, "unterminated quote"},
		{[]string{"list", "--impl-cmd", "Bad Name=true"}, `name "Bad Name"`},
		{[]string{"list", "--impl-cmd", "setnx=true"}, `"setnx" is already registered`},
		{[]string{"list", "--impl-cmd", "a=" + miniLock, "--impl-cmd", "a=" + miniLock}, `"a" is registered twice`},
		{[]string{"list", "--impl-cmd", "quiet=/bin/true"}, `flag --impl-cmd "quiet=/bin/true": client "/bin/true": exited before its hello line`},
		{[]string{"list", "--locks", badJSON}, badJSON + ":3: bad JSON"},
		{[]string{"list", "--locks", noCmd}, noCmd + ":2: locks[0].command: want the client's argv"},
		{[]string{"list", "--locks", unknown}, `unknown field "cmd"`},
		{[]string{"list", "--locks", filepath.Join(dir, "missing.json")}, "flag --locks:"},
	})
}

// TestHelloDeclaresTheTopology: a client registered by command says in its hello that it
// runs on N independent servers; a registration that names another topology is refused.
func TestHelloDeclaresTheTopology(t *testing.T) {
	hello := `/bin/sh -c 'echo {\"hello\":\"locklab-lock/1\",\"name\":\"n\",\"fencing\":false,\"topology\":\"nodes\"}; sleep 5'`
	code, stdout, stderr := locklab(t, "list", "--impl-cmd", "multi="+hello)
	if code != exitOK || !regexp.MustCompile(`(?m)^multi\s+none\s+nodes\s`).MatchString(stdout) {
		t.Fatalf("list: exit %d, want multi on nodes\n%s\n%s", code, stdout, stderr)
	}
	locks := filepath.Join(t.TempDir(), "locks.json")
	doc := `{"locks": [{"name": "multi", "topology": "single", "command": ["/bin/sh", "-c", "echo '{\"hello\":\"locklab-lock/1\",\"name\":\"n\",\"fencing\":false,\"topology\":\"nodes\"}'; sleep 5"]}]}`
	if err := os.WriteFile(locks, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, []flagCase{{[]string{"list", "--locks", locks}, `locks[0]: registered with topology "single", but its hello says "nodes"`}})
}
