// Package access is how to reach a Redis server that needs more than a plain
// connection (user, password, database, TLS): it parses redis:// and rediss:// URLs,
// with secrets from the environment, and keeps those secrets out of everything written
// or shown.
package access

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The environment a password (and its user) may come from instead of a server's URL, so
// that it appears on no command line and in no plan. They apply to every external server
// whose URL carries no password (or the redacted one plans record), and a subprocess
// client gets its servers' credentials under the same names (docs/subprocess-protocol.md).
const (
	EnvUsername = "LOCKLAB_REDIS_USERNAME"
	EnvPassword = "LOCKLAB_REDIS_PASSWORD"
)

// Redacted stands for a password wherever a URL is shown or stored: plans, reports,
// messages. A URL whose password is Redacted takes it from EnvPassword.
const Redacted = "xxxxx"

// Access is what a client needs, besides an address, to use a server: the ACL user (""
// is the default user), its password, the database, and TLS. The zero Access is what the
// servers locklab starts want: plain TCP, database 0, no AUTH. Its String never shows
// the password.
type Access struct {
	Username string
	Password string
	DB       int
	// TLS is nil for plain TCP. Its ServerName is the host the user named: clients dial
	// their own links (proxies on 127.0.0.1), and the certificate is checked against the
	// server's name, not the link's.
	TLS *tls.Config
	// CAFile is the CA bundle TLS trusts ("" for the system's), for clients in other
	// processes, which load it themselves.
	CAFile string
}

// IsZero reports whether a asks for nothing beyond a plain connection.
func (a Access) IsZero() bool {
	return a.Username == "" && a.Password == "" && a.DB == 0 && a.TLS == nil
}

// Apply sets o's user, password, database and TLS to a's and returns o. TLS is cloned:
// every client gets its own.
func (a Access) Apply(o *redis.Options) *redis.Options {
	o.Username, o.Password, o.DB = a.Username, a.Password, a.DB
	if a.TLS != nil {
		o.TLSConfig = a.TLS.Clone()
	}
	return o
}

// String describes a for people, with the password redacted.
func (a Access) String() string {
	var parts []string
	if a.Username != "" {
		parts = append(parts, "user "+a.Username)
	}
	if a.Password != "" {
		parts = append(parts, "password "+Redacted)
	}
	if a.DB != 0 {
		parts = append(parts, "db "+strconv.Itoa(a.DB))
	}
	if a.TLS != nil {
		tlsDesc := "tls " + a.TLS.ServerName
		if a.CAFile != "" {
			tlsDesc += " (CA " + a.CAFile + ")"
		}
		parts = append(parts, tlsDesc)
	}
	if len(parts) == 0 {
		return "plain"
	}
	return strings.Join(parts, ", ")
}

// GoString is String: %#v must not show the password either.
func (a Access) GoString() string { return "access.Access{" + a.String() + "}" }

// ServerURL is one server as the user named it.
type ServerURL struct {
	Addr   string // host:port, as dialled
	Access Access
	// URL is how it is shown and recorded: the URL with the password Redacted (the bare
	// host:port when that is what was given and no password applies).
	URL string
}

// TLSRoots is the CA bundle rediss:// servers are checked against.
type TLSRoots struct {
	Pool *x509.CertPool // nil: the system's
	File string         // where Pool came from, for clients in other processes
}

// LoadCA reads a PEM CA bundle for TLSRoots; File is its absolute path.
func LoadCA(path string) (TLSRoots, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return TLSRoots{}, fmt.Errorf("CA bundle %s: %w", path, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return TLSRoots{}, fmt.Errorf("CA bundle %s: no PEM certificate in it", path)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // clients in other processes may run elsewhere
	}
	return TLSRoots{Pool: pool, File: path}, nil
}

