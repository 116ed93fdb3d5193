package subprocess

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/cluster/faketime"
	"github.com/locklab/locklab/lockimpl"
)

// SubprocessProtocol is the version a subprocess client names in its hello line
// (docs/subprocess-protocol.md). A client speaking another version is refused.
const SubprocessProtocol = "locklab-lock/1"

// The environment a subprocess client is started with (docs/subprocess-protocol.md).
const (
	EnvAddrs     = "LOCKLAB_ADDRS"      // lock servers, host:port[,host:port...]
	EnvTimeoutMS = "LOCKLAB_TIMEOUT_MS" // per-command network timeout, milliseconds
	EnvSentinels = "LOCKLAB_SENTINELS"  // replicated topology: Sentinels, host:port[,...]; else unset
	EnvMaster    = "LOCKLAB_MASTER"     // replicated topology: the master name; else unset
	EnvVia       = "LOCKLAB_VIA"        // replicated and cluster topologies: from=to[,from=to...] address rewrites; else unset
	// EnvCluster is "1" when LOCKLAB_ADDRS are the client's links to the nodes of a Redis
	// Cluster (lockimpl.Config.Cluster), the seeds of a cluster client; unset otherwise.
	EnvCluster = "LOCKLAB_CLUSTER"
	// EnvOptions is the plan's impl_options, every option the client declared in its hello
	// with its value (defaults filled in), as a JSON object; durations in milliseconds.
	EnvOptions = "LOCKLAB_OPTIONS"
	// EnvWaitReplicas and EnvWaitTimeoutMS are the plan's wait_replicas and wait_timeout
	// (lockimpl.Config.Wait), for a client that WAITs after each grant; unset without WAIT.
	EnvWaitReplicas  = "LOCKLAB_WAIT_REPLICAS"
	EnvWaitTimeoutMS = "LOCKLAB_WAIT_TIMEOUT_MS"

	// EnvNodeClient points at the Node.js clients (clients/node/lock.js or its folder;
	// the other clients are found beside lock.js) when locklab runs from a place where
	// it cannot find them by itself.
	EnvNodeClient = "LOCKLAB_NODE_CLIENT"
)

const (
	// helloMargin is how much longer than Config.Timeout a client may take to start and
	// say hello: it may connect to its servers first (bounded by the timeout it was given).
	helloMargin = 10 * time.Second
	// requestMargin is how much longer than Config.Timeout locklab waits for an answer:
	// the client's own command timeout plus its scheduling and JSON work.
	requestMargin = time.Second
	// closeGrace is how long Close lets a client exit by itself after its stdin closes.
	closeGrace = time.Second
	// reapWait bounds the wait for a SIGKILLed process to be reaped.
	reapWait = 5 * time.Second
	// maxLine bounds one line on the client's stdout.
	maxLine = 1 << 20
	// stderrKeep is how much of the client's stderr is kept; stderrShow how much of it
	// an error quotes.
	stderrKeep = 64 << 10
	stderrShow = 2 << 10
	// quoteMax bounds how much of a bad line an error quotes.
	quoteMax = 300
)

// ClientProcess is a Locker that runs its client as a local process: faults reach it
// through the process group. Pid and the group change when a broken client is replaced
// (see docs/subprocess-protocol.md); Pid is 0 while none runs.
type ClientProcess interface {
	Pid() int
	// Signal sends sig to the client's process group. SIGSTOP returns once the client
	// is stopped, SIGKILL once it is reaped; the next request starts a new client.
	Signal(sig syscall.Signal) error
}

// Subprocess is an implementation whose client is the program argv (argv[0] is looked up
// in PATH), driven over the subprocess protocol (docs/subprocess-protocol.md). fencing
// says whether it grants fences; the client's hello must agree. Each Locker runs its own
// process, started by New.
func Subprocess(name, description string, argv []string, fencing bool) lockimpl.Impl {
	argv = append([]string(nil), argv...)
	return subprocessImpl(name, description, fencing, func() ([]string, error) {
		if len(argv) == 0 || argv[0] == "" {
			return nil, errors.New("no client command")
		}
		return argv, nil
	})
}

// subprocessImpl is Subprocess with a command found when a Locker is built; env
// (NAME=VALUE) is added to the client's environment.
func subprocessImpl(name, description string, fencing bool, command func() ([]string, error), env ...string) lockimpl.Impl {
	return subprocessOn(topologySingle, name, description, fencing, command, env...)
}

// subprocessClusterImpl is subprocessImpl for a client that also runs on a Redis Cluster
// (lockimpl.Impl.Cluster): given Config.Cluster it gets LOCKLAB_CLUSTER=1, every node
// (its links) in LOCKLAB_ADDRS as seeds, and Config.Via in LOCKLAB_VIA.
func subprocessClusterImpl(name, description string, fencing bool, command func() ([]string, error), env ...string) lockimpl.Impl {
	impl := subprocessKind(topologySingle, true, name, description, fencing, command, env...)
	impl.Cluster = true
	return impl
}

// Topologies a subprocess client runs on (lockimpl.Impl.Topology).
const (
	topologySingle = "single" // one server (or the primary through Sentinel): exactly one address
	topologyNodes  = "nodes"  // N independent servers (Redlock): every address, no Sentinels
	topologyEtcd   = "etcd"   // the members of an etcd cluster: every address
	// The members of a ZooKeeper ensemble: every address (cluster's ZooKeeper kind).
	topologyZooKeeper = "zookeeper"
)

