package consensus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/lockimpl"
)

// zkVersion is the version of github.com/go-zookeeper/zk in go.mod, whose behaviour the
// table below describes.
const zkVersion = "v1.0.4"

// zkRoot holds one persistent znode per lock key, whose children are the lock's queue:
// /locklab/<key>/_c_<guid>-lock-<sequence number>.
const zkRoot = "/locklab"

// The name of a lock znode, as zk.Lock names it in the library's protected mode:
// "_c_" (conn.go's protectedPrefix), 32 hex digits of GUID, "-lock-", then the
// sequence number the server appends. zk.Lock's parseSeq reads such names, so zk.Lock
// clients and this adapter queue for the same lock.
const (
	zkProtected = "_c_"
	zkLockName  = "lock-"
)

// zkSweepPause is how long a sweeper waits between two tries at removing a znode.
const zkSweepPause = 200 * time.Millisecond

// zkCleanupMax bounds the delete that follows an acquire's give-up (it has the command
// timeout up to this): an acquire ends within its timeout + 500 ms, before the second
// past its timeout after which a subprocess client (zookeeper-process) counts as hung.
const zkCleanupMax = 500 * time.Millisecond

// zkLock adapts ZooKeeper's lock recipe, run through github.com/go-zookeeper/zk: a
// session per locklab client, and per acquire a protected ephemeral sequential znode in
// the queue of the key, which holds the lock once it is the queue's first.
//
// How the library works (v1.0.4): Connect opens a session with the timeout asked for,
// which the server clamps to [minSessionTimeout, maxSessionTimeout], by default
// [2, 20] × tickTime, and answers in the connect response; the client then pings every
// third of that negotiated timeout and drops a connection that stayed silent for two
// thirds of it, then reconnects with the same session, which the server keeps for the
// timeout after it last heard from the client. A session the server expired is
// answered as such on the next reconnect; the library then opens a new session on its
// own (the Java client would not), and the old session's ephemeral znodes are gone.
// Requests take no context: one waits until it is answered, its connection is lost
// (ErrConnectionClosed), or no server could be reached (ErrNoServer). After a lost
// connection it dials the other members at once, but pauses a second each time it has
// gone through its list (at once with one member): a session shorter than that second
// (plus the time to notice the loss, up to two thirds of the session timeout) expires at
// any dropped connection to a one-member ensemble.
//
// zk.Lock (lock.go) does not fit, so the adapter runs the recipe it runs (ZooKeeper's
// "Locks" recipe), with the same calls and the same znode names:
//   - LockWithData waits until granted: no context, no timeout; an acquire cannot give up;
//   - after an error past its create it returns without deleting its znode or telling
//     its path (lockPath is set only on success): the znode stays in the queue as long as
//     the session lives, and once first it holds the lock for nobody;
//   - it keeps the znode's path, sequence number and Stat to itself: no fence;
//   - CreateProtectedEphemeralSequential, which it calls, keeps its GUID to itself:
//     it retries the create three times, and after ErrConnectionClosed looks among the
//     parent's children for the GUID (the protected mode), after ErrSessionExpired
//     retries without looking (the znode went with the session), and returns any other
//     error; a caller whose deadline passed meanwhile, or that got an error after the
//     create may have run, cannot find the znode any more.
//
// So the adapter makes the GUID itself and does what that function does with it
// (create, then on ErrConnectionClosed list the children for the GUID), which lets it
// find and delete its znode whenever an acquire ends without a grant.
//
// How the adapter calls it, and why:
//   - TTL → the session timeout, as the library's users set it (Connect's
//     sessionTimeout: how long the lock outlives a client that stopped pinging). The
//     session opens at the first acquire, with its ttl; later acquires reuse it whatever
//     their ttl. Granted is the negotiated timeout (the server's clamp), read from the
//     connect response: with tickTime 100 ms a 100 ms ttl becomes 200 ms, a 5 s one 2 s.
//   - Acquire: create the znode (parents created as zk.Lock creates them), list the
//     children; if ours has the lowest sequence number the lock is ours, else watch the
//     znode just before ours (GetW, as zk.Lock) and list again once it is deleted. It
//     waits in the queue until Config.Timeout or ctx ends, then deletes its znode (that
//     delete within min(Config.Timeout, 500 ms) of its own).
//   - Fence: the lock znode's creation zxid (Stat.Czxid from an Exists once it leads the
//     queue). The lock is granted in queue order, which is creation order, so each grant's
//     czxid is above the last's; and the zxid is one counter for the whole ensemble, 64
//     bits, whose epoch (its high half) grows at every leader change. Sequence numbers
//     would do within one parent, but they come from the parent's 32-bit cversion: they
//     restart when the parent is deleted and recreated (by a cleanup, or a container
//     znode's reaper) and wrap after 2^31, so a later holder could get a smaller fence.
//   - Deadline: the session may be taken as alive for the negotiated timeout from the
//     last moment the client knows the server heard from it: the send time of the
//     latest request or ping answered (the server touches the session when a request
//     arrives, after it was sent, and expires it a timeout later, rounded up to a tick).
//     The adapter's dialer watches the packets for that (zkWire). Unlike etcd's adapter,
//     which counts from an answer's arrival, this never passes the server's expiry (with
//     clocks that run at the same rate).
//   - Current reports false once the session that owns the znode is over (the server
//     answered a reconnect with "expired"): the znode went with it. Until then it
//     reports the deadline, which stops moving while the client cannot reach a server.
//   - Extend: ErrUnsupported, nothing sent: the session's pings are the renewal.
//   - A crash at StepGranted is the client's death (Crash): its TCP connections close and
//     it dials no more, so the znode stays until the server expires the session, a
//     timeout after it last heard from the client; nothing is deleted, no close-session
//     request is sent (which would delete the znode at once).
//   - An acquire that ends without a grant leaves no znode behind: its own is deleted,
//     and when that fails or the create's outcome is unknown a sweeper goroutine keeps
//     deleting the znodes named with its GUID until it succeeds (or the client closes or
//     crashes). A znode left in the queue would hold the lock for nobody once first.
//   - Close closes the session (the library's close request): its znodes go with it.
//
// How its errors are classified:
//
//	operation  library result                               outcome  why
//	acquire    before a session: ErrNoServer, timeout       unknown  nothing was created, but nothing refused either
//	acquire    Create: ErrConnectionClosed, then the        unknown  the znode may exist (found later: the sweeper
//	           GUID not found; a timeout; other errors               deletes it); the lock may be ours meanwhile
//	acquire    Create: ErrNoNode                            —        the parent is missing: created, then retried
//	acquire    Create: ErrSessionExpired                    —        retried: the znode went with its session
//	acquire    Create of a parent: ErrNodeExists            —        definite: it exists; the create goes on
//	acquire    waited for a predecessor until the           fail     a predecessor held or waited for the lock at the
//	           deadline, our znode then deleted (or                  last look, and our znode is gone: never ours
//	           ErrNoNode)
//	acquire    waited, the delete failed                    unknown  our znode may stay and lead the queue (the
//	                                                                 sweeper deletes it)
//	acquire    Children/GetW error, a watch ended by        unknown  we may have led the queue meanwhile; our znode
//	           session expiry (EventNotWatching)                     is deleted (or swept)
//	acquire    our znode gone from the queue (ErrNoNode)    unknown  its session ended: it may have led before it went
//	acquire    led the queue, Exists: ok                    ok       fence: czxid; the session: EphemeralOwner
//	release    the owner session over (known expired)       fail     the server deleted the znode with its session
//	release    Delete: nil                                  ok       our znode existed until now: the lock was ours
//	release    Delete: ErrNoNode                            fail     the znode is gone (session expired, or deleted)
//	release    Delete: ErrSessionExpired                    fail     the session, and its znode with it, is gone
//	release    Delete: other error, timeout                 unknown  the delete may have run (the sweeper retries)
//	extend     —                                            ErrUnsupported, nothing sent
//
// Errors once a session exists carry its negotiated timeout (lockimpl.GrantedError): a
// znode that may exist outlives a dead client by that long.
type zkLock struct {
	addrs   []string
	timeout time.Duration
	clock   lockimpl.Clock
	step    lockimpl.StepFunc
	wire    *zkWire

	mu       sync.Mutex
	conn     *zk.Conn // nil until the first acquire opens the session
	crashed  bool
	closed   bool
	leases   map[string]zkLease // live locks by Lease.Token (the znode's path)
	quit     chan struct{}      // closed by Crash and Close: sweepers stop
	sweepers sync.WaitGroup
}

