package subprocess

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/lockimpl"
)

// TestAccessEnv: a client's credentials travel in its environment only, inherited ones
// are dropped, and a Go client reads back what was written.
func TestAccessEnv(t *testing.T) {
	inherited := []string{"PATH=/bin", EnvPassword + "=leaked", EnvTLS + "=1"}
	plain, err := withAccess(inherited, lockimpl.Config{Addrs: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(plain, " ") != "PATH=/bin" {
		t.Errorf("no access: env %q, want only PATH", plain)
	}

	a := access.Access{Username: "alice", Password: "s3cret", DB: 2, TLS: &tls.Config{ServerName: "redis.example.com"}, CAFile: "/ca.pem"}
	b := a
	b.TLS = &tls.Config{ServerName: "other.example.com"}
	cfg := lockimpl.Config{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}, Access: map[string]access.Access{"127.0.0.1:1": a, "127.0.0.1:2": b}}
	env, err := withAccess(inherited, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{EnvUsername: "alice", EnvPassword: "s3cret", EnvDB: "2", EnvTLS: "1", EnvCA: "/ca.pem", EnvTLSServerName: "redis.example.com,other.example.com"}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s twice in %q", k, env)
		}
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	lookup := func(k string) (string, bool) { v, ok := got[k]; return v, ok }
	got[EnvCA] = "" // no file to load in this test: the system's roots
	back, err := AccessFromEnv(cfg.Addrs, lookup)
	if err != nil {
		t.Fatal(err)
	}
	for i, addr := range cfg.Addrs {
		r := back[addr]
		if r.Username != "alice" || r.Password != "s3cret" || r.DB != 2 || r.TLS == nil || r.TLS.ServerName != []string{"redis.example.com", "other.example.com"}[i] {
			t.Errorf("read back %s: %s", addr, r)
		}
	}

	b.Password = "pw-different"
	cfg.Access["127.0.0.1:2"] = b
	if _, err := withAccess(nil, cfg); err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "pw-different") {
		t.Errorf("servers with different passwords: %v, want an error without the passwords", err)
	}
}