// ParseServerURL reads redis://[user[:password]@]host[:port][/db], rediss://... (TLS,
// checked against roots) or a bare host:port, with go-redis's ParseURL. A password that
// the URL leaves out, or gives as Redacted, comes from EnvPassword through lookupEnv (and
// a user the URL leaves out from EnvUsername); a Redacted one without EnvPassword is an
// error. Query parameters are refused: locklab sets its clients' timeouts and retries
// itself. No error shows the password.
func ParseServerURL(raw string, lookupEnv func(string) (string, bool), roots TLSRoots) (ServerURL, error) {
	raw = strings.TrimSpace(raw)
	shown := RedactURL(raw)
	s, err := parseServerURL(raw, lookupEnv, roots)
	if err != nil {
		msg := err.Error()
		if secrets := urlSecrets(raw); len(secrets) > 0 {
			// A URL that does not parse may cut its password anywhere (a "/" in it ends
			// the host): what the parser quotes may be a piece of it.
			msg = unquote(ScrubberOf(secrets...).String(msg))
		}
		return ServerURL{}, fmt.Errorf("server %q: %s", shown, msg)
	}
	return s, nil
}

// unquote replaces what msg quotes ("...", with Go's escapes) by "…".
func unquote(msg string) string {
	var b strings.Builder
	in, escaped := false, false
	for _, r := range msg {
		switch {
		case !in && r == '"':
			in = true
			b.WriteString(`"…"`)
		case in && escaped:
			escaped = false
		case in && r == '\\':
			escaped = true
		case in && r == '"':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func parseServerURL(raw string, lookupEnv func(string) (string, bool), roots TLSRoots) (ServerURL, error) {
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	if raw == "" {
		return ServerURL{}, errors.New("empty address")
	}
	if !strings.Contains(raw, "://") {
		if strings.Contains(raw, "@") {
			return ServerURL{}, errors.New("credentials need a URL: redis://user:password@host:port")
		}
		if _, _, err := net.SplitHostPort(raw); err != nil {
			return ServerURL{}, fmt.Errorf("want host:port, redis://[user:password@]host:port[/db] or rediss://...: %w", err)
		}
		s := ServerURL{Addr: raw, URL: raw}
		fromEnv(&s.Access, "", false, lookupEnv)
		if s.Access.Password != "" || s.Access.Username != "" {
			s.URL = redactedURL("redis", s.Access, raw)
		}
		return s, nil
	}
	scheme, _, _ := strings.Cut(raw, "://")
	if scheme != "redis" && scheme != "rediss" {
		return ServerURL{}, fmt.Errorf("scheme %q: want redis:// or rediss:// (or a bare host:port)", scheme)
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the whole URL, password and all
		}
		return ServerURL{}, err
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return ServerURL{}, errors.New("query parameters and fragments are not supported: locklab sets its clients' timeouts and retries itself")
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return ServerURL{}, err
	}
	a := Access{Username: opts.Username, Password: opts.Password, DB: opts.DB}
	_, hasPassword := u.User.Password() // nil-safe
	if hasPassword && a.Password == Redacted {
		if pw, ok := lookupEnv(EnvPassword); ok && pw != "" {
			a.Password = pw
		} else {
			return ServerURL{}, fmt.Errorf("its password is not recorded (plans show it as %s): set %s", Redacted, EnvPassword)
		}
	} else if !hasPassword {
		fromEnv(&a, a.Username, a.Username != "", lookupEnv)
	}
	if opts.TLSConfig != nil {
		a.TLS = opts.TLSConfig
		a.TLS.RootCAs = roots.Pool
		a.CAFile = roots.File
	}
	return ServerURL{Addr: opts.Addr, Access: a, URL: redactedURL(scheme, a, opts.Addr)}, nil
}

// fromEnv fills in a password, and a user unless the URL named one, from the environment.
func fromEnv(a *Access, user string, userGiven bool, lookupEnv func(string) (string, bool)) {
	pw, ok := lookupEnv(EnvPassword)
	if !ok || pw == "" {
		return
	}
	a.Password = pw
	if !userGiven {
		if u, ok := lookupEnv(EnvUsername); ok {
			user = u
		}
	}
	a.Username = user
}

// redactedURL is the URL of a server at addr with access a, its password Redacted.
func redactedURL(scheme string, a Access, addr string) string {
	u := url.URL{Scheme: scheme, Host: addr}
	switch {
	case a.Password != "":
		u.User = url.UserPassword(a.Username, Redacted)
	case a.Username != "":
		u.User = url.User(a.Username)
	}
	if a.DB != 0 {
		u.Path = "/" + strconv.Itoa(a.DB)
	}
	return u.String()
}

// RedactURL is raw with the password of its userinfo, if any, replaced by Redacted. It
// works on text that does not parse, for error messages: everything between the first
// colon of the userinfo and the last "@" goes. A user name that no URL could hold (an
// "@", a space, a quote: more likely a password typed without its colon or
// percent-encoding) goes too, the whole userinfo Redacted.
func RedactURL(raw string) string {
	prefix, userinfo, rest, ok := cutUserinfo(raw)
	if !ok {
		return raw
	}
	user, _, hasPassword := strings.Cut(userinfo, ":")
	switch {
	case !plausibleUser(user):
		return prefix + Redacted + rest
	case hasPassword:
		return prefix + user + ":" + Redacted + rest
	}
	return raw
}

// RedactCommand is argv joined by spaces, for messages, with RedactURL applied to each
// word: a lock client's command line may carry a server's URL.
func RedactCommand(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = RedactURL(w)
	}
	return strings.Join(words, " ")
}

// cutUserinfo splits raw around its userinfo: what comes before it (the scheme and
// "://", if any), the userinfo, and the rest from the last "@" on.
func cutUserinfo(raw string) (prefix, userinfo, rest string, ok bool) {
	prefix, after := "", raw
	if scheme, a, found := strings.Cut(raw, "://"); found {
		prefix, after = scheme+"://", a
	}
	at := strings.LastIndex(after, "@")
	if at < 0 {
		return "", "", "", false
	}
	return prefix, after[:at], after[at:], true
}

// plausibleUser reports whether user is made of what a URL's user name may hold
// (RFC 3986: unreserved, sub-delims and percent-escapes).
func plausibleUser(user string) bool {
	for i := 0; i < len(user); i++ {
		c := user[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=", c) >= 0:
		case c == '%' && i+2 < len(user) && isHex(user[i+1]) && isHex(user[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// urlSecrets are what RedactURL hides of raw (the password text of its userinfo, or the
// whole userinfo), as given and unescaped, for scrubbing messages.
func urlSecrets(raw string) []string {
	_, userinfo, _, ok := cutUserinfo(raw)
	if !ok {
		return nil
	}
	user, pw, hasPassword := strings.Cut(userinfo, ":")
	secret := pw
	if !plausibleUser(user) {
		secret = userinfo
	} else if !hasPassword {
		return nil
	}
	if secret == "" {
		return nil
	}
	out := []string{secret}
	if un, err := url.PathUnescape(secret); err == nil && un != secret {
		out = append(out, un)
	}
	return out
}

// Scrub replaces every password of accesses, in any form Scrubber knows, in s by
// Redacted: a last guard on messages that may quote a server's answer or a library's.
func Scrub(s string, accesses ...Access) string {
	return NewScrubber(nil, accesses...).String(s)
}

// Explain says what err, a failed probe of a server reached with a, means, without the
// password: a refused AUTH names where the credentials come from.
func (a Access) Explain(err error) string {
	msg := Scrub(err.Error(), a)
	switch {
	case strings.Contains(msg, "WRONGPASS"), strings.Contains(msg, "invalid password"),
		strings.Contains(msg, "invalid username-password"):
		return "refused the credentials: " + msg + " (check the user and password, given in the URL or in $" + EnvUsername + " and $" + EnvPassword + ")"
	case strings.Contains(msg, "NOAUTH"):
		return "wants a password: " + msg + " (give it in the URL, redis://user:password@host:port, or in $" + EnvPassword + ")"
	case strings.Contains(msg, "AUTH") && strings.Contains(msg, "without any password configured"):
		return "has no password, but one was given (in the URL or $" + EnvPassword + "): " + msg
	}
	return "does not answer: " + msg
}