// everyAddress reports whether a client of topology takes every address of Config.Addrs
// (N nodes, or the members of a consensus cluster) rather than exactly one.
func everyAddress(topology string) bool {
	return topology == topologyNodes || topology == topologyEtcd || topology == topologyZooKeeper
}

// subprocessOn is subprocessImpl on topology.
func subprocessOn(topology, name, description string, fencing bool, command func() ([]string, error), env ...string) lockimpl.Impl {
	return subprocessKind(topology, false, name, description, fencing, command, env...)
}

// subprocessKind is subprocessOn, also on a Redis Cluster when cluster is set.
func subprocessKind(topology string, cluster bool, name, description string, fencing bool, command func() ([]string, error), env ...string) lockimpl.Impl {
	env = append([]string(nil), env...)
	return lockimpl.Impl{
		Name:        name,
		Description: description,
		Fencing:     fencing,
		Topology:    topology,
		Steps:       []string{lockimpl.StepGranted},
		Process:     true,
		New: func(cfg lockimpl.Config) (lockimpl.Locker, error) {
			argv, err := command()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if cfg.Cluster && !cluster {
				return nil, fmt.Errorf("%s: takes no Redis Cluster", name)
			}
			return newSubprocessLocker(name, argv, topology, fencing, cfg, env...)
		},
	}
}

// Impls lists the subprocess clients locklab ships: the Node.js clients of clients/node
// (the example client, the withLock of a blog post run with ioredis's defaults, and the
// npm lock libraries redlock, @sesamecare-oss/redlock and redis-semaphore, see
// nodelibs.go) and redis-py's Lock (clients/python). The libraries' clients take their
// options as the libraries' users set them (nodelibs.go, python.go).
func Impls() []lockimpl.Impl {
	node := nodeImpls("", "")
	redisPy := withOptions(subprocessClusterImpl("redis-py",
		"redis-py 4.3.4's Lock (Debian's python3-redis) in Python: SET NX PX with a uuid1 token, Lua release and extend, each command sent once, one try per acquire unless blocking; on a Redis Cluster through redis-py's RedisCluster, which follows MOVED and ASK and resends nothing",
		false, pythonClientCommand(pythonMain)), redisPyOptions()...)
	// redis-py after the two ioredis clients, where it has always been listed.
	return append(node[:2:2], append([]lockimpl.Impl{redisPy}, node[2:]...)...)
}

// nodeImpls are the Node.js clients of Impls, each named its name + suffix. Their
// libraries come from nodeModules (EnvNodeModules) when it is not "", from beside the
// clients (clients/node/node_modules) otherwise.
func nodeImpls(nodeModules, suffix string) []lockimpl.Impl {
	var env []string
	if nodeModules != "" {
		env = []string{EnvNodeModules + "=" + nodeModules}
	}
	return []lockimpl.Impl{
		subprocessClusterImpl("node-ioredis"+suffix,
			"textbook SET NX PX lock in Node.js with ioredis, driven over the subprocess protocol; on a Redis Cluster through ioredis's cluster client, which follows MOVED and ASK and resends nothing",
			false, nodeClientCommand(nodeModules, nodeMain), env...),
		subprocessImpl("seed-withlock"+suffix,
			"the withLock of a widely read blog post's Node.js job queue (SET lock:<key> NX PX, Lua release, no extend) on ioredis's defaults: commands retried, queued and resent after a reconnect",
			false, nodeClientCommand(nodeModules, "seed-withlock.js"), env...),
		withOptions(subprocessOn(topologyNodes, "node-redlock"+suffix,
			"npm redlock "+nodeRedlockVersion+" (Redlock over N independent servers, ioredis clients), one try per acquire unless retry_count, automatic extension off (4.2.0 has none)",
			false, nodeLibraryCommand(nodeModules, "redlock.js", "redlock"), env...), nodeRedlockOptions()...),
		renewsByItself(withOptions(subprocessOn(topologyNodes, "node-redlock-auto"+suffix,
			"npm @sesamecare-oss/redlock "+sesamecareRedlockVersion+" (redlock v5's API: Redlock over N independent servers, ioredis clients), each lease held inside using() with automatic extension on, one try per acquire unless retry_count",
			false, nodeLibraryCommand(nodeModules, "redlock-auto.js", "@sesamecare-oss/redlock"), env...), nodeRedlockAutoOptions()...)),
		refreshing(withOptions(subprocessClusterImpl("redis-semaphore-mutex"+suffix,
			"npm redis-semaphore "+redisSemaphoreVersion+" Mutex (single instance, SET NX PX, refreshes itself every 0.8 ttl), one try per acquire; on a Redis Cluster through ioredis's cluster client",
			false, nodeLibraryCommand(nodeModules, "redis-semaphore.js", "redis-semaphore", "mutex"), env...), redisSemaphoreOptions()...)),
		refreshing(withOptions(subprocessOn(topologyNodes, "redis-semaphore-redlock"+suffix,
			"npm redis-semaphore "+redisSemaphoreVersion+" RedlockMutex (Redlock over N independent servers, refreshes itself every 0.8 ttl), one try per acquire",
			false, nodeLibraryCommand(nodeModules, "redis-semaphore.js", "redis-semaphore", "redlock"), env...), redisSemaphoreOptions()...)),
	}
}

