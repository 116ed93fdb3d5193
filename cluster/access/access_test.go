package access_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster/access"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func TestParseServerURL(t *testing.T) {
	const pw = "p@ss:w/rd%"
	escaped := "p%40ss%3Aw%2Frd%25"
	cases := []struct {
		raw              string
		env              map[string]string
		addr, user, pass string
		db               int
		tls              string // ServerName, "" without TLS
		url              string
	}{
		{raw: "127.0.0.1:6379", addr: "127.0.0.1:6379", url: "127.0.0.1:6379"},
		{raw: "redis://alice:" + escaped + "@h:1/2", addr: "h:1", user: "alice", pass: pw, db: 2, url: "redis://alice:xxxxx@h:1/2"},
		{raw: "redis://:secret@h:1", addr: "h:1", pass: "secret", url: "redis://:xxxxx@h:1"},
		{raw: "rediss://bob:secret@redis.example.com:6380", addr: "redis.example.com:6380", user: "bob", pass: "secret", tls: "redis.example.com", url: "rediss://bob:xxxxx@redis.example.com:6380"},
		{raw: "redis://h:1", env: map[string]string{access.EnvUsername: "carol", access.EnvPassword: "fromenv"}, addr: "h:1", user: "carol", pass: "fromenv", url: "redis://carol:xxxxx@h:1"},
		{raw: "redis://dave@h:1", env: map[string]string{access.EnvUsername: "carol", access.EnvPassword: "fromenv"}, addr: "h:1", user: "dave", pass: "fromenv", url: "redis://dave:xxxxx@h:1"},
		{raw: "h:1", env: map[string]string{access.EnvPassword: "fromenv"}, addr: "h:1", pass: "fromenv", url: "redis://:xxxxx@h:1"},
		{raw: "redis://alice:xxxxx@h:1", env: map[string]string{access.EnvPassword: "fromenv"}, addr: "h:1", user: "alice", pass: "fromenv", url: "redis://alice:xxxxx@h:1"},
		{raw: "redis://alice:inurl@h:1", env: map[string]string{access.EnvPassword: "fromenv"}, addr: "h:1", user: "alice", pass: "inurl", url: "redis://alice:xxxxx@h:1"},
	}
	for _, c := range cases {
		s, err := access.ParseServerURL(c.raw, env(c.env), access.TLSRoots{})
		if err != nil {
			t.Errorf("ParseServerURL(%q): %v", access.RedactURL(c.raw), err)
			continue
		}
		a := s.Access
		gotTLS := ""
		if a.TLS != nil {
			gotTLS = a.TLS.ServerName
		}
		if s.Addr != c.addr || a.Username != c.user || a.Password != c.pass || a.DB != c.db || gotTLS != c.tls || s.URL != c.url {
			t.Errorf("ParseServerURL(%q) = %s %s %s db %d tls %q, want %s %s (password %v) db %d tls %q",
				access.RedactURL(c.raw), s.Addr, s.URL, a.Username, a.DB, gotTLS, c.addr, c.url, a.Password == c.pass, c.db, c.tls)
		}
		for _, shown := range []string{s.URL, a.String(), fmt.Sprintf("%v %+v %#v", a, a, a)} {
			if strings.Contains(shown, c.pass) && c.pass != "" {
				t.Errorf("%q shows the password", shown)
			}
		}
	}
}

func TestParseServerURLErrorsHideThePassword(t *testing.T) {
	const pw = "hunter2secret"
	for _, raw := range []string{
		"redis://alice:" + pw + "@h:notaport",
		"redis://alice:" + pw + "@h:1/notadb",
		"redis://alice:" + pw + "@h:1?dial_timeout=1s",
		"http://alice:" + pw + "@h:1",
		"alice:" + pw + "@h:1",
		"redis://alice:" + pw + "/x@h:1",
		"unix://alice:" + pw + "@/tmp/redis.sock",
		"redis://alice:xxxxx@h:1", // redacted, and no password in the environment
	} {
		_, err := access.ParseServerURL(raw, env(nil), access.TLSRoots{})
		if err == nil {
			t.Errorf("ParseServerURL(%q): no error", access.RedactURL(raw))
			continue
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("error shows the password: %v", err)
		}
		if !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("error does not name the server as redacted: %v", err)
		}
	}
}

func TestScrub(t *testing.T) {
	a := access.Access{Password: "a b/c"}
	got := access.Scrub("x a b/c y a+b%2Fc z a%20b%2Fc", a)
	if strings.Contains(got, "a b/c") || strings.Contains(got, "a+b%2Fc") || strings.Contains(got, "a%20b%2Fc") {
		t.Errorf("Scrub left a form of the password: %q", got)
	}
}
