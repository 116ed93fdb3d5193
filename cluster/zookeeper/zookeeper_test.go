package zookeeper_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/zookeeper"
)

func TestFindSaysWhatToInstall(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "zookeeper.jar")
	t.Setenv(zookeeper.EnvJar, missing)
	_, err := zookeeper.Find()
	if err == nil || !strings.Contains(err.Error(), "apt-get install zookeeper") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Find with a missing jar: %v; want an error naming it and the apt package", err)
	}
}

// members are the members of an ensemble of 3 with made-up ports: lock-0's 20001 to
// 20003 (client, quorum, election), lock-1's 20004 to 20006, …; the member of id i dials
// the member of id j through 400ij (quorum) and 500ij (election).
func members(t *testing.T) []zookeeper.Member {
	t.Helper()
	port := 20000
	next := func() (int, error) { port++; return port, nil }
	ms, err := zookeeper.NewMembers(3, next, next,
		func(from, to zookeeper.Member) (zookeeper.Peer, error) {
			pair := 10*from.ID + to.ID
			return zookeeper.Peer{Quorum: "127.0.0.1:" + strconv.Itoa(40000+pair), Election: "127.0.0.1:" + strconv.Itoa(50000+pair)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		ms[i].Dir = "/m" + strconv.Itoa(i)
	}
	return ms
}

// Each member's zoo.cfg binds its own peer ports on the wildcard address and names the
// others by its own links to them; lock-0 has the highest id.
func TestConfigNamesPeersByLinks(t *testing.T) {
	ms := members(t)
	if ms[0].Name != "lock-0" || ms[0].ID != 3 || ms[2].ID != 1 {
		t.Fatalf("members %+v: want lock-0 with id 3 … lock-2 with id 1", ms)
	}
	cfg, err := ms[1].Config(ms) // lock-1, id 2
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"tickTime=100\n", "initLimit=10\n", "syncLimit=5\n", "minSessionTimeout=200\n", "maxSessionTimeout=60000\n",
		"dataDir=/m1/data\n", "clientPort=20004\n", "clientPortAddress=127.0.0.1\n", "maxClientCnxns=0\n",
		"admin.enableServer=false\n", "standaloneEnabled=false\n", "reconfigEnabled=false\n",
		"server.3=127.0.0.1:40023:50023\n", // lock-0, through lock-1's links to it
		"server.2=0.0.0.0:20005:20006\n",   // lock-1 itself
		"server.1=127.0.0.1:40021:50021\n", // lock-2
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("zoo.cfg of lock-1 lacks %q:\n%s", want, cfg)
		}
	}
	ms[1].Peers["lock-0"] = zookeeper.Peer{Quorum: "127.0.0.1:1", Election: "127.0.0.2:2"}
	if _, err := ms[1].Config(ms); err == nil {
		t.Error("a peer's quorum and election addresses on two hosts made a zoo.cfg")
	}
}

// freePort is a loopback port nobody listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A member run by its command line leads a quorum of one, and is Ready by its own word:
// a member of another directory on its port is not.
func TestMemberServesByItsOwnWord(t *testing.T) {
	rt, err := zookeeper.Find()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := zookeeper.NewMembers(1, func() (int, error) { return freePort(t), nil }, zookeeper.PeerPort, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	m.Dir = t.TempDir()
	if err := m.WriteConfig(ms); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(m.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(rt.Java, rt.Args(m)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for err = m.Ready(ctx, 0); err != nil; err = m.Ready(ctx, 0) {
		if ctx.Err() != nil {
			log.Sync()
			data, _ := os.ReadFile(m.LogFile())
			t.Fatalf("not ready: %v\n%s", err, data)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if mode, err := zookeeper.Mode(ctx, m.ClientAddr()); err != nil || mode != zookeeper.Leader {
		t.Fatalf("a quorum of one says it is %q, %v; want %s", mode, err, zookeeper.Leader)
	}
	other := m
	other.Name, other.Dir = "lock-9", t.TempDir()
	if err := other.Ready(ctx, 0); err == nil || !strings.Contains(err.Error(), "not lock-9") {
		t.Fatalf("Ready of another member on lock-0's port: %v", err)
	}
	// A port nobody listens on: refused, as the process backend's probe expects.
	if err := zookeeper.Serving(ctx, "127.0.0.1:"+strconv.Itoa(freePort(t))); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("srvr of a closed port: %v, want connection refused", err)
	}
}

// Peer ports lie below the kernel's ephemeral ports, and are free.
func TestPeerPortIsBelowTheEphemeralRange(t *testing.T) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	low, err := strconv.Atoi(strings.Fields(string(data))[0])
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		p, err := zookeeper.PeerPort()
		if err != nil {
			t.Fatal(err)
		}
		if p < 10000 || p >= low {
			t.Fatalf("peer port %d, want one in [10000, %d)", p, low)
		}
		l, err := net.Listen("tcp", "0.0.0.0:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("peer port %d: %v", p, err)
		}
		l.Close()
	}
}
