package clustertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
)

// SecuredServer is a standalone server that wants a password, as a user's own Redis
// would: its default user's password and an ACL user with the same password.
type SecuredServer struct {
	Node     cluster.Node
	Addr     string // plain TCP, 127.0.0.1:port
	User     string // the ACL user
	Password string // the default user's and User's password
	// With TLS: the TLS port's address, as localhost:port (the certificate names
	// localhost and 127.0.0.1), and the PEM file of the CA that signed it.
	TLSAddr string
	CAFile  string
}

// Secured starts a server whose default user has password, with an ACL user user (all
// keys, all commands) of the same password. withTLS also makes it listen for TLS (no
// client certificates) with a certificate signed by a CA made for the test.
func Secured(t testing.TB, user, password string, withTLS bool) SecuredServer {
	t.Helper()
	var args []string
	s := SecuredServer{User: user, Password: password}
	if withTLS {
		dir := t.TempDir()
		s.CAFile = filepath.Join(dir, "ca.pem")
		cert, key := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
		if err := writeTestPKI(s.CAFile, cert, key); err != nil {
			t.Fatalf("clustertest: make TLS certificates: %v", err)
		}
		port, err := freeTestPort()
		if err != nil {
			t.Fatalf("clustertest: %v", err)
		}
		s.TLSAddr = net.JoinHostPort("localhost", strconv.Itoa(port))
		args = []string{"--tls-port", strconv.Itoa(port), "--tls-cert-file", cert, "--tls-key-file", key,
			"--tls-ca-cert-file", s.CAFile, "--tls-auth-clients", "no"}
	}
	// The password is set once the server runs, so that the backend's readiness probe
	// (which has none) sees it start.
	s.Node = Node(t, cluster.NodeConfig{Name: "secured", ExtraArgs: args})
	s.Addr = s.Node.Addr()
	c := Client(t, s.Addr)
	ctx := Context(t)
	if err := c.Do(ctx, "ACL", "SETUSER", user, "on", ">"+password, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatalf("clustertest: ACL SETUSER %s: %v", user, err)
	}
	if err := c.ConfigSet(ctx, "requirepass", password).Err(); err != nil {
		t.Fatalf("clustertest: CONFIG SET requirepass: %v", err)
	}
	return s
}

// freeTestPort is a loopback port nothing listens on right now.
func freeTestPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeTestPKI writes a CA certificate and a server certificate and key for localhost
// and 127.0.0.1 signed by it, all PEM.
func writeTestPKI(caFile, certFile, keyFile string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "locklab test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path, kind string
		der        []byte
	}{{caFile, "CERTIFICATE", caDER}, {certFile, "CERTIFICATE", der}, {keyFile, "EC PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// AwkwardPassword is a password no file or message can hold by chance, with the
// characters that URLs, comma-separated lists and JSON treat specially (, " @ % :)
// between random pieces of letters and digits.
func AwkwardPassword(t testing.TB) string {
	t.Helper()
	piece := func() string {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatalf("clustertest: %v", err)
		}
		return hex.EncodeToString(b[:])
	}
	return "Pw" + piece() + `,q"u@o%t:e` + piece() + "%41"
}

// Leak is what text shows of password: the whole of it, or a recognisable piece (a run
// of six or more letters and digits, such as a random part of AwkwardPassword); "" when
// text shows nothing of it.
func Leak(password, text string) string {
	if strings.Contains(text, password) {
		return password
	}
	pieces := strings.FieldsFunc(password, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	for _, p := range pieces {
		if len(p) >= 6 && strings.Contains(text, p) {
			return p
		}
	}
	return ""
}
