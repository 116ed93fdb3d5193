package subprocess

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/lockimpl"
)

// The environment that tells a client how to use servers that need more than a plain
// connection (external ones: docs/subprocess-protocol.md). Secrets travel only here:
// never on the command line, never in a protocol line.
const (
	EnvUsername      = access.EnvUsername             // the ACL user; unset: the default user
	EnvPassword      = access.EnvPassword             // the password; unset: no AUTH
	EnvDB            = "LOCKLAB_REDIS_DB"             // the database number; unset: 0
	EnvTLS           = "LOCKLAB_REDIS_TLS"            // "1": connect over TLS
	EnvCA            = "LOCKLAB_REDIS_CA"             // TLS: the CA bundle (PEM) to trust; unset: the system's
	EnvTLSServerName = "LOCKLAB_REDIS_TLS_SERVERNAME" // TLS: the name to check each server's certificate against, one per address of LOCKLAB_ADDRS
)

// withAccess is env without any access variable it inherited (a password meant for
// locklab's external servers must not reach a client of servers that have none), plus
// the ones cfg's servers need. Every address of cfg.Addrs must want the same user,
// password, database and TLS setting: a client gets one set.
func withAccess(env []string, cfg lockimpl.Config) ([]string, error) {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !isAccessEnv(name) {
			out = append(out, kv)
		}
	}
	if len(cfg.Addrs) == 0 || len(cfg.Access) == 0 {
		return out, nil
	}
	first := cfg.Access[cfg.Addrs[0]]
	names := make([]string, len(cfg.Addrs))
	for i, addr := range cfg.Addrs {
		a := cfg.Access[addr]
		if a.Username != first.Username || a.Password != first.Password || a.DB != first.DB ||
			(a.TLS == nil) != (first.TLS == nil) || a.CAFile != first.CAFile {
			return nil, fmt.Errorf("lock servers %s (%s) and %s (%s) want different credentials, databases or TLS; a subprocess client takes one set for all",
				cfg.Addrs[0], first, addr, a)
		}
		if a.TLS != nil {
			names[i] = a.TLS.ServerName
		}
	}
	if first.Username != "" {
		out = append(out, EnvUsername+"="+first.Username)
	}
	if first.Password != "" {
		out = append(out, EnvPassword+"="+first.Password)
	}
	if first.DB != 0 {
		out = append(out, EnvDB+"="+strconv.Itoa(first.DB))
	}
	if first.TLS != nil {
		for _, n := range names {
			if n == "" || strings.Contains(n, ",") {
				return nil, errors.New("TLS without a server name to check the certificates against")
			}
		}
		out = append(out, EnvTLS+"=1", EnvTLSServerName+"="+strings.Join(names, ","))
		if first.CAFile != "" {
			out = append(out, EnvCA+"="+first.CAFile)
		}
	}
	return out, nil
}

// isAccessEnv reports whether name is one of the variables withAccess owns.
func isAccessEnv(name string) bool {
	switch name {
	case EnvUsername, EnvPassword, EnvDB, EnvTLS, EnvCA, EnvTLSServerName:
		return true
	}
	return false
}

// AccessFromEnv reads what withAccess wrote, for a client written in Go (such as
// locklab-lockserve): the Access of each of addrs (LOCKLAB_ADDRS), nil when none is
// needed. lookupEnv is os.LookupEnv.
func AccessFromEnv(addrs []string, lookupEnv func(string) (string, bool)) (map[string]access.Access, error) {
	get := func(name string) string {
		v, _ := lookupEnv(name)
		return v
	}
	var a access.Access
	a.Username, a.Password = get(EnvUsername), get(EnvPassword)
	if db := get(EnvDB); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s=%q: want a database number", EnvDB, db)
		}
		a.DB = n
	}
	var names []string
	switch get(EnvTLS) {
	case "", "0":
	case "1":
		names = strings.Split(get(EnvTLSServerName), ",")
		if len(names) != len(addrs) {
			return nil, fmt.Errorf("%s names %d servers for the %d of %s", EnvTLSServerName, len(names), len(addrs), EnvAddrs)
		}
		var roots access.TLSRoots
		if ca := get(EnvCA); ca != "" {
			var err error
			if roots, err = access.LoadCA(ca); err != nil {
				return nil, fmt.Errorf("%s: %w", EnvCA, err)
			}
		}
		a.CAFile = roots.File
		a.TLS = &tls.Config{RootCAs: roots.Pool, MinVersion: tls.VersionTLS12}
	default:
		return nil, fmt.Errorf("%s=%q: want 1 or unset", EnvTLS, get(EnvTLS))
	}
	if a.IsZero() {
		return nil, nil
	}
	m := make(map[string]access.Access, len(addrs))
	for i, addr := range addrs {
		ai := a
		if a.TLS != nil {
			ai.TLS = a.TLS.Clone()
			ai.TLS.ServerName = names[i]
		}
		m[addr] = ai
	}
	return m, nil
}
