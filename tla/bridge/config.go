package bridge

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Config is the CONSTANTS section of a TLC config: what the trace alone does not say
// (the fencing mode, whether clients check their validity, the TTL in ticks).
type Config struct {
	File      string
	Constants map[string]string // name → TLA+ value as written
	lines     map[string]int    // name → line, for errors
}

// cfgKeywords end a CONSTANTS section (TLC's config grammar).
var cfgKeywords = map[string]bool{
	"SPECIFICATION": true, "INIT": true, "NEXT": true, "VIEW": true, "SYMMETRY": true,
	"INVARIANT": true, "INVARIANTS": true, "PROPERTY": true, "PROPERTIES": true,
	"CONSTRAINT": true, "CONSTRAINTS": true, "ACTION_CONSTRAINT": true, "ACTION_CONSTRAINTS": true,
	"CHECK_DEADLOCK": true, "POSTCONDITION": true, "ALIAS": true,
}

// ReadConfig reads the constants of a TLC config file. Only `Name = value` assignments
// are kept; substitutions (`Name <- Op`) name operators, not values, and are skipped.
func ReadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read TLC config: %w", err)
	}
	defer f.Close()
	cfg := &Config{File: path, Constants: map[string]string{}, lines: map[string]int{}}
	inConstants := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), `\*`)
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		switch {
		case word == "CONSTANT" || word == "CONSTANTS":
			inConstants, line = true, strings.TrimSpace(rest)
			if line == "" {
				continue
			}
		case cfgKeywords[word]:
			inConstants = false
			continue
		}
		if !inConstants || strings.Contains(line, "<-") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, &ParseError{File: path, Line: n, Reason: fmt.Sprintf("want Name = value in CONSTANTS, got %q", line)}
		}
		name = strings.TrimSpace(name)
		cfg.Constants[name], cfg.lines[name] = strings.TrimSpace(value), n
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read TLC config %s: %w", path, err)
	}
	return cfg, nil
}

func (c *Config) get(name string) (string, error) {
	v, ok := c.Constants[name]
	if !ok {
		return "", fmt.Errorf("%s: constant %s is not set", c.File, name)
	}
	return v, nil
}

func (c *Config) bad(name, want string) error {
	return &ParseError{File: c.File, Line: c.lines[name], Reason: fmt.Sprintf("constant %s = %s: want %s", name, c.Constants[name], want)}
}

// Str is a string constant, unquoted.
func (c *Config) Str(name string) (string, error) {
	v, err := c.get(name)
	if err != nil {
		return "", err
	}
	s, err := strconv.Unquote(v)
	if err != nil {
		return "", c.bad(name, "a string")
	}
	return s, nil
}

// Bool is a TRUE/FALSE constant.
func (c *Config) Bool(name string) (bool, error) {
	v, err := c.get(name)
	if err != nil {
		return false, err
	}
	switch v {
	case "TRUE":
		return true, nil
	case "FALSE":
		return false, nil
	}
	return false, c.bad(name, "TRUE or FALSE")
}

// Int is a natural-number constant.
func (c *Config) Int(name string) (int, error) {
	v, err := c.get(name)
	if err != nil {
		return 0, err
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return 0, c.bad(name, "a number")
	}
	return i, nil
}

// Set is a set constant of plain elements, in the order written: {c1, c2} is [c1 c2].
// The order is what numbers the clients of a plan (c1 is client 0).
func (c *Config) Set(name string) ([]string, error) {
	v, err := c.get(name)
	if err != nil {
		return nil, err
	}
	inner, ok := strings.CutPrefix(v, "{")
	if inner, ok = strings.CutSuffix(inner, "}"); !ok {
		return nil, c.bad(name, "a set {a, b, ...}")
	}
	elems, err := splitTop(inner)
	if err != nil {
		return nil, c.bad(name, "a set {a, b, ...}")
	}
	return elems, nil
}

// Counterexample is a trace with the constants of the config it was found with.
type Counterexample struct {
	Trace  *Trace
	Config *Config
}

// Load reads a trace and the config its header names. The header gives the config's path
// relative to the repository root (tla/X.cfg); it is looked up in the trace's directory
// and its parents, so a trace in tla/testdata finds tla/X.cfg.
func Load(tracePath string) (*Counterexample, error) {
	tr, err := ReadTrace(tracePath)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(tracePath))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tracePath, err)
	}
	for {
		p := filepath.Join(dir, filepath.FromSlash(tr.ConfigPath))
		if _, err := os.Stat(p); err == nil {
			cfg, err := ReadConfig(p)
			if err != nil {
				return nil, err
			}
			return &Counterexample{Trace: tr, Config: cfg}, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil, fmt.Errorf("%s: config %s named in its header is not in %s or any parent directory",
				tracePath, tr.ConfigPath, filepath.Dir(tracePath))
		}
		dir = parent
	}
}