// subprocessLocker is one client process and the requests sent to it.
type subprocessLocker struct {
	name    string
	argv    []string
	env     []string
	fencing bool
	clock   lockimpl.Clock
	step    lockimpl.StepFunc
	timeout time.Duration
	log     io.Writer // the client's stderr also goes here; nil: nowhere
	// scrub keeps secrets out of everything the client says, before anything keeps it.
	scrub *access.Scrubber
	// fakeClock is the client's wall clock under libfaketime (Config.FakeClock), or nil.
	fakeClock *faketime.Clock

	ops    sync.Mutex // one request at a time, held for the whole exchange
	nextID int64      // under ops

	mu     sync.Mutex
	proc   *clientProc // nil once it broke, until the next request starts another
	extend bool        // the client extends (its hello did not say "extend": false)
	closed bool
}

var (
	_ lockimpl.Locker  = (*subprocessLocker)(nil)
	_ lockimpl.Crasher = (*subprocessLocker)(nil)
	_ ClientProcess    = (*subprocessLocker)(nil)
)

// newSubprocessLocker checks cfg and starts the first client, so that a client that
// cannot start fails New with its reason. extra (NAME=VALUE) is added to the client's
// environment.
func newSubprocessLocker(name string, argv []string, topology string, fencing bool, cfg lockimpl.Config, extra ...string) (*subprocessLocker, error) {
	cfg = cfg.WithDefaults()
	env, err := subprocessEnv(cfg, topology)
	if err == nil {
		env, err = withAccess(env, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	env = append(env, extra...)
	if cfg.FakeClock != nil {
		lib, err := faketime.FindLibfaketime()
		if err != nil {
			return nil, fmt.Errorf("%s: client clock under libfaketime: %w", name, err)
		}
		env = faketime.Preload(env, lib, cfg.FakeClock.Path())
	}
	l := &subprocessLocker{
		name: name, argv: argv, env: env, fencing: fencing,
		clock: cfg.Clock, step: cfg.Step, timeout: cfg.Timeout, log: cfg.Log, fakeClock: cfg.FakeClock,
		scrub: scrubberOf(cfg),
	}
	p, h, err := l.start(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l.proc, l.extend = p, h.extends()
	return l, nil
}

// subprocessEnv is the client's environment: ours plus where its servers are.
func subprocessEnv(cfg lockimpl.Config, topology string) ([]string, error) {
	switch {
	case cfg.Cluster && topology != topologySingle:
		return nil, fmt.Errorf("a client of topology %s takes no Redis Cluster", topology)
	case cfg.Cluster && len(cfg.Sentinels) > 0:
		return nil, errors.New("a Redis Cluster has no Sentinels")
	case cfg.Cluster && len(cfg.Addrs) == 0:
		return nil, errors.New("a Redis Cluster lock needs the address of at least one node")
	case cfg.Cluster:
	case everyAddress(topology) && len(cfg.Addrs) == 0:
		return nil, errors.New("needs at least one node address")
	case everyAddress(topology) && len(cfg.Sentinels) > 0:
		return nil, errors.New("a lock over N nodes does not follow a primary through Sentinels")
	case everyAddress(topology):
	case len(cfg.Sentinels) == 0:
		if _, err := cfg.SingleAddr(); err != nil {
			return nil, err
		}
	case cfg.Master == "":
		return nil, errors.New("sentinels given without the master name they monitor")
	}
	ms := max(1, cfg.Timeout.Milliseconds())
	// Ours replace any the caller's environment has, also the ones this topology leaves unset.
	var env []string
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		// EnvNodeModules too: a client runs the release its implementation names, never one
		// an inherited variable points at.
		case EnvAddrs, EnvTimeoutMS, EnvSentinels, EnvMaster, EnvVia, EnvCluster, EnvOptions, EnvWaitReplicas, EnvWaitTimeoutMS, EnvNodeModules:
		default:
			env = append(env, kv)
		}
	}
	env = append(env,
		EnvAddrs+"="+strings.Join(cfg.Addrs, ","),
		EnvTimeoutMS+"="+strconv.FormatInt(ms, 10))
	if len(cfg.Options) > 0 {
		wire, err := cfg.Options.Wire()
		if err != nil {
			return nil, fmt.Errorf("options: %w", err)
		}
		env = append(env, EnvOptions+"="+string(wire))
	}
	if cfg.Wait.Replicas > 0 {
		env = append(env,
			EnvWaitReplicas+"="+strconv.Itoa(cfg.Wait.Replicas),
			EnvWaitTimeoutMS+"="+strconv.FormatInt(cfg.Wait.Timeout.Milliseconds(), 10))
	}
	via := make([]string, 0, len(cfg.Via))
	for from, to := range cfg.Via {
		via = append(via, from+"="+to)
	}
	sort.Strings(via)
	if len(cfg.Sentinels) > 0 {
		env = append(env,
			EnvSentinels+"="+strings.Join(cfg.Sentinels, ","),
			EnvMaster+"="+cfg.Master,
			EnvVia+"="+strings.Join(via, ","))
	}
	if cfg.Cluster {
		env = append(env, EnvCluster+"=1", EnvVia+"="+strings.Join(via, ","))
	}
	return env, nil
}

// Acquire implements Locker. The deadline counts from just before the request was sent,
// for the validity the client reports (never more than ttl).
func (l *subprocessLocker) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	ttl, err := checkSubprocessArgs(key, ttl)
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: acquire: %w", l.name, err)
	}
	ms := ttl.Milliseconds()
	resp, start, err := l.call(ctx, subprocessRequest{Op: "acquire", Key: key, TTLMS: ms})
	if err == nil {
		err = resp.outcomeErr(lockimpl.ErrNotAcquired)
	}
	if err == nil {
		err = l.doStep(ctx, lockimpl.StepGranted)
	}
	if err != nil {
		return lockimpl.Lease{}, resp.granted(fmt.Errorf("%s: acquire %q: %w", l.name, key, err))
	}
	fence := resp.Fence
	if !l.fencing {
		fence = 0
	}
	return l.lease(key, resp, fence, start, ttl), nil
}

