package locks

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/internal/jsonfile"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// Client is a lock client of the subprocess protocol that a user registers without Go:
// from a command line (ParseImplCmd) or a locks.json file (ReadFile).
type Client struct {
	Name        string   `json:"name"`
	Command     []string `json:"command"`
	Topology    string   `json:"topology"` // single, nodes, etcd or zookeeper; "": the hello's, else single
	Description string   `json:"description"`
	// Place is where it was given (a flag, file:line: field), for errors.
	Place string `json:"-"`
}

// clientName is what a registered client may be called.
var clientName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// ParseImplCmd reads "NAME=COMMAND" (the command split as a shell would, without
// expansions), given at place.
func ParseImplCmd(value, place string) (Client, error) {
	name, command, ok := strings.Cut(value, "=")
	if !ok {
		return Client{}, fmt.Errorf("%s: want NAME=COMMAND", place)
	}
	argv, err := ShellWords(command)
	if err == nil && len(argv) == 0 {
		err = errors.New("no command after =")
	}
	if err != nil {
		return Client{}, fmt.Errorf("%s: %w", place, err)
	}
	return Client{Name: strings.TrimSpace(name), Command: argv, Place: place}, nil
}

// ReadFile reads a locks.json file ({"locks": [...]}); its errors name the file, the line
// and the field, or flag when the file cannot be read.
func ReadFile(path, flag string) ([]Client, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	var doc struct {
		Locks []Client `json:"locks"`
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
		c := &doc.Locks[i]
		field := fmt.Sprintf("locks[%d]", i)
		c.Place = fmt.Sprintf("%s:%d: %s", path, max(1, jsonfile.FieldLine(data, field)), field)
		if len(c.Command) == 0 || c.Command[0] == "" {
			return nil, fmt.Errorf("%s.command: want the client's argv, e.g. [\"python3\", \"my_lock.py\"]", c.Place)
		}
	}
	return doc.Locks, nil
}

// Register adds clients to reg. Each is started once, against a Redis server of its
// own, to read what its hello says (fencing, extend, options); a bad name, a name given
// twice or already taken, and a client that cannot say hello are errors naming its place.
func Register(ctx context.Context, reg *lockimpl.Registry, clients []Client) error {
	seen := map[string]string{}
	for _, c := range clients {
		if !clientName.MatchString(c.Name) {
			return fmt.Errorf("%s: name %q: want lower-case letters, digits, '.', '_' and '-'", c.Place, c.Name)
		}
		if prev, ok := seen[c.Name]; ok {
			return fmt.Errorf("%s: %q is registered twice (also by %s)", c.Place, c.Name, prev)
		}
		seen[c.Name] = c.Place
	}
	if len(clients) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pb, err := cluster.NewProcessBackend(cluster.ProcessOptions{})
	if err != nil {
		return fmt.Errorf("register lock clients: %w", err)
	}
	defer pb.Close()
	cl, err := cluster.Start(ctx, pb, cluster.Topology{Kind: cluster.Single, Nodes: 1}, cluster.Options{})
	if err != nil {
		return fmt.Errorf("register lock clients: start a server to greet them: %w", err)
	}
	defer cl.Close()
	for _, c := range clients {
		if _, err := reg.Get(c.Name); err == nil {
			return fmt.Errorf("%s: %q is already registered", c.Place, c.Name)
		}
		h, err := subprocess.Describe(ctx, c.Command, cmp.Or(c.Topology, cluster.Single), lockimpl.Config{Addrs: cl.LockAddrs(), Timeout: 2 * time.Second})
		if err != nil {
			return fmt.Errorf("%s: %w", c.Place, err)
		}
		// The topology is the registration's, else the hello's, else single.
		if c.Topology != "" && h.Topology != "" && c.Topology != h.Topology {
			return fmt.Errorf("%s: registered with topology %q, but its hello says %q", c.Place, c.Topology, h.Topology)
		}
		topology := cmp.Or(c.Topology, h.Topology, cluster.Single)
		desc := c.Description
		if desc == "" {
			desc = fmt.Sprintf("%s (command: %s)", h.Name, access.RedactCommand(c.Command))
		}
		impl, err := subprocess.SubprocessOn(topology, c.Name, desc, c.Command, h.Fencing)
		if err == nil {
			impl.NoExtend, impl.Options = !h.Extend, h.Options
			err = reg.Register(impl)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.Place, err)
		}
	}
	return nil
}

// ShellWords splits s as a POSIX shell would for plain words, single and double quotes
// and backslash escapes (no expansions).
func ShellWords(s string) ([]string, error) {
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
