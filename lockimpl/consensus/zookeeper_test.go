package consensus_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/consensus"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// zkJar is Debian's ZooKeeper server (package zookeeper); its manifest names its
// dependencies.
const zkJar = "/usr/share/java/zookeeper.jar"

// zkTick is the test servers' tickTime: sessions may last from 2 to 20 ticks.
const zkTick = 100 * time.Millisecond

// zkSteady is the session timeout of clients whose session is not what a test is about:
// the server's longest (20 ticks). A shorter session may not survive a loaded machine: a
// server that stalls for two thirds of it makes the client drop the connection, and the
// library waits a second before it dials its one server again.
const zkSteady = 20 * zkTick

// zkServer starts a standalone ZooKeeper server on a free loopback port and returns its
// client address. It is killed at cleanup, and cleanup waits until the JVM is reaped.
func zkServer(t *testing.T) string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err == nil {
		_, err = os.Stat(zkJar)
	}
	if err != nil {
		t.Fatalf("a ZooKeeper server needs java and %s (apt-get install zookeeper): %v", zkJar, err)
	}
	var last error
	for range 3 { // another process may take the free port first
		addr, err := zkStart(t, java)
		if err == nil {
			return addr
		}
		last = err
	}
	t.Fatal(last)
	return ""
}

// zkStart is one try of zkServer.
func zkStart(t *testing.T, java string) (string, error) {
	t.Helper()
	port, err := cluster.FreePort()
	if err != nil {
		return "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dir := t.TempDir()
	cfg := fmt.Sprintf("tickTime=%d\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n",
		zkTick.Milliseconds(), filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return "", err
	}
	logPath := filepath.Join(dir, "zk.log")
	classpath := zkJar
	if _, err := os.Stat("/usr/share/java/slf4j-simple.jar"); err == nil {
		classpath += ":/usr/share/java/slf4j-simple.jar" // its log, for failures
	}
	out, err := os.Create(filepath.Join(dir, "zk.out"))
	if err != nil {
		return "", err
	}
	defer out.Close()
	cmd := exec.Command(java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx128m",
		"-Dorg.slf4j.simpleLogger.logFile="+logPath, "-cp", classpath,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(dir, "zoo.cfg"))
	cmd.Stdout, cmd.Stderr = out, out
	// The JVM dies with the test binary (Pdeathsig), which Linux sends when the forking
	// thread ends: the goroutine that starts it keeps its thread until the reap.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return "", fmt.Errorf("start ZooKeeper: %w", err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(stop)
	tail := func() string {
		var b strings.Builder
		for _, p := range []string{logPath, filepath.Join(dir, "zk.out")} {
			data, _ := os.ReadFile(p)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			fmt.Fprintf(&b, "\n--- %s ---\n%s", p, strings.Join(lines[max(0, len(lines)-15):], "\n"))
		}
		return b.String()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if zkMode(addr) != "" {
			return addr, nil
		}
		select {
		case err := <-exited:
			stopped = true
			return "", fmt.Errorf("ZooKeeper on %s exited: %v%s", addr, err, tail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("ZooKeeper on %s did not answer srvr within 30 s%s", addr, tail())
		}
	}
}

// zkMode is the Mode line of the server's srvr answer, "" when it does not answer.
func zkMode(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return ""
	}
	data, _ := io.ReadAll(c)
	for line := range strings.Lines(string(data)) {
		if mode, ok := strings.CutPrefix(strings.TrimSpace(line), "Mode: "); ok {
			return mode
		}
	}
	return ""
}

type zkTestQuiet struct{}

func (zkTestQuiet) Printf(string, ...any) {}

// zkInspect is a plain client of the server, to look at the znodes.
func zkInspect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 2*time.Second, zk.WithLogger(zkTestQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// zkQueue is the lock znodes of key, in name order.
func zkQueue(t *testing.T, c *zk.Conn, key string) []string {
	t.Helper()
	children, _, err := c.Children("/locklab/" + key)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(children)
	return children
}

func zkLocker(t *testing.T, addr string, step lockimpl.StepFunc, timeout time.Duration) lockimpl.Locker {
	t.Helper()
	return locktest.New(t, consensus.ZooKeeper(), lockimpl.Config{Addrs: []string{addr}, Step: step, Timeout: timeout})
}

// The lock excludes: a second client waits in the queue for its timeout and is refused,
// its znode deleted; the session's pings keep the lock past its ttl; Extend is not
// supported; a release lets a waiting client in; fences are the znodes' creation zxids
// and grow with every grant.
func TestZooKeeperAcquireRelease(t *testing.T) {
	t.Parallel()
	addr := zkServer(t)
	insp := zkInspect(t, addr)
	a, b := zkLocker(t, addr, nil, time.Second), zkLocker(t, addr, nil, time.Second)
	ctx := clustertest.Context(t)
	const ttl = zkSteady
	lease, err := a.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(lease.Token, "/locklab/k/_c_") || lease.Fence <= 0 || lease.Granted != ttl ||
		lease.Validity <= 0 || lease.Validity > ttl || lease.Remaining(time.Now()) > ttl {
		t.Fatalf("lease %+v: want a znode under /locklab/k, a fence, %s granted and a validity in (0, %[2]s]", lease, ttl)
	}
	queue := zkQueue(t, insp, "k")
	if len(queue) != 1 || "/locklab/k/"+queue[0] != lease.Token {
		t.Fatalf("queue %v; want the lease's znode alone", queue)
	}
	_, stat, err := insp.Get(lease.Token)
	if err != nil || stat.Czxid != lease.Fence || stat.EphemeralOwner == 0 {
		t.Fatalf("znode %s: %+v, %v; want an ephemeral znode created at zxid %d", lease.Token, stat, err, lease.Fence)
	}

	start := time.Now()
	_, err = b.Acquire(ctx, "k", ttl)
	locktest.WantRefused(t, "second Acquire", err, lockimpl.ErrNotAcquired)
	// Bounds with room for a loaded machine: at least its timeout, and far from hanging.
	if took := time.Since(start); took < time.Second || took > 8*time.Second {
		t.Errorf("the refused acquire took %s; want it to wait its timeout, 1 s", took)
	}
	if queue := zkQueue(t, insp, "k"); len(queue) != 1 {
		t.Fatalf("the refused acquire left its znode: %v", queue)
	}
	if _, err := a.Extend(ctx, lease, ttl); !errors.Is(err, lockimpl.ErrUnsupported) {
		t.Fatalf("Extend: %v; want ErrUnsupported", err)
	}

	// Held past its session timeout (2 s, 1 s of it waited above): the pings keep the
	// session, and the lock.
	time.Sleep(ttl - time.Since(start) + 300*time.Millisecond)
	cur, ok := a.(lockimpl.Renewer).Current(lease)
	if left := cur.Remaining(time.Now()); !ok || left <= 0 || left > ttl {
		t.Fatalf("Current past the session timeout: %+v %v; want the lease renewed, at most %s left", cur, ok, ttl)
	}
	if queue := zkQueue(t, insp, "k"); len(queue) != 1 || "/locklab/k/"+queue[0] != lease.Token {
		t.Fatalf("queue %v past the session timeout; want the lease's znode", queue)
	}

	// A client waiting in the queue gets the lock when the holder releases it.
	c := zkLocker(t, addr, nil, 5*time.Second)
	type result struct {
		lease lockimpl.Lease
		err   error
	}
	waited := make(chan result, 1)
	go func() {
		l, err := c.Acquire(ctx, "k", ttl)
		waited <- result{l, err}
	}()
	locktest.Eventually(t, "the waiter queues", func() bool { return len(zkQueue(t, insp, "k")) == 2 })
	if err := a.Release(ctx, lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	r := <-waited
	if r.err != nil {
		t.Fatalf("the waiter: %v", r.err)
	}
	if r.lease.Fence <= lease.Fence {
		t.Fatalf("fence %d after %d: fences must grow", r.lease.Fence, lease.Fence)
	}
	if queue := zkQueue(t, insp, "k"); len(queue) != 1 || "/locklab/k/"+queue[0] != r.lease.Token {
		t.Fatalf("queue %v; want the waiter's znode alone", queue)
	}
	err = a.Release(ctx, lease)
	locktest.WantRefused(t, "second Release", err, lockimpl.ErrNotHeld)
	if err := c.Release(ctx, r.lease); err != nil {
		t.Fatal(err)
	}

	// Successive grants, by turns, get ever larger fences.
	prev := r.lease.Fence
	for i := range 6 {
		l := []lockimpl.Locker{a, b, c}[i%3]
		g, err := l.Acquire(ctx, "k", ttl)
		if err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		if g.Fence <= prev {
			t.Fatalf("grant %d: fence %d after %d", i, g.Fence, prev)
		}
		prev = g.Fence
		if err := l.Release(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Acquire(ctx, "", ttl); err == nil {
		t.Fatal("Acquire of an empty key succeeded")
	}
}

// The session timeout is the ttl, which the server clamps to [2, 20] ticks: the lease
// says what the server granted.
func TestZooKeeperSessionTimeoutIsClamped(t *testing.T) {
	t.Parallel()
	addr := zkServer(t)
	ctx := clustertest.Context(t)
	for ttl, want := range map[time.Duration]time.Duration{
		50 * time.Millisecond:  2 * zkTick,
		700 * time.Millisecond: 700 * time.Millisecond,
		5 * time.Second:        20 * zkTick,
	} {
		l := zkLocker(t, addr, nil, time.Second)
		// A 200 ms session may expire during the acquire on a loaded machine (its outcome
		// then unknown): the test is about the timeout granted, so it tries again.
		var lease lockimpl.Lease
		var err error
		for try := 0; try < 5; try++ {
			if lease, err = l.Acquire(ctx, fmt.Sprintf("ttl-%s-%d", ttl, try), ttl); err == nil {
				break
			}
			t.Logf("ttl %s: %v", ttl, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if lease.Granted != want || lease.Validity <= 0 || lease.Validity > want {
			t.Errorf("ttl %s: granted %s, validity %s; want %s granted and a validity within it", ttl, lease.Granted, lease.Validity, want)
		}
	}
}

// A client that crashes right after the grant leaves its znode: the server keeps the
// session, and the lock, until the session timeout passed since it last heard from the
// client. Another client gets the lock then, not before.
func TestZooKeeperCrashAfterGrant(t *testing.T) {
	t.Parallel()
	addr := zkServer(t)
	insp := zkInspect(t, addr)
	a := zkLocker(t, addr, locktest.CrashAtGrant, time.Second)
	ctx := clustertest.Context(t)
	const ttl = zkSteady
	start := time.Now() // the server cannot hear from the holder before this
	_, err := a.Acquire(ctx, "k", ttl)
	if !errors.Is(err, lockimpl.ErrCrashed) || lockimpl.GrantedOf(err) != ttl {
		t.Fatalf("Acquire: %v (granted %s); want the injected crash, %s granted", err, lockimpl.GrantedOf(err), ttl)
	}
	crashed := time.Now()
	a.(lockimpl.Crasher).Crash()
	if queue := zkQueue(t, insp, "k"); len(queue) != 1 {
		t.Fatalf("queue %v right after the crash; want the crashed holder's znode", queue)
	}
	_, err = zkLocker(t, addr, nil, 500*time.Millisecond).Acquire(ctx, "k", zkSteady)
	locktest.WantRefused(t, "Acquire right after the crash", err, lockimpl.ErrNotAcquired)

	b := zkLocker(t, addr, nil, 5*time.Second)
	lease, err := b.Acquire(ctx, "k", zkSteady)
	granted := time.Now()
	if err != nil {
		t.Fatalf("Acquire after the crash: %v", err)
	}
	t.Logf("granted %s after the crashed holder's acquire began (%s after the crash); session timeout %s",
		granted.Sub(start), granted.Sub(crashed), ttl)
	if granted.Sub(start) < ttl {
		t.Fatalf("granted %s after the crashed holder's acquire began: before its session could expire (%s)", granted.Sub(start), ttl)
	}
	if granted.Sub(crashed) > ttl+4*time.Second { // room for a loaded machine; the waiter's own timeout is 5 s
		t.Fatalf("granted %s after the crash; want about the session timeout, %s", granted.Sub(crashed), ttl)
	}
	if err := b.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
}

// A holder cut off from the server: its deadline stops moving and passes before the
// server expires the session and another client gets the lock; once it reaches the
// server again it learns the session expired, Current reports the lock lost and a
// release is refused; then the library opens a new session, in which it can lock again.
func TestZooKeeperExpiredSession(t *testing.T) {
	t.Parallel()
	addr := zkServer(t)
	n := netproxy.NewNet()
	t.Cleanup(func() { n.Close() })
	const link = "client:0->zookeeper-0"
	through, err := n.Link(link, addr)
	if err != nil {
		t.Fatal(err)
	}
	// a's timeout covers the library's pause before it dials its one server again (1 s
	// once it went through its list of servers), which delays the new session.
	a, b := zkLocker(t, through, nil, 3*time.Second), zkLocker(t, addr, nil, 5*time.Second)
	ctx := clustertest.Context(t)
	const ttl = 400 * time.Millisecond
	lease, err := a.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	var toxics []string
	for _, d := range []netproxy.Direction{netproxy.Up, netproxy.Down} {
		name, err := n.AddToxic(link, netproxy.Toxic{Kind: netproxy.Blackhole, Direction: d})
		if err != nil {
			t.Fatal(err)
		}
		toxics = append(toxics, name)
	}
	next, err := b.Acquire(ctx, "k", zkSteady)
	granted := time.Now()
	if err != nil {
		t.Fatalf("Acquire while the holder is cut off: %v", err)
	}
	cur, held := a.(lockimpl.Renewer).Current(lease)
	t.Logf("cut off at 0, the holder's deadline at %s, the other granted at %s", cur.Deadline.Sub(cut), granted.Sub(cut))
	if held && (cur.Deadline.After(cut.Add(ttl)) || !cur.Deadline.Before(granted)) {
		t.Fatalf("the cut-off holder's deadline is %s after the cut, the other client was granted %s after it: "+
			"want the deadline at most the session timeout (%s) after the cut, and before the grant", cur.Deadline.Sub(cut), granted.Sub(cut), ttl)
	}
	for _, name := range toxics {
		if err := n.RemoveToxic(link, name); err != nil {
			t.Fatal(err)
		}
	}
	locktest.Eventually(t, "the holder learns its session expired", func() bool {
		_, held := a.(lockimpl.Renewer).Current(lease)
		return !held
	})
	err = a.Release(ctx, lease)
	locktest.WantRefused(t, "Release after the session expired", err, lockimpl.ErrNotHeld)
	if err := b.Release(ctx, next); err != nil {
		t.Fatal(err)
	}
	again, err := a.Acquire(ctx, "k", ttl)
	if err != nil {
		t.Fatalf("Acquire in a new session: %v", err)
	}
	if again.Fence <= next.Fence {
		t.Fatalf("fence %d after %d: fences must grow", again.Fence, next.Fence)
	}
}

// An acquire waiting in the queue gives up when its context ends, before its own
// timeout, and deletes its znode; a client that closes ends its session, and its lock
// with it, at once.
func TestZooKeeperContextAndClose(t *testing.T) {
	t.Parallel()
	addr := zkServer(t)
	insp := zkInspect(t, addr)
	a, b := zkLocker(t, addr, nil, time.Second), zkLocker(t, addr, nil, 10*time.Second)
	ctx := clustertest.Context(t)
	const ttl = zkSteady
	if _, err := a.Acquire(ctx, "k", ttl); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	_, err := b.Acquire(short, "k", ttl)
	locktest.WantRefused(t, "Acquire with a 1 s context", err, lockimpl.ErrNotAcquired)
	if took := time.Since(start); took > 8*time.Second {
		t.Fatalf("the acquire took %s; want it to end with its context, after 1 s, not its 10 s timeout", took)
	}
	if queue := zkQueue(t, insp, "k"); len(queue) != 1 {
		t.Fatalf("queue %v; want the holder's znode alone", queue)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := b.Acquire(ctx, "k", ttl); err != nil {
		t.Fatalf("Acquire after the holder closed: %v", err)
	}
	if took := time.Since(start); took >= ttl {
		t.Fatalf("the acquire after the holder closed took %s; want the lock free at once, not after the session timeout (%s)", took, ttl)
	}
}

// With no server to answer an acquire is unknown within its timeout, never a refusal.
func TestZooKeeperNoServer(t *testing.T) {
	t.Parallel()
	l := zkLocker(t, clustertest.DeadAddr(t), nil, time.Second)
	start := time.Now()
	_, err := l.Acquire(clustertest.Context(t), "k", time.Second)
	locktest.WantUnknown(t, "Acquire with no server", err)
	if took := time.Since(start); took > 8*time.Second { // its timeout, with room for a loaded machine
		t.Fatalf("the acquire took %s; want it to end within its timeout (1 s)", took)
	}
}