// Release implements Locker.
func (l *subprocessLocker) Release(ctx context.Context, lease lockimpl.Lease) error {
	if err := checkKey(lease.Key); err != nil {
		return fmt.Errorf("%s: release: %w", l.name, err)
	}
	fence := lease.Fence
	resp, _, err := l.call(ctx, subprocessRequest{Op: "release", Key: lease.Key, Token: lease.Token, Fence: &fence})
	if err == nil {
		err = resp.outcomeErr(lockimpl.ErrNotHeld)
	}
	if err != nil {
		return fmt.Errorf("%s: release %q: %w", l.name, lease.Key, err)
	}
	return nil
}

// Extend implements Locker: ErrUnsupported, without asking, for a client whose hello
// said it cannot extend.
func (l *subprocessLocker) Extend(ctx context.Context, lease lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	ttl, err := checkSubprocessArgs(lease.Key, ttl)
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("%s: extend: %w", l.name, err)
	}
	l.mu.Lock()
	extends := l.extend
	l.mu.Unlock()
	if !extends {
		return lockimpl.Lease{}, fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, lockimpl.ErrUnsupported)
	}
	resp, start, err := l.call(ctx, subprocessRequest{Op: "extend", Key: lease.Key, Token: lease.Token, TTLMS: ttl.Milliseconds()})
	if err == nil {
		err = resp.outcomeErr(lockimpl.ErrNotHeld)
	}
	if err != nil {
		return lockimpl.Lease{}, resp.granted(fmt.Errorf("%s: extend %q: %w", l.name, lease.Key, err))
	}
	resp.Token = lease.Token
	return l.lease(lease.Key, resp, lease.Fence, start, ttl), nil
}

// lease is what a grant sent at start gives: the client's validity, capped at ttl, and
// the lease the servers granted when the client said.
func (l *subprocessLocker) lease(key string, resp subprocessResponse, fence int64, start time.Time, ttl time.Duration) lockimpl.Lease {
	v := ttl
	if resp.ValidityMS != nil {
		v = min(ttl, time.Duration(math.Max(0, math.Floor(*resp.ValidityMS)))*time.Millisecond)
	}
	deadline := start.Add(v)
	return lockimpl.Lease{Key: key, Token: resp.Token, Fence: fence, Deadline: deadline, Validity: deadline.Sub(l.clock.Now()), Granted: resp.grantedLease()}
}

// grantedLease is the answer's granted_ms as a duration (whole milliseconds), 0 without.
func (r subprocessResponse) grantedLease() time.Duration {
	if r.GrantedMS == nil {
		return 0
	}
	return time.Duration(math.Floor(*r.GrantedMS)) * time.Millisecond
}

// granted is err of an answer that reported the lease granted (a GrantedError: the lock
// may live that long), err itself otherwise.
func (r subprocessResponse) granted(err error) error {
	if g := r.grantedLease(); g > 0 && r.Outcome != outcomeFail {
		return &lockimpl.GrantedError{Granted: g, Err: err}
	}
	return err
}

// doStep calls the Step hook (see CallStep).
func (l *subprocessLocker) doStep(ctx context.Context, step string) error {
	return lockimpl.CallStep(ctx, l.step, step)
}

// checkSubprocessArgs is CheckArgs plus what JSON cannot carry.
func checkSubprocessArgs(key string, ttl time.Duration) (time.Duration, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	return lockimpl.CheckArgs(key, ttl)
}

// checkKey refuses keys JSON would silently change: invalid UTF-8 becomes U+FFFD, and
// the client would lock another key.
func checkKey(key string) error {
	if !utf8.ValidString(key) {
		return fmt.Errorf("key %q is not valid UTF-8, which the subprocess protocol cannot carry", key)
	}
	return nil
}

// Pid implements ClientProcess.
func (l *subprocessLocker) Pid() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proc == nil {
		return 0
	}
	return l.proc.pid
}

// Crash implements lockimpl.Crasher: the client's process group is killed (kill -9), as
// if it had crashed, and never restarted; whatever it held stays until it expires.
func (l *subprocessLocker) Crash() {
	l.mu.Lock()
	p := l.proc
	l.proc, l.closed = nil, true
	l.mu.Unlock()
	if p != nil {
		_ = p.kill() // a crash: how the client's end went is no concern of the run
	}
}

