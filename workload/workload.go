// Package workload is what the clients of a run do, every step recorded: lock-protected
// read-modify-write of a protected store, or (with Config.Jobs) workers consuming a job
// queue and appending each job's side effect to a ledger.
package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/cluster/exactlyonce"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// Points where a client calls its Hook, in the order it reaches them. Lock
// implementations add their own between commands (lockimpl.StepFunc).
const (
	AfterAcquire = "after-acquire" // the grant has arrived, nothing checked yet
	// BeforeExtend is halfway through the work, right before the extend, in a critical
	// section that extends (Config.Extend): a pause here makes the extend late, the
	// case a lock must refuse once another client was granted the lock (P6).
	BeforeExtend = "before-extend"
	BeforeWrite  = "before-write" // after the validity check, right before the write: Kleppmann's pause
	InRelease    = "in-release"   // the release has been issued but not yet sent
	// BeforeAck is a job-queue worker's point after the job ran (and its lock was
	// released, unless Jobs.ReleaseAfterAck holds it until the ack), right before it
	// acknowledges the job.
	BeforeAck = "before-ack"
	// BeforeAcquire is where a client is about to begin its next acquire (a job-queue
	// worker: to take its next job, which it runs under its lock). It is none of Points or
	// JobPoints, so no plan arms a fault there (and campaigns draw the same plans): the
	// harness holds clients at it while a failover waits for the leases held to drain.
	BeforeAcquire = "before-acquire"
	// AcquireFailed is where an acquire came back without a grant (refused, or its outcome
	// unknown), before the retry's pause; like BeforeAcquire, the harness's alone: a
	// failover's aftermath learns there that the client it held gave up on its grant.
	AcquireFailed = "acquire-failed"
	// AfterRelease is where a release has been answered (whatever the answer) and
	// recorded, before the think time: what the client gave back is gone, or was never
	// there. Like BeforeAcquire it is none of Points or JobPoints, so campaigns and
	// generators never draw it; a plan names it (plan.Plan.Reachable) to wait for
	// another client's release to have landed ("until": "client:1@after-release") or to
	// hold a client from its next acquire.
	AfterRelease = "after-release"
)

// Points lists the client's own points, in the order it reaches them. A job-queue
// worker reaches AfterAcquire (after the grant, or the delivery without a lock),
// BeforeWrite (before the side effect), InRelease, then BeforeAck (with
// Jobs.ReleaseAfterAck, BeforeAck before InRelease).
func Points() []string { return []string{AfterAcquire, BeforeWrite, InRelease} }

// JobPoints lists a job-queue worker's points, in the order it reaches them.
func JobPoints() []string { return []string{AfterAcquire, BeforeWrite, InRelease, BeforeAck} }

// Hook is called by a client at each point; it may block (a pause) or return an error
// wrapping lockimpl.ErrCrashed (a crash: the client stops for good).
type Hook func(ctx context.Context, client int, point string) error

// Config describes the clients of one run.
type Config struct {
	Clients  int
	Keys     int
	TTL      time.Duration
	Work     time.Duration // time in the critical section between the read and the write
	Think    time.Duration // time between a release and the next acquire
	Retry    time.Duration // mean delay after a refused acquire (jittered)
	Fencing  Fencing
	Careless bool // skip the validity check before touching the store
	// Extend is the probability (0–1) that a critical section extends its lease once,
	// halfway through its work, so that the implementations' renewal paths are exercised.
	Extend  float64
	Timeout time.Duration // per store operation
	Seed    int64
	// Namespace prefixes every key the clients touch on the servers, so that runs sharing
	// servers (external ones) never see each other's locks or values. Histories keep the
	// plain key names. A lock key is LockKey's: the plain name is its hash tag.
	Namespace string

	StoreAddr func(client int) string // each client may reach the store by its own link
	// Access is how to use the server behind a store or queue address that needs more
	// than a plain connection (an external store's user, password, database, TLS); an
	// address not in it needs nothing.
	Access    map[string]access.Access
	NewLocker func(client int) (lockimpl.Locker, error)
	Clock     func(client int) lockimpl.Clock // nil: the system clock
	Hook      Hook                            // nil: no faults at client points
	// Rec records every operation. nil records nothing (not for job-queue workers, whose
	// clock it is): the same clients without recording, to measure what recording costs.
	Rec *histories.Recorder

	// Jobs, when set, makes the clients job-queue workers (jobs.go) instead of
	// read-modify-write clients; Keys is then unused.
	Jobs *Jobs
}

