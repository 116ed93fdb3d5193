package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/subprocess"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// Flags of every command that takes an implementation: lock clients registered from the
// command line, with no Go.
const (
	flagImplCmd = "impl-cmd"
	flagLocks   = "locks"
)

func addImplFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringArray(flagImplCmd, nil, "register a lock client of the subprocess protocol: NAME=COMMAND (repeatable; its hello says whether it fences and extends)")
	f.String(flagLocks, "", `JSON file of lock clients to register: {"locks": [{"name": ..., "command": [...], "topology": "single"|"nodes"|"etcd", "description": ...}]}`)
}

// implName is what a registered client may be called.
var implName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// clientSpec is one lock client to register, and where it was given.
type clientSpec struct {
	Name        string   `json:"name"`
	Command     []string `json:"command"`
	Topology    string   `json:"topology"`
	Description string   `json:"description"`
	place       string
}

// registryFor is every shipped implementation plus the clients cmd's --impl-cmd and
// --locks name. Each client is started once, against a Redis server of its own, to read
// what its hello says; a client that cannot say hello is an error naming its flag.
func registryFor(cmd *cobra.Command) (*lockimpl.Registry, error) {
	reg := locks.All()
	specs, err := clientSpecs(cmd)
	if err != nil || len(specs) == 0 {
		return reg, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
	defer cancel()
	pb, err := cluster.NewProcessBackend(cluster.ProcessOptions{})
	if err != nil {
		return nil, fmt.Errorf("register lock clients: %w", err)
	}
	defer pb.Close()
	topo, _ := cluster.ParseTopology(cluster.Single)
	cl, err := cluster.Start(ctx, pb, topo, cluster.Options{})
	if err != nil {
		return nil, fmt.Errorf("register lock clients: start a server to greet them: %w", err)
	}
	defer cl.Close()
	for _, s := range specs {
		if _, err := reg.Get(s.Name); err == nil {
			return nil, fmt.Errorf("%s: %q is already registered", s.place, s.Name)
		}
		h, err := subprocess.Describe(ctx, s.Command, s.Topology, lockimpl.Config{Addrs: cl.LockAddrs(), Timeout: 2 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.place, err)
		}
		desc := s.Description
		if desc == "" {
			desc = fmt.Sprintf("%s (command: %s)", h.Name, strings.Join(s.Command, " "))
		}
		impl, err := subprocess.SubprocessOn(s.Topology, s.Name, desc, s.Command, h.Fencing)
		if err == nil {
			impl.NoExtend, impl.Options = !h.Extend, h.Options
			err = reg.Register(impl)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.place, err)
		}
	}
	return reg, nil
}

// clientSpecs reads --impl-cmd and --locks.
func clientSpecs(cmd *cobra.Command) ([]clientSpec, error) {
	var specs []clientSpec
	if f := cmd.Flags().Lookup(flagImplCmd); f != nil {
		vals, _ := cmd.Flags().GetStringArray(flagImplCmd)
		for _, v := range vals {
			place := fmt.Sprintf("flag --%s %q", flagImplCmd, v)
			name, command, ok := strings.Cut(v, "=")
			if !ok {
				return nil, fmt.Errorf("%s: want NAME=COMMAND", place)
			}
			argv, err := shellWords(command)
			if err == nil && len(argv) == 0 {
				err = errors.New("no command after =")
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", place, err)
			}
			specs = append(specs, clientSpec{Name: strings.TrimSpace(name), Command: argv, Topology: cluster.Single, place: place})
		}
	}
	if path, _ := cmd.Flags().GetString(flagLocks); path != "" {
		more, err := readLocksFile(path)
		if err != nil {
			return nil, err
		}
		specs = append(specs, more...)
	}
	seen := map[string]string{}
	for _, s := range specs {
		if !implName.MatchString(s.Name) {
			return nil, fmt.Errorf("%s: name %q: want lower-case letters, digits, '.', '_' and '-'", s.place, s.Name)
		}
		if prev, ok := seen[s.Name]; ok {
			return nil, fmt.Errorf("%s: %q is registered twice (also by %s)", s.place, s.Name, prev)
		}
		seen[s.Name] = s.place
	}
	return specs, nil
}

// readLocksFile reads a locks.json file; its errors name the file, the line and the field.
func readLocksFile(path string) ([]clientSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("flag --%s: %w", flagLocks, err)
	}
	var doc struct {
		Locks []clientSpec `json:"locks"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("%s:%d: bad JSON: %w", path, bytes.Count(data[:syn.Offset], []byte("\n"))+1, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Locks) == 0 {
		return nil, fmt.Errorf("%s: no locks: want {\"locks\": [{\"name\": ..., \"command\": [...]}]}", path)
	}
	for i := range doc.Locks {
		s := &doc.Locks[i]
		field := fmt.Sprintf("locks[%d]", i)
		s.place = fmt.Sprintf("%s:%d: %s", path, max(1, plan.FieldLine(data, field)), field)
		if s.Topology == "" {
			s.Topology = cluster.Single
		}
		if len(s.Command) == 0 || s.Command[0] == "" {
			return nil, fmt.Errorf("%s.command: want the client's argv, e.g. [\"python3\", \"my_lock.py\"]", s.place)
		}
	}
	return doc.Locks, nil
}

// shellWords splits s as a POSIX shell would for plain words, single and double quotes
// and backslash escapes (no expansions).
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}
