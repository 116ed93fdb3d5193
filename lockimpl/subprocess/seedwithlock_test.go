package subprocess_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/cluster/netproxy"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// seed-withlock (clients/node/seed-withlock.js) is the blog post's lock on ioredis's
// defaults, tested through its registry entry against real servers, like node-ioredis.
//
// The shared suite (locktest.Conformance) cannot take it as it is: it reads the lock
// under the caller's key, where this lock keeps it under "lock:<key>", and it requires
// Extend, which this lock does not have. TestSeedWithLockConformance runs the same
// checks with those differences, as for the Node.js libraries (libConformance).

// seedLib is seed-withlock as libConformance takes it: on one server, the lock of key
// at "lock:<key>", a crypto.randomUUID() token, no extend, and no validity reported.
var seedLib = nodeLib{name: "seed-withlock", nodes: 1, prefix: "lock:", noExtend: true, noValidity: true, token: uuidRE}

func TestSeedWithLockRegistryEntry(t *testing.T) {
	impl := seedLib.impl(t)
	if impl.Topology != "single" || impl.Fencing || impl.Mutant || impl.Bug != "" ||
		!strings.Contains(impl.Description, "blog") || !strings.Contains(impl.Description, "ioredis's defaults") ||
		len(impl.Steps) != 1 || impl.Steps[0] != lockimpl.StepGranted {
		t.Errorf("seed-withlock = %+v", impl)
	}
}

// seed-withlock.js is found beside lock.js: $LOCKLAB_NODE_CLIENT may name the folder or
// lock.js, and a folder without seed-withlock.js is an error that says so.
func TestSeedWithLockFoundBesideLockJS(t *testing.T) {
	impl := seedLib.impl(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lock.js"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{dir, filepath.Join(dir, "lock.js")} {
		t.Setenv(subprocess.EnvNodeClient, env)
		l, err := impl.New(lockimpl.Config{Addrs: []string{"127.0.0.1:1"}})
		if err == nil {
			l.Close()
			t.Fatalf("%s=%s: New succeeded without seed-withlock.js", subprocess.EnvNodeClient, env)
		}
		if !strings.Contains(err.Error(), "seed-withlock.js") || !strings.Contains(err.Error(), subprocess.EnvNodeClient) {
			t.Errorf("%s=%s: error %q does not name seed-withlock.js and %s", subprocess.EnvNodeClient, env, err, subprocess.EnvNodeClient)
		}
	}
}

// TestSeedWithLockConformance is locktest.Conformance's checks, for a lock that lives at
// lock:<key> and has no extend.
func TestSeedWithLockConformance(t *testing.T) {
	libConformance(t, []nodeLib{seedLib})
}

// A server that answers nothing: the command timeout (LOCKLAB_TIMEOUT_MS) makes the
// acquire unknown, and the client stays, although ioredis's retries are at their
// defaults. The command did reach the server, which runs it once resumed.
func TestSeedWithLockTimeoutIsUnknown(t *testing.T) {
	commandTimeoutIsUnknown(t, seedLib.impl(t))
}

// resendAttempt is what one try of the reset experiment saw.
type resendAttempt struct {
	err     error  // the acquire's error; nil: granted
	token   string // the granted token, "" unless granted
	held    string // the value of the lock's key on the server after the acquire
	pttl    time.Duration
	sets    []string // the tokens of the SETs of the lock's key the server ran, in order
	otherOK bool     // another client's acquire of the key succeeded afterwards
}

func (a resendAttempt) String() string {
	return fmt.Sprintf("acquire = %v (%s), granted token %q; server holds %q (PTTL %s); SETs of the key run by the server: %d, tokens %q; another client's acquire succeeded: %v",
		a.err, lockimpl.Classify(a.err), a.token, a.held, a.pttl, len(a.sets), a.sets, a.otherOK)
}

// lied reports whether the attempt shows the resent SET NX: the acquire answered fail
// (nil), while the key holds a token that only this client's SET carried, sent twice,
// and nobody else can take the lock.
func (a resendAttempt) lied() bool {
	return errors.Is(a.err, lockimpl.ErrNotAcquired) && lockimpl.Classify(a.err) == histories.Fail &&
		a.held != "" && a.pttl > 0 && len(a.sets) == 2 && a.sets[0] == a.held && a.sets[1] == a.held &&
		!a.otherOK
}

// resendLab is a server whose slow log keeps every command with its arguments, and a
// Toxiproxy link to it.
type resendLab struct {
	addr string        // the server, direct
	via  string        // the link's address
	rc   *redis.Client // direct, never through the link
	net  *netproxy.Net
	link string
}