// options are exactlyonce.Options for addr, a store or queue address, with its Access.
func (c *Config) options(addr string) *redis.Options {
	return c.Access[addr].Apply(exactlyonce.Options(addr, c.Timeout))
}

// Validate checks the configuration; Run does too, before it builds anything.
func (c Config) Validate() error {
	switch {
	case c.Clients < 1:
		return fmt.Errorf("clients must be at least 1, got %d", c.Clients)
	case c.Keys < 1:
		return fmt.Errorf("keys must be at least 1, got %d", c.Keys)
	case c.TTL <= 0:
		return fmt.Errorf("ttl must be positive, got %s", c.TTL)
	case c.Work < 0 || c.Think < 0 || c.Retry < 0:
		return fmt.Errorf("work, think and retry must not be negative")
	case c.Extend < 0 || c.Extend > 1:
		return fmt.Errorf("extend must be a probability between 0 and 1, got %g", c.Extend)
	case c.Timeout <= 0:
		return fmt.Errorf("timeout must be positive, got %s", c.Timeout)
	case c.NewLocker == nil || c.StoreAddr == nil:
		return fmt.Errorf("workload needs a locker factory and a store address")
	case c.Rec == nil && c.Jobs != nil:
		return fmt.Errorf("job-queue workers need a recorder: it is their clock")
	}
	if c.Jobs != nil {
		if err := c.Jobs.validate(); err != nil {
			return err
		}
	}
	_, err := ParseFencing(string(c.Fencing))
	return err
}

// KeyName is the name of lock key i.
func KeyName(i int) string { return "k" + strconv.Itoa(i) }

// Run starts the clients and returns when all have stopped. Clients begin no new
// critical section once stop is closed, and finish the one they are in (releasing the
// lock); ctx ending stops them at once.
func Run(ctx context.Context, stop <-chan struct{}, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	if cfg.Jobs != nil {
		return runJobs(ctx, stop, cfg)
	}
	clients, err := newClients(&cfg, func(c *client) { c.store = newStore(cfg.options(cfg.StoreAddr(c.id)), cfg.Fencing) })
	if err != nil {
		return err
	}
	defer closeConns(clients)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(ctx, stop)
		}()
	}
	wg.Wait()
	return closeLockers(clients)
}

// newClients builds cfg.Clients clients, each with its locker, clock, history stream and
// random source; connect gives it its connections (the store, or the queue). When a
// locker cannot be built, the ones built are closed.
func newClients(cfg *Config, connect func(*client)) ([]*client, error) {
	clients := make([]*client, cfg.Clients)
	for i := range clients {
		l, err := cfg.NewLocker(i)
		if err != nil {
			for _, c := range clients[:i] {
				c.locker.Close()
			}
			closeConns(clients[:i])
			return nil, fmt.Errorf("workload: locker for client %d: %w", i, err)
		}
		clock := lockimpl.Clock(lockimpl.SystemClock{})
		if cfg.Clock != nil {
			clock = cfg.Clock(i)
		}
		clients[i] = &client{
			id: i, cfg: cfg, locker: l, clock: clock,
			rec: cfg.Rec.Stream(i),
			rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)+1)),
		}
		connect(clients[i])
	}
	return clients, nil
}

// closeConns closes the clients' connections to the store or the queue.
func closeConns(clients []*client) {
	for _, c := range clients {
		if c.store != nil {
			c.store.Close()
		}
		if c.queue != nil {
			c.queue.Close()
		}
	}
}