// Signal implements ClientProcess.
func (l *subprocessLocker) Signal(sig syscall.Signal) error {
	l.mu.Lock()
	p := l.proc
	l.mu.Unlock()
	if p == nil || p.hasExited() {
		return fmt.Errorf("%s: signal %s: no client process running", l.name, sig)
	}
	if err := syscall.Kill(-p.pid, sig); err != nil {
		return fmt.Errorf("%s: signal %s to client (pid %d): %w", l.name, sig, p.pid, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		// Delivery is asynchronous: whatever follows must meet a frozen client.
		deadline := time.Now().Add(reapWait)
		for !frozen(p.pid) {
			if p.hasExited() || time.Now().After(deadline) {
				return fmt.Errorf("%s: client (pid %d) not stopped %s after SIGSTOP (state %q)", l.name, p.pid, reapWait, procState(p.pid))
			}
			time.Sleep(time.Millisecond)
		}
	case syscall.SIGKILL:
		if !p.awaitExit(reapWait) {
			return fmt.Errorf("%s: client (pid %d) still alive %s after SIGKILL", l.name, p.pid, reapWait)
		}
	}
	return nil
}

// frozen reports whether pid is stopped, or cannot run again before it stops: in an
// uninterruptible sleep with SIGSTOP pending. A shell that vforked a child when the
// group was stopped stays so, in 'D', until the stopped child execs.
func frozen(pid int) bool {
	switch procState(pid) {
	case 'T':
		return true
	case 'D':
		return stopPending(pid)
	}
	return false
}

// stopPending reports whether SIGSTOP is pending for pid (/proc/PID/status).
func stopPending(pid int) bool {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(val), 16, 64)
		if err == nil && mask&(1<<(syscall.SIGSTOP-1)) != 0 {
			return true
		}
	}
	return false
}

// procState is the state letter of pid in /proc/PID/stat ('T' stopped), 0 when unknown.
func procState(pid int) byte {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')') // the command name in parentheses may hold anything
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// Close implements Locker: the client gets EOF on stdin and a moment to exit, then its
// process group is SIGKILLed and it is reaped. Idempotent; a request in flight ends
// unknown.
func (l *subprocessLocker) Close() error {
	l.mu.Lock()
	p := l.proc
	l.proc, l.closed = nil, true
	l.mu.Unlock()
	if p == nil {
		return nil
	}
	p.stdin.Close()
	p.awaitExit(closeGrace)
	if err := p.kill(); err != nil {
		return fmt.Errorf("%s: close: %w", l.name, err)
	}
	return nil
}

// call sends one request and reads its answer. Anything but a well-formed answer to it
// in time (the client died, said something else, said nothing, ctx ended) is an error:
// the outcome is unknown, and the client, whose state is now unknowable, is killed; the
// next request starts a new one. start is the clock just before the request was sent.
func (l *subprocessLocker) call(ctx context.Context, req subprocessRequest) (resp subprocessResponse, start time.Time, err error) {
	l.ops.Lock()
	defer l.ops.Unlock()
	p, err := l.current(ctx)
	if err != nil {
		return resp, start, err
	}
	if err := ctx.Err(); err != nil {
		return resp, start, fmt.Errorf("not sent: %w", err) // the client stays: it was asked nothing
	}
	l.nextID++
	req.ID = l.nextID
	line, err := json.Marshal(req)
	if err != nil {
		return resp, start, fmt.Errorf("encode request: %w", err)
	}
	line = append(line, '\n')
	wait := l.timeout + requestMargin
	deadline := time.Now().Add(wait)
	start = l.clock.Now()
	if err := p.stdin.SetWriteDeadline(deadline); err != nil {
		return resp, start, l.broke(p, fmt.Errorf("send request: %w", err))
	}
	if _, err := p.stdin.Write(line); err != nil {
		return resp, start, l.broke(p, fmt.Errorf("send request: %w", err))
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case r, ok := <-p.lines:
		switch {
		case !ok:
			return resp, start, l.broke(p, errors.New("client exited before answering"))
		case r.err != nil:
			return resp, start, l.broke(p, fmt.Errorf("read answer: %w", r.err))
		}
		if resp, err = parseResponse(r.line, req, p.scrub); err != nil {
			return resp, start, l.broke(p, err)
		}
		return resp, start, nil
	case <-timer.C:
		return resp, start, l.broke(p, fmt.Errorf("no answer within %s", wait))
	case <-ctx.Done():
		return resp, start, l.broke(p, fmt.Errorf("gave up waiting for the answer: %w", ctx.Err()))
	}
}

