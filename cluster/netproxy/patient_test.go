package netproxy_test

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
)

// echo serves one line back on each connection to l.
func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			line, _ := bufio.NewReader(c).ReadString('\n')
			_, _ = io.WriteString(c, line)
		}()
	}
}

// A party that dials a patient link before its upstream listens, and writes at once, gets
// its answer once the upstream listens; to an upstream that never listens, the link
// closes the connection after the patience; through a plain link, at once.
func TestPatientLinkWaitsForItsUpstream(t *testing.T) {
	n := netproxy.NewNet()
	t.Cleanup(func() { n.Close() })
	upstream := clustertest.DeadAddr(t)
	link, err := n.PatientLink("lock-1->lock-0:quorum", upstream, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := n.PatientLink("lock-1->lock-0:quorum", upstream, 2*time.Second); err != nil || again != link {
		t.Fatalf("second PatientLink = %q, %v; want %q", again, err, link)
	}
	c, err := net.DialTimeout("tcp", link, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "hello\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the upstream is late
	l, err := net.Listen("tcp", upstream)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go echo(l)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "hello\n" {
		t.Fatalf("through a patient link to a late upstream: %q, %v", line, err)
	}

	for _, tc := range []struct {
		patience, least time.Duration
	}{{300 * time.Millisecond, 300 * time.Millisecond}, {0, 0}} {
		link, err := n.PatientLink("never-"+tc.patience.String(), clustertest.DeadAddr(t), tc.patience)
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.DialTimeout("tcp", link, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("patience %s, an upstream that never listens: read %v, want EOF", tc.patience, err)
		}
		if took := time.Since(start); took < tc.least {
			t.Errorf("patience %s: closed after %s", tc.patience, took)
		}
		c.Close()
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}