// closeLockers closes the lockers of the clients that did not crash (a crashed client's
// locker was closed, or stopped, when it died), all at once: a client process is given a
// moment to exit, and eight such moments one after the other add up.
func closeLockers(clients []*client) error {
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		if c.closed {
			continue
		}
		wg.Go(func() {
			if err := c.locker.Close(); err != nil {
				errs[i] = fmt.Errorf("close locker of client %d: %w", c.id, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

type client struct {
	id     int
	cfg    *Config
	locker lockimpl.Locker
	store  *Store        // read-modify-write clients
	queue  *redis.Client // job-queue workers
	clock  lockimpl.Clock
	rec    *histories.Stream
	rng    *rand.Rand
	// noExtend is set once the implementation answered ErrUnsupported: it cannot extend.
	noExtend bool
	closed   bool // the locker was closed when the client crashed
}

func stopped(ctx context.Context, stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

func (c *client) loop(ctx context.Context, stop <-chan struct{}) {
	for !stopped(ctx, stop) {
		key := KeyName(c.rng.IntN(c.cfg.Keys))
		if c.hook(ctx, key, BeforeAcquire) {
			c.die()
			return
		}
		if stopped(ctx, stop) { // held past the end of the run: begin nothing new
			return
		}
		lease, outcome, crashed := c.acquire(ctx, key)
		if crashed {
			c.die()
			return
		}
		if outcome != histories.OK {
			if c.hook(ctx, key, AcquireFailed) {
				c.die()
				return
			}
			c.sleep(ctx, c.jitter(c.cfg.Retry))
			continue
		}
		if crashed := c.section(ctx, lease); crashed {
			c.die()
			return
		}
		c.sleep(ctx, c.cfg.Think)
	}
}

// die stops what the death of the client's process would stop, wherever it crashed: a
// lock with work of its own (renewals, a client process) stops it without a release;
// any other lock is closed, which releases nothing.
func (c *client) die() {
	if cr, ok := c.locker.(lockimpl.Crasher); ok {
		cr.Crash()
		return
	}
	c.closed = true
	_ = c.locker.Close() // a dead process's connections just end
}

func (c *client) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + time.Duration(c.rng.Int64N(int64(d)))
}

func (c *client) sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// hook runs the fault hook at point; it reports a crash, after recording it.
func (c *client) hook(ctx context.Context, key, point string) (crashed bool) {
	if c.cfg.Hook == nil {
		return false
	}
	if err := c.cfg.Hook(ctx, c.id, point); errors.Is(err, lockimpl.ErrCrashed) {
		c.rec.Crash(key)
		return true
	}
	return false
}

func (c *client) acquire(ctx context.Context, key string) (lockimpl.Lease, histories.Outcome, bool) {
	call := c.rec.Begin()
	lease, err := c.locker.Acquire(ctx, LockKey(c.cfg.Namespace, key), c.cfg.TTL)
	outcome := lockimpl.Classify(err)
	out := histories.Output{Token: lease.Token, Fence: lease.Fence, Validity: lease.Validity, Nodes: lease.Nodes, Granted: lease.Granted}
	if err != nil {
		out = histories.Output{Error: err.Error(), Granted: lockimpl.GrantedOf(err)}
	}
	c.rec.Record(histories.Acquire, key, histories.Input{TTL: c.cfg.TTL}, out, outcome, call)
	if errors.Is(err, lockimpl.ErrCrashed) {
		c.rec.Crash(key)
		return lease, outcome, true
	}
	return lease, outcome, false
}

// plain is the lease's key as the history names it, without the namespace.
func (c *client) plain(lease lockimpl.Lease) string {
	return strings.TrimSuffix(strings.TrimPrefix(lease.Key, c.cfg.Namespace+"{"), "}")
}

// LockKey is lock key name on the servers: the run's namespace and the name as its hash
// tag ("ns{k0}"), so that on a Redis Cluster a key's slot, and the primary serving it,
// depend on the plan's key name alone, the same in every run and replay of a plan.
func LockKey(namespace, name string) string { return namespace + "{" + name + "}" }

// valid is the careful client's check of its lease right before it touches the store.
// A lock that renews by itself (lockimpl.Renewer) is asked for the lease as it is now.
func (c *client) valid(lease lockimpl.Lease) bool {
	if c.cfg.Careless {
		return true
	}
	if r, ok := c.locker.(lockimpl.Renewer); ok {
		var held bool
		if lease, held = r.Current(lease); !held {
			return false
		}
	}
	return lease.Remaining(c.clock.Now()) > 0
}

// extendResult is what a critical section does after trying to extend its lease.
type extendResult int

const (
	extended     extendResult = iota // go on with the (possibly renewed) lease
	extendLost                       // refused: the lease is gone; skip the write, release
	extendUnsure                     // outcome unknown: go on with the lease as it was
)

// extend renews the lease for another TTL. After an unknown outcome the client cannot
// count on the extension, but it is still the lock process that believes it holds the
// lock (histories.Stream.Record keeps it; P1 keeps its belief until its release): it goes
// on with the lease it had, so its validity check before the write judges by the old
// deadline, and releases as usual.
func (c *client) extend(ctx context.Context, lease *lockimpl.Lease) extendResult {
	key := c.plain(*lease)
	call := c.rec.Begin()
	renewed, err := c.locker.Extend(ctx, *lease, c.cfg.TTL)
	if errors.Is(err, lockimpl.ErrUnsupported) {
		c.noExtend = true // nothing was sent: nothing to record
		return extended
	}
	outcome := lockimpl.Classify(err)
	out := histories.Output{Token: renewed.Token, Fence: renewed.Fence, Validity: renewed.Validity, Granted: renewed.Granted}
	if err != nil {
		out = histories.Output{Error: err.Error(), Granted: lockimpl.GrantedOf(err)}
	}
	c.rec.Record(histories.Extend, key, histories.Input{TTL: c.cfg.TTL, Token: lease.Token}, out, outcome, call)
	switch outcome {
	case histories.OK:
		*lease = renewed
		return extended
	case histories.Fail:
		return extendLost
	}
	return extendUnsure
}

// fence is what the client presents to the store: its lease's fence when the store checks fences.
func (c *client) fence(lease lockimpl.Lease) int64 {
	if c.cfg.Fencing == FencingOff {
		return 0
	}
	return lease.Fence
}

// storeOutcome classifies a store error: a stale-fence refusal is a definite fail.
func storeOutcome(err error) histories.Outcome {
	switch {
	case err == nil:
		return histories.OK
	case errors.Is(err, ErrRejected):
		return histories.Fail
	}
	return histories.Unknown
}

// section is one critical section: read, work, write, release. It reports a crash.
func (c *client) section(ctx context.Context, lease lockimpl.Lease) (crashed bool) {
	key := c.plain(lease)
	if c.hook(ctx, key, AfterAcquire) {
		return true
	}
	if !c.valid(lease) {
		return c.release(ctx, lease)
	}
	fence := c.fence(lease)
	opCtx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	call := c.rec.Begin()
	v, err := c.store.Read(opCtx, c.cfg.Namespace+key, fence)
	cancel()
	out := histories.Output{Value: v}
	if err != nil {
		out = histories.Output{Error: err.Error()}
	}
	outcome := storeOutcome(err)
	c.rec.Record(histories.Read, key, histories.Input{Fence: fence}, out, outcome, call)
	if outcome != histories.OK {
		return c.release(ctx, lease)
	}
	if c.cfg.Extend > 0 && !c.noExtend && c.rng.Float64() < c.cfg.Extend {
		c.sleep(ctx, c.cfg.Work/2)
		if c.hook(ctx, key, BeforeExtend) {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if c.extend(ctx, &lease) == extendLost {
			return c.release(ctx, lease)
		}
		c.sleep(ctx, c.cfg.Work-c.cfg.Work/2)
	} else {
		c.sleep(ctx, c.cfg.Work)
	}
	if !c.valid(lease) {
		return c.release(ctx, lease)
	}
	if c.hook(ctx, key, BeforeWrite) {
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	opCtx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
	call = c.rec.Begin()
	err = c.store.Write(opCtx, c.cfg.Namespace+key, fence, v+1)
	cancel()
	out = histories.Output{}
	if err != nil {
		out.Error = err.Error()
	}
	c.rec.Record(histories.Write, key, histories.Input{Fence: fence, Value: v + 1, Base: v}, out, storeOutcome(err), call)
	return c.release(ctx, lease)
}

// release gives the lease back. Its call time is taken before the InRelease hook, so a
// pause there is a release in flight: the holder has let go, the command arrives late.
// Once the answer is recorded the client reaches AfterRelease: every release, of either
// workload, ends there.
func (c *client) release(ctx context.Context, lease lockimpl.Lease) (crashed bool) {
	if ctx.Err() != nil {
		return false
	}
	call := c.rec.Begin()
	if c.cfg.Hook != nil {
		if err := c.cfg.Hook(ctx, c.id, InRelease); errors.Is(err, lockimpl.ErrCrashed) {
			c.rec.Record(histories.Release, c.plain(lease), histories.Input{Token: lease.Token}, histories.Output{Error: err.Error()}, histories.Unknown, call)
			c.rec.Crash(c.plain(lease))
			return true
		}
	}
	err := c.locker.Release(ctx, lease)
	out := histories.Output{}
	if err != nil {
		out.Error = err.Error()
	}
	c.rec.Record(histories.Release, c.plain(lease), histories.Input{Token: lease.Token}, out, lockimpl.Classify(err), call)
	return c.hook(ctx, c.plain(lease), AfterRelease)
}