func newResendLab(t *testing.T) *resendLab {
	t.Helper()
	n := clustertest.Node(t, cluster.NodeConfig{Name: "lock"})
	lab := &resendLab{addr: n.Addr(), rc: clustertest.Client(t, n.Addr()), net: netproxy.NewNet(), link: "client:0->lock"}
	t.Cleanup(func() { lab.net.Close() })
	ctx := clustertest.Context(t)
	for _, cmd := range [][]any{{"config", "set", "slowlog-log-slower-than", "0"}, {"config", "set", "slowlog-max-len", "1024"}} {
		if err := lab.rc.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if lab.via, err = lab.net.Link(lab.link, n.Addr()); err != nil {
		t.Fatal(err)
	}
	return lab
}

// resendTTL is far longer than an experiment: the key cannot expire in between.
const resendTTL = 20 * time.Second

// With ioredis's defaults, a SET NX whose reply is lost to a connection reset is resent
// after the reconnect, and the resend answers nil: the client reports "lock is held"
// about the lock it holds itself. The client reaches the server through a Toxiproxy
// link; a reset toxic on the replies (down) aborts the connection when the SET's OK
// comes back, after Redis ran the SET; once the SET is seen on the server the toxic is
// removed, ioredis reconnects (50-250 ms later, its default retry strategy) and resends
// the SET with the same token. The server's slow log (every command, with its
// arguments) shows both SETs. Timing could let a reply slip past the reset, so the test
// tries a few times and needs one such lie; every try must be consistent.
func TestSeedWithLockResentSetNXAnswersNilForItsOwnLock(t *testing.T) {
	lab := newResendLab(t)
	ctx := clustertest.Context(t)
	impl := seedLib.impl(t)
	l := locktest.New(t, impl, lockimpl.Config{Addrs: []string{lab.via}, Timeout: 3 * time.Second})
	other := locktest.Locker(t, impl, lab.addr, nil) // another client, directly on the server

	const attempts = 3
	lies := 0
	for i := range attempts {
		key := fmt.Sprintf("job-%d", i)
		a, err := lab.experiment(ctx, l, other, key, seedLib.key(key))
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		t.Logf("attempt %d: %s", i, a)
		if a.err == nil && a.held != a.token {
			t.Fatalf("attempt %d: granted %q but the server holds %q", i, a.token, a.held)
		}
		if a.lied() {
			lies++
		}
	}
	t.Logf("the resent SET NX answered nil for the client's own lock in %d of %d attempts", lies, attempts)
	if lies == 0 {
		t.Fatalf("in %d attempts, never saw the resent SET NX answer nil for the client's own lock", attempts)
	}
}

// The control: node-ioredis, which sends each command at most once, answers the same
// experiment unknown, and the server ran one SET.
func TestNodeClientResetMidAcquireIsUnknownNotResent(t *testing.T) {
	lab := newResendLab(t)
	ctx := clustertest.Context(t)
	impl := get(t, "node-ioredis")
	l := locktest.New(t, impl, lockimpl.Config{Addrs: []string{lab.via}, Timeout: 3 * time.Second})
	other := locktest.Locker(t, impl, lab.addr, nil)
	a, err := lab.experiment(ctx, l, other, "job", "job")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node-ioredis: %s", a)
	if lockimpl.Classify(a.err) != histories.Unknown || len(a.sets) != 1 || a.held != a.sets[0] || a.otherOK {
		t.Fatalf("node-ioredis: %s; want an unknown acquire and the one SET it sent holding the lock", a)
	}
}

// experiment is one try: l acquires key (kept at serverKey) through the link with a
// reset on the replies, the toxic goes once the SET ran; then the server is read and
// other tries the lock.
func (lab *resendLab) experiment(ctx context.Context, l, other lockimpl.Locker, key, serverKey string) (resendAttempt, error) {
	var a resendAttempt
	// The client is connected (a reconnect left from the last attempt is over).
	if _, err := l.Acquire(ctx, key+"-warm-up", time.Second); err != nil {
		return a, fmt.Errorf("warm-up acquire: %w", err)
	}
	if err := lab.rc.SlowLogReset(ctx).Err(); err != nil {
		return a, err
	}
	toxic, err := lab.net.AddToxic(lab.link, netproxy.Toxic{Kind: netproxy.Reset, Direction: netproxy.Down})
	if err != nil {
		return a, err
	}
	healed := false
	heal := func() error {
		if healed {
			return nil
		}
		healed = true
		return lab.net.RemoveToxic(lab.link, toxic)
	}
	defer heal()

	type result struct {
		lease lockimpl.Lease
		err   error
	}
	done := make(chan result, 1)
	go func() {
		lease, err := l.Acquire(ctx, key, resendTTL)
		done <- result{lease, err}
	}()
	// The SET ran on the server; its OK is on its way to the reset.
	deadline := time.Now().Add(5 * time.Second)
	for lab.rc.Exists(ctx, serverKey).Val() == 0 {
		if time.Now().After(deadline) {
			<-done
			return a, fmt.Errorf("the SET of %s never reached the server", serverKey)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(30 * time.Millisecond) // the reply meets the reset toxic and the connection drops
	if err := heal(); err != nil {
		return a, err
	}
	r := <-done
	a.err = r.err
	if r.err == nil {
		a.token = r.lease.Token
	}
	a.held = lab.rc.Get(ctx, serverKey).Val()
	a.pttl = lab.rc.PTTL(ctx, serverKey).Val()
	logged, err := lab.rc.SlowLogGet(ctx, -1).Result()
	if err != nil {
		return a, err
	}
	for i := len(logged) - 1; i >= 0; i-- { // newest first
		args := logged[i].Args
		if len(args) >= 3 && strings.EqualFold(args[0], "set") && args[1] == serverKey {
			a.sets = append(a.sets, args[2])
		}
	}
	_, err = other.Acquire(ctx, key, time.Second)
	a.otherOK = err == nil
	if err != nil && !errors.Is(err, lockimpl.ErrNotAcquired) {
		return a, fmt.Errorf("the other client's acquire: %w", err)
	}
	return a, nil
}