// zkLease is one granted lock.
type zkLease struct {
	path  string
	owner int64 // the session that owns the znode (its Stat's EphemeralOwner)
}

var (
	_ lockimpl.Locker  = (*zkLock)(nil)
	_ lockimpl.Renewer = (*zkLock)(nil)
	_ lockimpl.Crasher = (*zkLock)(nil)
)

// ZooKeeper is ZooKeeper's lock recipe on a ZooKeeper ensemble (topology zookeeper), a
// consensus lock beside etcd's. locks.All registers it after etcd.
func ZooKeeper() lockimpl.Impl {
	return lockimpl.Impl{
		Name: "zookeeper",
		Description: "github.com/go-zookeeper/zk " + zkVersion + ": ZooKeeper's lock recipe (protected ephemeral sequential znode, watch on the predecessor, " +
			"waiting up to the command timeout) on a session per client whose timeout is the plan's ttl (the server clamps it, by default to [2, 20] tickTime, in locklab's ensembles to [200 ms, 60 s]), kept alive by the client's pings; " +
			"fence: the lock znode's creation zxid",
		Fencing:  true,
		Topology: "zookeeper",
		Steps:    []string{lockimpl.StepGranted},
		NoExtend: true,
		Renews:   true,
		New:      newZKLock,
	}
}

