package locks_test

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/locks"
)

func TestShellWords(t *testing.T) {
	for in, want := range map[string][]string{
		`python3 ./my_lock.py`:         {"python3", "./my_lock.py"},
		`node 'my dir/lock.mjs' --x=1`: {"node", "my dir/lock.mjs", "--x=1"},
		`sh -c "echo \"hi\" \$HOME"`:   {"sh", "-c", `echo "hi" $HOME`},
		`a\ b  c`:                      {"a b", "c"},
		`''`:                           {""},
		"":                             nil,
	} {
		got, err := locks.ShellWords(in)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("locks.ShellWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := locks.ShellWords(`"open`); err == nil {
		t.Error(`locks.ShellWords("open) did not fail`)
	}
}