// current is the running client, a new one if the last broke or exited. Caller holds ops.
func (l *subprocessLocker) current(ctx context.Context) (*clientProc, error) {
	l.mu.Lock()
	p, closed := l.proc, l.closed
	l.mu.Unlock()
	switch {
	case closed:
		return nil, errors.New("locker closed")
	case p != nil && !p.hasExited():
		return p, nil
	case p != nil:
		_ = p.kill() // reaped already; this also stops what it left in its group
	}
	// Started without mu, so that Close and Signal need not wait for a slow start.
	p, h, err := l.start(ctx)
	if err != nil {
		return nil, fmt.Errorf("restart client: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = p.kill()
		return nil, errors.New("locker closed")
	}
	l.proc, l.extend = p, h.extends()
	return p, nil
}

// broke kills p, forgets it and says why, quoting the client's stderr.
func (l *subprocessLocker) broke(p *clientProc, cause error) error {
	killErr := p.kill()
	l.mu.Lock()
	if l.proc == p {
		l.proc = nil
	}
	l.mu.Unlock()
	return fmt.Errorf("client process broken, killed (the next request starts a new one): %w%s%s",
		errors.Join(cause, killErr), p.exitNote(), p.stderr.quote())
}

// start runs the client and waits for its hello.
func (l *subprocessLocker) start(ctx context.Context) (*clientProc, subprocessHello, error) {
	if l.fakeClock != nil {
		// libfaketime counts the file's rate from the moment the process starts.
		if err := l.fakeClock.Started(time.Now()); err != nil {
			return nil, subprocessHello{}, err
		}
	}
	p, err := spawnClient(l.argv, l.env, l.log, l.scrub)
	if err != nil {
		return nil, subprocessHello{}, err
	}
	h, err := l.awaitHello(ctx, p)
	if err != nil {
		killErr := p.kill()
		return nil, subprocessHello{}, fmt.Errorf("client %q (pid %d): %w%s%s",
			access.RedactCommand(l.argv), p.pid, errors.Join(err, killErr), p.exitNote(), p.stderr.quote())
	}
	return p, h, nil
}

// awaitHello reads and checks the client's first line.
func (l *subprocessLocker) awaitHello(ctx context.Context, p *clientProc) (subprocessHello, error) {
	h, line, err := readHello(ctx, p, l.timeout+helloMargin)
	if err == nil && *h.Fencing != l.fencing {
		err = fmt.Errorf("hello line %s: client says fencing %v, the implementation is registered with fencing %v",
			quoteLine(line, p.scrub), *h.Fencing, l.fencing)
	}
	return h, err
}

// readHello waits up to wait for p's first line and checks that it is a hello of our
// protocol that says whether the client fences.
func readHello(ctx context.Context, p *clientProc, wait time.Duration) (subprocessHello, []byte, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var r lineResult
	select {
	case got, ok := <-p.lines:
		if !ok {
			return subprocessHello{}, nil, errors.New("exited before its hello line")
		}
		r = got
	case <-timer.C:
		return subprocessHello{}, nil, fmt.Errorf("no hello line within %s", wait)
	case <-ctx.Done():
		return subprocessHello{}, nil, fmt.Errorf("waiting for the hello line: %w", ctx.Err())
	}
	if r.err != nil {
		return subprocessHello{}, nil, fmt.Errorf("read hello line: %w", r.err)
	}
	var h subprocessHello
	if err := json.Unmarshal(r.line, &h); err != nil || h.Hello == nil {
		return h, r.line, fmt.Errorf("malformed hello line %s: want %s", quoteLine(r.line, p.scrub),
			`{"hello":"`+SubprocessProtocol+`","name":"...","fencing":false}`)
	}
	switch {
	case *h.Hello != SubprocessProtocol:
		return h, r.line, fmt.Errorf("hello line %s: client speaks %q, locklab speaks %q", quoteLine(r.line, p.scrub), *h.Hello, SubprocessProtocol)
	case h.Fencing == nil:
		return h, r.line, fmt.Errorf("hello line %s: no \"fencing\" field", quoteLine(r.line, p.scrub))
	}
	return h, r.line, nil
}

// subprocessHello is a client's first line.
type subprocessHello struct {
	Hello   *string `json:"hello"`
	Name    string  `json:"name"`
	Fencing *bool   `json:"fencing"`
	Extend  *bool   `json:"extend"` // absent means true
	// Topology is what the client runs on, when it says (registration by command only).
	Topology string `json:"topology"`
	// Options are the settings the client takes from LOCKLAB_OPTIONS (registration by
	// command only: a built-in client's options are declared in Go).
	Options []lockimpl.WireOption `json:"options"`
}

func (h subprocessHello) extends() bool { return h.Extend == nil || *h.Extend }

// subprocessRequest is one request line.
type subprocessRequest struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"`
	Key   string `json:"key"`
	TTLMS int64  `json:"ttl_ms,omitempty"`
	Token string `json:"token,omitempty"`
	Fence *int64 `json:"fence,omitempty"`
}

// subprocessResponse is one answer line.
type subprocessResponse struct {
	ID         *int64   `json:"id"`
	Outcome    string   `json:"outcome"`
	Token      string   `json:"token"`
	Fence      int64    `json:"fence"`
	ValidityMS *float64 `json:"validity_ms"`
	GrantedMS  *float64 `json:"granted_ms"` // optional: the lease the servers granted
	Error      string   `json:"error"`
}

// Outcomes of a response.
const (
	outcomeOK      = "ok"
	outcomeFail    = "fail"
	outcomeUnknown = "unknown"
)