func newZKLock(cfg lockimpl.Config) (lockimpl.Locker, error) {
	cfg = cfg.WithDefaults()
	switch {
	case len(cfg.Addrs) == 0:
		return nil, errors.New("zookeeper: no ensemble member addresses")
	case cfg.Cluster || len(cfg.Sentinels) > 0:
		return nil, errors.New("zookeeper: takes the ensemble's members, not a Redis Cluster or Sentinels")
	case cfg.Wait.Replicas > 0:
		return nil, errors.New("zookeeper: takes no WAIT")
	}
	for _, a := range cfg.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("zookeeper: member address %q: %w", a, err)
		}
	}
	return &zkLock{
		addrs:   append([]string(nil), cfg.Addrs...),
		timeout: cfg.Timeout,
		clock:   cfg.Clock,
		step:    cfg.Step,
		wire:    &zkWire{clock: cfg.Clock, dialTimeout: cfg.Timeout, conns: map[*zkWireConn]struct{}{}},
		leases:  map[string]zkLease{},
		quit:    make(chan struct{}),
	}, nil
}

// session is the client's connection, opened by the first acquire with its ttl as the
// session timeout.
func (l *zkLock) session(ttl time.Duration) (*zk.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.crashed:
		return nil, errors.New("client crashed")
	case l.closed:
		return nil, errors.New("client closed")
	case l.conn != nil:
		return l.conn, nil
	}
	conn, _, err := zk.Connect(l.addrs, ttl, zk.WithDialer(l.wire.dial), zk.WithLogger(zkQuiet{}))
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	l.conn = conn
	return conn, nil
}

// zkQuiet discards the library's log (it logs every connection to stderr by default).
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// zkACL is the ACL of every znode the adapter creates: open to all, as zk.Lock's
// users typically pass it.
func zkACL() []zk.ACL { return zk.WorldACL(zk.PermAll) }

// zkEscape is key as one znode name: bytes outside [A-Za-z0-9._~{}:@,+=-] as %XX (so a
// '/' cannot nest and '%' stays unambiguous), and "." or "..", which ZooKeeper refuses as
// names, escaped too.
func zkEscape(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || strings.IndexByte("._~{}:@,+=-", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	s := b.String()
	if s == "." || s == ".." {
		s = strings.ReplaceAll(s, ".", "%2E")
	}
	return s
}

// zkCall runs f, a call of the library (which takes no context), and waits for its
// answer or for ctx's end, whichever comes first. After ctx's end f goes on in the
// background (its request may still be sent and answered); done closes when it returns.
func zkCall[T any](ctx context.Context, f func() (T, error)) (v T, done <-chan struct{}, err error) {
	type result struct {
		v   T
		err error
	}
	answer := make(chan result, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		v, err := f()
		answer <- result{v, err}
	}()
	select {
	case r := <-answer:
		return r.v, finished, r.err
	case <-ctx.Done():
		select {
		case r := <-answer: // answered just in time
			return r.v, finished, r.err
		default:
		}
		return v, finished, fmt.Errorf("no answer in time: %w", context.Cause(ctx))
	}
}

// zkWaiting is the end of an acquire that waited until its deadline for a predecessor.
type zkWaiting struct{ pred string }

func (e *zkWaiting) Error() string {
	return fmt.Sprintf("%s still stood before our znode at the deadline", e.pred)
}

// errZKGone: our znode is no longer in the queue.
var errZKGone = errors.New("our znode is gone from the queue (its session ended?)")

// Acquire implements Locker.
func (l *zkLock) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	ttl, err := lockimpl.CheckArgs(key, ttl)
	if err != nil {
		return lockimpl.Lease{}, err
	}
	conn, err := l.session(ttl)
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("zookeeper: %w", err)
	}
	guid, err := lockimpl.NewToken() // 128 random bits in hex, as the library's GUID
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("zookeeper: %w", err)
	}
	opCtx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	parent := zkRoot + "/" + zkEscape(key)
	// Past the create a znode may exist, which outlives a dead client by the session
	// timeout: errors say so, for the history and its L1 check.
	onGrant := func(err error) error {
		if g := l.wire.negotiated(); g > 0 {
			return &lockimpl.GrantedError{Granted: g, Err: err}
		}
		return err
	}
	path, inflight, err := l.create(opCtx, conn, parent, guid)
	if err != nil {
		l.sweep(conn, parent, guid, "", inflight)
		return lockimpl.Lease{}, onGrant(fmt.Errorf("zookeeper: create a lock znode under %s: %w", parent, err))
	}
	if err := l.queue(opCtx, conn, parent, path, guid); err != nil {
		removed := l.remove(ctx, conn, path)
		if w, ok := errors.AsType[*zkWaiting](err); ok && removed {
			return lockimpl.Lease{}, fmt.Errorf("%w: %v; ours (%s) is deleted", lockimpl.ErrNotAcquired, w, path)
		}
		return lockimpl.Lease{}, onGrant(fmt.Errorf("zookeeper: wait in the queue of %s: %w", parent, err))
	}
	// Ours leads the queue: the lock is ours. Its Stat gives the fence and the session.
	stat, _, err := zkCall(opCtx, func() (*zk.Stat, error) {
		ok, stat, err := conn.Exists(path)
		if err == nil && !ok {
			err = errZKGone
		}
		return stat, err
	})
	if err != nil {
		l.remove(ctx, conn, path)
		return lockimpl.Lease{}, onGrant(fmt.Errorf("zookeeper: read the lock znode %s: %w", path, err))
	}
	deadline, granted, alive := l.wire.deadline(stat.EphemeralOwner)
	if !alive {
		return lockimpl.Lease{}, onGrant(fmt.Errorf("zookeeper: the session %#x that owns %s ended before the grant returned", stat.EphemeralOwner, path))
	}
	lease := lockimpl.Lease{
		Key:      key,
		Token:    path,
		Fence:    stat.Czxid,
		Deadline: deadline,
		Validity: deadline.Sub(l.clock.Now()),
		Granted:  granted,
	}
	if err := lockimpl.CallStep(ctx, l.step, lockimpl.StepGranted); err != nil {
		l.Crash() // the client dies here: the znode stays until its session expires
		return lockimpl.Lease{}, onGrant(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.crashed || l.closed {
		return lockimpl.Lease{}, onGrant(errors.New("zookeeper: client crashed or closed"))
	}
	l.leases[lease.Token] = zkLease{path: path, owner: stat.EphemeralOwner}
	return lease, nil
}

// create puts the acquire's znode in the key's queue and returns its path, as
// CreateProtectedEphemeralSequential does but with the GUID known, and creating the
// parents as zk.Lock does; done closes when the last library call returns.
func (l *zkLock) create(ctx context.Context, conn *zk.Conn, parent, guid string) (path string, done <-chan struct{}, err error) {
	prefix := parent + "/" + zkProtected + guid + "-" + zkLockName
	for range 3 { // the library's three tries
		path, done, err = zkCall(ctx, func() (string, error) {
			return conn.Create(prefix, []byte{}, zk.FlagEphemeral|zk.FlagSequence, zkACL())
		})
		switch {
		case err == nil:
			return path, done, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := zkParents(ctx, conn, parent); err != nil {
				return "", done, fmt.Errorf("create the parents of %s: %w", parent, err)
			}
		case errors.Is(err, zk.ErrConnectionClosed):
			// The create may have run: look for the GUID, as the protected mode does.
			found, _, ferr := zkCall(ctx, func() (string, error) { return zkFind(conn, parent, guid) })
			if ferr != nil {
				return "", done, fmt.Errorf("%w, then looking for the znode: %w", err, ferr)
			}
			if found != "" {
				return found, done, nil
			}
		case errors.Is(err, zk.ErrSessionExpired):
			// The znode, if created, went with its session: create again.
		default:
			return "", done, err
		}
	}
	return "", done, fmt.Errorf("three tries: %w", err)
}

// zkParents creates the persistent znodes down to path, as zk.Lock does when its create
// finds no parent: a znode that exists already (ErrNodeExists) is fine.
func zkParents(ctx context.Context, conn *zk.Conn, path string) error {
	pth := ""
	for _, p := range strings.Split(path, "/")[1:] {
		pth += "/" + p
		_, _, err := zkCall(ctx, func() (string, error) { return conn.Create(pth, []byte{}, zk.FlagPersistent, zkACL()) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", pth, err)
		}
	}
	return nil
}

// zkFind is the path of a child of parent named with guid, "" when there is none.
func zkFind(conn *zk.Conn, parent, guid string) (string, error) {
	children, _, err := conn.Children(parent)
	if err != nil {
		return "", err
	}
	for _, c := range children {
		if strings.HasPrefix(c, zkProtected+guid+"-") {
			return parent + "/" + c, nil
		}
	}
	return "", nil
}

// zkSeq is the sequence number of a lock znode's name, as zk.Lock's parseSeq reads it.
func zkSeq(name string) (int, error) {
	i := strings.LastIndex(name, zkLockName)
	if i < 0 {
		return 0, fmt.Errorf("znode %q is not a lock znode", name)
	}
	seq, err := strconv.Atoi(name[i+len(zkLockName):])
	if err != nil {
		return 0, fmt.Errorf("znode %q: sequence number: %w", name, err)
	}
	return seq, nil
}

// queue is the recipe's wait: nil once our znode (path) leads the queue of parent, a
// *zkWaiting when ctx ended while a predecessor still stood before it, errZKGone when
// it left the queue, else the error that stopped it. Other znodes named with our GUID
// (an earlier try's create that ran although its answer was lost, and that the look for
// the GUID missed) are deleted: they would hold the lock for nobody.
func (l *zkLock) queue(ctx context.Context, conn *zk.Conn, parent, path, guid string) error {
	name := strings.TrimPrefix(path, parent+"/")
	seq, err := zkSeq(name)
	if err != nil {
		return err
	}
	for {
		children, _, err := zkCall(ctx, func() ([]string, error) {
			c, _, err := conn.Children(parent)
			return c, err
		})
		if err != nil {
			return fmt.Errorf("list the queue: %w", err)
		}
		found, pred, predSeq := false, "", -1
		for _, c := range children {
			switch {
			case c == name:
				found = true
				continue
			case strings.HasPrefix(c, zkProtected+guid+"-"):
				l.remove(ctx, conn, parent+"/"+c)
				continue
			}
			s, err := zkSeq(c)
			if err != nil {
				return err
			}
			if s < seq && s > predSeq {
				pred, predSeq = c, s
			}
		}
		switch {
		case !found:
			return errZKGone
		case pred == "":
			return nil
		}
		watch, _, err := zkCall(ctx, func() (<-chan zk.Event, error) {
			_, _, ch, err := conn.GetW(parent + "/" + pred)
			return ch, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone already: look again
		}
		if err != nil {
			return fmt.Errorf("watch %s: %w", pred, err)
		}
		select {
		case ev := <-watch:
			if ev.Err != nil { // EventNotWatching: the session expired, or the client closes
				return fmt.Errorf("the watch on %s ended: %w", pred, ev.Err)
			}
		case <-ctx.Done():
			return &zkWaiting{pred: pred}
		}
	}
}

// remove deletes the znode at path, within a timeout of its own (the acquire's may have
// passed; zkCleanupMax at most), and reports whether it is gone; if not, a sweeper goes
// on trying.
func (l *zkLock) remove(ctx context.Context, conn *zk.Conn, path string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(l.timeout, zkCleanupMax))
	defer cancel()
	_, _, err := zkCall(ctx, func() (struct{}, error) { return struct{}{}, conn.Delete(path, -1) })
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		return true
	}
	l.sweep(conn, "", "", path, nil)
	return false
}

// sweep removes in the background a znode an acquire or release may have left: path
// when known, else the children of parent named with guid, looked for once the library
// call still running (inflight, nil: none) has returned. It tries until it succeeds or
// the client closes or crashes.
func (l *zkLock) sweep(conn *zk.Conn, parent, guid, path string, inflight <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.crashed {
		return
	}
	quit := l.quit
	l.sweepers.Add(1)
	go func() {
		defer l.sweepers.Done()
		if inflight != nil {
			select {
			case <-inflight:
			case <-quit:
				return
			}
		}
		for zkSweepOnce(conn, parent, guid, path) != nil {
			select {
			case <-quit:
				return
			case <-time.After(zkSweepPause):
			}
		}
	}()
}

// zkSweepOnce is one try of sweep. Sync first: the server we ask may lag behind the one
// that ran the create.
func zkSweepOnce(conn *zk.Conn, parent, guid, path string) error {
	paths := []string{path}
	if path == "" {
		if _, err := conn.Sync(parent); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		children, _, err := conn.Children(parent)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		paths = nil
		for _, c := range children {
			if strings.HasPrefix(c, zkProtected+guid+"-") {
				paths = append(paths, parent+"/"+c)
			}
		}
	}
	for _, p := range paths {
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// Current implements Renewer.
func (l *zkLock) Current(lease lockimpl.Lease) (lockimpl.Lease, bool) {
	l.mu.Lock()
	zl, ok := l.leases[lease.Token]
	l.mu.Unlock()
	if !ok {
		return lease, false
	}
	deadline, _, alive := l.wire.deadline(zl.owner)
	if !alive {
		return lease, false
	}
	lease.Deadline = deadline
	lease.Validity = deadline.Sub(l.clock.Now())
	return lease, true
}

// Release implements Locker.
func (l *zkLock) Release(ctx context.Context, lease lockimpl.Lease) error {
	l.mu.Lock()
	zl, ok := l.leases[lease.Token]
	delete(l.leases, lease.Token)
	conn := l.conn
	l.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: no lock znode of this client at %s", lockimpl.ErrNotHeld, lease.Token)
	}
	if _, _, alive := l.wire.deadline(zl.owner); !alive {
		return fmt.Errorf("%w: the session %#x that owned %s has expired (the server deleted the znode with it)", lockimpl.ErrNotHeld, zl.owner, zl.path)
	}
	opCtx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	_, _, err := zkCall(opCtx, func() (struct{}, error) { return struct{}{}, conn.Delete(zl.path, -1) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrSessionExpired):
		return fmt.Errorf("%w: %s is gone: %v", lockimpl.ErrNotHeld, zl.path, err)
	}
	l.sweep(conn, "", "", zl.path, nil)
	return fmt.Errorf("zookeeper: delete %s: %w", zl.path, err)
}

// Extend implements Locker: the session's pings are the renewal.
func (l *zkLock) Extend(context.Context, lockimpl.Lease, time.Duration) (lockimpl.Lease, error) {
	return lockimpl.Lease{}, lockimpl.ErrUnsupported
}

// Crash implements Crasher: the client's connections close and it dials no more, as
// when its process dies. Nothing is deleted and no close-session request leaves, so the
// server keeps the session, and its znodes, until the session timeout passes.
func (l *zkLock) Crash() {
	l.mu.Lock()
	if l.crashed || l.closed {
		l.mu.Unlock()
		return
	}
	l.crashed = true
	l.leases = map[string]zkLease{}
	close(l.quit)
	l.mu.Unlock()
	l.wire.kill()
}

// Close implements Locker: the session closes (the library's close request), and the
// server deletes its znodes with it. After a Crash the request cannot leave (the dialer
// is dead): Close only stops the library's goroutines.
func (l *zkLock) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	if !l.crashed {
		close(l.quit)
	}
	l.leases = map[string]zkLease{}
	conn := l.conn
	l.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	l.sweepers.Wait()
	return nil
}

// zkWire is the library's Dialer, and what it learns from the packets on the
// connections it dials: the session each connect response establishes, its negotiated
// timeout, and when the server last heard from the client in that session (the send
// time of the latest request or ping answered). kill makes it close its connections and
// dial no more, as a dead process would.
type zkWire struct {
	clock       lockimpl.Clock
	dialTimeout time.Duration

	mu      sync.Mutex
	dead    bool
	conns   map[*zkWireConn]struct{}
	session int64         // established by the last connect response; 0: none yet, or expired
	timeout time.Duration // the session's negotiated timeout
	heard   time.Time     // the server heard from the client in the session no earlier than this
}

// errZKDead is the dialer's answer once the client crashed.
var errZKDead = errors.New("client crashed: no more connections")

func (w *zkWire) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	w.mu.Lock()
	dead := w.dead
	w.mu.Unlock()
	if dead {
		return nil, errZKDead
	}
	c, err := net.DialTimeout(network, addr, min(timeout, w.dialTimeout))
	if err != nil {
		return nil, err
	}
	wc := &zkWireConn{Conn: c, w: w}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead {
		c.Close()
		return nil, errZKDead
	}
	w.conns[wc] = struct{}{}
	return wc, nil
}