// parseResponse decodes and checks the answer to req; any violation is an error that
// names the line. The client's error, which may quote its server's URL, is scrubbed.
func parseResponse(line []byte, req subprocessRequest, scrub *access.Scrubber) (subprocessResponse, error) {
	var r subprocessResponse
	err := json.Unmarshal(line, &r)
	r.Error = scrub.String(r.Error)
	if err != nil {
		return r, fmt.Errorf("malformed answer line %s: %v", quoteLine(line, scrub), err)
	}
	switch {
	case r.ID == nil:
		return r, fmt.Errorf("answer line %s has no id (want %d)", quoteLine(line, scrub), req.ID)
	case *r.ID != req.ID:
		return r, fmt.Errorf("answer line %s has id %d, want %d", quoteLine(line, scrub), *r.ID, req.ID)
	case r.Outcome != outcomeOK && r.Outcome != outcomeFail && r.Outcome != outcomeUnknown:
		return r, fmt.Errorf("answer line %s: outcome %q is none of ok, fail, unknown", quoteLine(line, scrub), r.Outcome)
	case r.Outcome == outcomeOK && req.Op == "acquire" && r.Token == "":
		return r, fmt.Errorf("answer line %s: an acquire ok without a token", quoteLine(line, scrub))
	case r.Outcome == outcomeOK && req.Op == "acquire" && r.Fence < 0:
		return r, fmt.Errorf("answer line %s: negative fence", quoteLine(line, scrub))
	case r.GrantedMS != nil && !(*r.GrantedMS >= 1): // NaN cannot come from JSON; >= 1 keeps a whole millisecond
		return r, fmt.Errorf("answer line %s: granted_ms %v is not a positive number of milliseconds (at least 1)", quoteLine(line, scrub), *r.GrantedMS)
	}
	return r, nil
}

// outcomeErr is the response as a Locker error: nil for ok, refusal (ErrNotAcquired or
// ErrNotHeld) for fail, an unknown error for unknown.
func (r subprocessResponse) outcomeErr(refusal error) error {
	switch r.Outcome {
	case outcomeOK:
		return nil
	case outcomeFail:
		if r.Error != "" {
			return fmt.Errorf("%w (client: %s)", refusal, r.Error)
		}
		return refusal
	}
	msg := r.Error
	if msg == "" {
		msg = "no reason given"
	}
	return fmt.Errorf("client reports outcome unknown: %s", msg)
}

// scrubberOf is the scrubber of cfg: the run's, or else the passwords of its servers.
func scrubberOf(cfg lockimpl.Config) *access.Scrubber {
	if cfg.Scrub != nil {
		return cfg.Scrub
	}
	var as []access.Access
	for _, a := range cfg.Access {
		as = append(as, a)
	}
	return access.NewScrubber(nil, as...)
}

// quoteLine quotes a line for an error, scrubbed, then shortened: a secret cut in two
// would not be recognised.
func quoteLine(line []byte, scrub *access.Scrubber) string {
	line = scrub.Bytes(line)
	if len(line) > quoteMax {
		return strconv.Quote(string(line[:quoteMax])) + fmt.Sprintf("... (%d bytes)", len(line))
	}
	return strconv.Quote(string(line))
}

// clientProc is one running client.
type clientProc struct {
	pid    int
	stdin  *os.File
	lines  chan lineResult // the client's stdout, line by line; closed at EOF
	stderr *tailBuffer
	scrub  *access.Scrubber // applied to stderr and to what errors quote of stdout
	quit   chan struct{}    // closed by kill: the reader stops delivering

	exited  chan struct{} // closed once the process is reaped
	waitErr error         // the exit status, set before exited closes

	killOnce sync.Once
	killErr  error
}

// lineResult is one line read from the client, or why reading stopped.
type lineResult struct {
	line []byte
	err  error
}

// spawnClient starts argv in its own process group with pipes for stdin and stdout.
// Its stderr passes scrub before anything keeps it, and scrub is p's for the errors that
// quote its lines: a client that prints its environment, or puts a server's URL in an
// error, leaks no password. (Its protocol lines are read as they are: a short password
// could otherwise turn a token or an outcome into something else.)
//
// Own process group: a terminal's Ctrl-C reaches only locklab, and faults signal the
// client with whatever it started. Pdeathsig: the client dies with locklab even if
// locklab is SIGKILLed. Linux sends Pdeathsig when the *thread* that forked the child
// ends, so the child is forked from a goroutine locked to its thread for the child's
// whole life: it then waits for the child, and only after the reap does the thread end.
func spawnClient(argv []string, env []string, log io.Writer, scrub *access.Scrubber) (*clientProc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start client: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("start client: %w", err)
	}
	p := &clientProc{
		stdin:  inW,
		lines:  make(chan lineResult),
		stderr: &tailBuffer{max: stderrKeep},
		quit:   make(chan struct{}),
		exited: make(chan struct{}),
		scrub:  scrub,
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	var stderr io.Writer = p.stderr
	if log != nil {
		stderr = teeWriter{p.stderr, log}
	}
	scrubbed := scrub.Writer(stderr)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, scrubbed
	// Something the client left running in its group may hold stderr open; Wait then
	// stops copying it after this long rather than never returning.
	cmd.WaitDelay = closeGrace
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the reap
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		_ = scrubbed.Flush() // stderr ended: its last line goes too (a failing log changes nothing)
		close(p.exited)
	}()
	err = <-started
	inR.Close() // the child has its own copies
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start client %q: %w", access.RedactCommand(argv), err)
	}
	p.pid = cmd.Process.Pid
	go p.read(outR)
	return p, nil
}

// read delivers the client's stdout line by line until EOF or kill.
func (p *clientProc) read(out *os.File) {
	defer out.Close()
	defer close(p.lines)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		select {
		case p.lines <- lineResult{line: bytes.Clone(line)}:
		case <-p.quit:
			return
		}
	}
	if err := sc.Err(); err != nil {
		select {
		case p.lines <- lineResult{err: err}:
		case <-p.quit:
		}
	}
}

func (p *clientProc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// awaitExit waits up to d for the reap and reports whether it happened.
func (p *clientProc) awaitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// kill SIGKILLs the client's process group (also after the client itself exited: what
// it started may still run) and waits for the reap. Idempotent.
func (p *clientProc) kill() error {
	p.killOnce.Do(func() {
		if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			p.killErr = fmt.Errorf("kill client (pid %d): %w", p.pid, err)
		}
		if !p.awaitExit(reapWait) {
			p.killErr = errors.Join(p.killErr, fmt.Errorf("client (pid %d) still alive %s after SIGKILL", p.pid, reapWait))
		}
		close(p.quit)
		p.stdin.Close()
	})
	return p.killErr
}

// exitNote says how the client ended, once it has been reaped.
func (p *clientProc) exitNote() string {
	if !p.hasExited() {
		return ""
	}
	var ee *exec.ExitError
	switch {
	case p.waitErr == nil:
		return "; the client exited with status 0"
	case errors.As(p.waitErr, &ee):
		return "; the client ended: " + ee.String()
	}
	return "; the client ended: " + p.waitErr.Error()
}

// teeWriter writes to keep and to log; a log that fails to write never stops the
// client's stderr (nor what is kept of it for error messages).
type teeWriter struct {
	keep io.Writer
	log  io.Writer
}

func (t teeWriter) Write(b []byte) (int, error) {
	_, _ = t.log.Write(b)
	return t.keep.Write(b)
}

// tailBuffer keeps the last max bytes written to it: the client's stderr.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(data []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, data...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(data), nil
}

// String is what is kept.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// quote is the end of the client's stderr for an error message, "" when it said nothing.
func (b *tailBuffer) quote() string {
	s := strings.TrimSpace(b.String())
	if s == "" {
		return "; its stderr is empty"
	}
	if len(s) > stderrShow {
		s = "..." + s[len(s)-stderrShow:]
	}
	return "; the end of its stderr:\n" + s
}

// nodeMain is the Node.js example client, by which the folder of the Node.js clients is
// found.
const nodeMain = "lock.js"

// nodeClientCommand finds node and the Node.js client file (lock.js, or another script
// of clients/node beside it) with its dependencies installed: beside it, or in
// nodeModules when it is not "" (EnvNodeModules).
func nodeClientCommand(nodeModules, file string) func() ([]string, error) {
	return func() ([]string, error) { return nodeCommand(nodeModules, file) }
}

// nodeCommand is nodeClientCommand's work, done when a Locker is built.
func nodeCommand(nodeModules, file string) ([]string, error) {
	const install = "run `npm ci --prefix clients/node` in the locklab checkout (`make deps` does it)"
	script, err := findNodeClient(file)
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node (Node.js 20 or later) is not on PATH, needed for %s: %v; install Node.js, then %s", script, err, install)
	}
	if nodeModules != "" {
		if !isFile(filepath.Join(nodeModules, "ioredis", "package.json")) {
			return nil, fmt.Errorf("the Node.js client %s lacks its dependency ioredis in %s (%s)", script, nodeModules, EnvNodeModules)
		}
	} else if !nodeModuleInstalled(filepath.Dir(script), "ioredis") {
		return nil, fmt.Errorf("the Node.js client %s lacks its dependency ioredis (no node_modules/ioredis next to it or above): %s", script, install)
	}
	return []string{node, script}, nil
}

// findNodeClient finds file of the Node.js clients: through $LOCKLAB_NODE_CLIENT (the
// folder, or lock.js, beside which the others are), else clients/node/file in the
// working directory or a parent of it (a checkout), else next to the executable
// (bin/../clients).
func findNodeClient(file string) (string, error) {
	return findClient("Node.js", "clients/node", nodeMain, EnvNodeClient, file)
}

// findClient finds file of the lang clients in folder (clients/node, clients/python):
// through $envVar (the folder, or its main file, beside which the others are), else
// folder/file in the working directory or a parent of it, else next to the executable.
func findClient(lang, folder, mainFile, envVar, file string) (string, error) {
	rel := folder + "/" + file
	if env := os.Getenv(envVar); env != "" {
		path := env
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			path = filepath.Join(path, file)
		} else if file != mainFile {
			path = filepath.Join(filepath.Dir(path), file) // beside the main file
		}
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("$%s=%s: no %s client %s there: %v", envVar, env, lang, file, err)
		}
		return filepath.Abs(path)
	}
	var looked []string
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			path := filepath.Join(dir, rel)
			if isFile(path) {
				return path, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
		looked = append(looked, wd+" and its parents")
	}
	if exe, err := os.Executable(); err == nil {
		path := filepath.Join(filepath.Dir(exe), "..", rel)
		if isFile(path) {
			return filepath.Clean(path), nil
		}
		looked = append(looked, filepath.Clean(filepath.Join(filepath.Dir(exe), "..")))
	}
	return "", fmt.Errorf("the %s client %s was not found (looked in %s); run locklab from its checkout or set %s to the folder of the %s clients",
		lang, rel, strings.Join(looked, ", "), envVar, lang)
}

// nodeModuleInstalled reports whether Node's resolution from dir finds module: a
// node_modules/module in dir or a parent.
func nodeModuleInstalled(dir, module string) bool {
	for {
		if isFile(filepath.Join(dir, "node_modules", module, "package.json")) {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