func (w *zkWire) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead = true
	for c := range w.conns {
		c.Conn.Close()
	}
	w.conns = map[*zkWireConn]struct{}{}
}

// connected notes a connect response, to a connect request sent at sent.
func (w *zkWire) connected(session int64, timeout time.Duration, sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if session != w.session {
		w.heard = time.Time{}
	}
	w.session = session
	if session != 0 {
		w.timeout = timeout
		w.heard = later(w.heard, sent)
	}
}

// answered notes an answer in session to a request or ping sent at sent.
func (w *zkWire) answered(session int64, sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if session != 0 && session == w.session {
		w.heard = later(w.heard, sent)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// deadline is when session may expire on the server at the earliest, and its timeout;
// alive is false once the session is known to be over (or the client dead).
func (w *zkWire) deadline(session int64) (deadline time.Time, timeout time.Duration, alive bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead || session == 0 || session != w.session || w.heard.IsZero() {
		return time.Time{}, 0, false
	}
	return w.heard.Add(w.timeout), w.timeout, true
}

// negotiated is the timeout of the last session established, 0 before any.
func (w *zkWire) negotiated() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.timeout
}

// zkWireConn is one connection of the library, read and written by its receive and send
// loops, cut into packets on the way.
type zkWireConn struct {
	net.Conn
	w *zkWire

	mu      sync.Mutex
	out, in zkFrames
	sent    []time.Time // send times of the requests not answered yet, oldest first
	greeted bool        // the connect response was read
	session int64       // the session it established
}

func (c *zkWireConn) Write(p []byte) (int, error) {
	// The server cannot hear a packet before its write began.
	start := c.w.clock.Now()
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.feed(p[:n], func([]byte) { c.sent = append(c.sent, start) })
	return n, err
}

func (c *zkWireConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in.feed(p[:n], c.received)
	return n, err
}

func (c *zkWireConn) Close() error {
	c.w.mu.Lock()
	delete(c.w.conns, c)
	c.w.mu.Unlock()
	return c.Conn.Close()
}

// received handles a packet from the server, of which head are the first bytes.
// The server answers a connection's requests in order, so each answer is to the oldest
// request not answered yet.
func (c *zkWireConn) received(head []byte) {
	if !c.greeted {
		// The connect response: protocol version, timeout (ms), session id, password.
		c.greeted = true
		sent := c.pop()
		if len(head) >= 16 {
			c.session = int64(binary.BigEndian.Uint64(head[8:16]))
			timeout := time.Duration(int32(binary.BigEndian.Uint32(head[4:8]))) * time.Millisecond
			c.w.connected(c.session, timeout, sent)
		}
		return
	}
	// A reply: xid, zxid, error. Xid -1 is a watch notification, which answers nothing.
	if len(head) < 4 || int32(binary.BigEndian.Uint32(head[:4])) == -1 {
		return
	}
	if sent := c.pop(); !sent.IsZero() {
		c.w.answered(c.session, sent)
	}
}

func (c *zkWireConn) pop() time.Time {
	if len(c.sent) == 0 {
		return time.Time{}
	}
	t := c.sent[0]
	c.sent = c.sent[1:]
	return t
}

// zkFrames cuts a stream of ZooKeeper packets (a 4-byte big-endian length, then the
// body) into packets, keeping the first bytes of each body.
type zkFrames struct {
	hdr  [4]byte
	nhdr int    // bytes of the length read so far
	left int    // bytes of the body still to come
	head []byte // the body's first bytes, up to zkHeadLen
}

// zkHeadLen is as much of a packet as received looks at (a connect response's session id
// ends at byte 16).
const zkHeadLen = 16

// feed reads p and calls packet with the head of each packet it completes.
func (f *zkFrames) feed(p []byte, packet func(head []byte)) {
	for len(p) > 0 {
		if f.nhdr < len(f.hdr) {
			k := copy(f.hdr[f.nhdr:], p)
			f.nhdr += k
			p = p[k:]
			if f.nhdr < len(f.hdr) {
				return
			}
			f.left = int(binary.BigEndian.Uint32(f.hdr[:]))
			f.head = f.head[:0]
		} else {
			k := min(len(p), f.left)
			if need := zkHeadLen - len(f.head); need > 0 {
				f.head = append(f.head, p[:min(k, need)]...)
			}
			f.left -= k
			p = p[k:]
		}
		if f.nhdr == len(f.hdr) && f.left == 0 {
			packet(f.head)
			f.nhdr = 0
		}
	}
}
