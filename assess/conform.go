package assess

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// Check is one conformance check of a lock client: what it asks, and what came of it.
type Check struct {
	Name   string `json:"name"`
	Asks   string `json:"asks"`             // what a correct lock does
	Status string `json:"status"`           // CheckPassed, CheckFailed or CheckSkipped
	Detail string `json:"detail,omitempty"` // what went wrong, or why it was skipped
}

// Statuses of a Check.
const (
	CheckPassed  = "passed"
	CheckFailed  = "failed"
	CheckSkipped = "skipped"
)

// conformTTL is the lease the checks ask for: etcd grants whole seconds, at least one.
const conformTTL = time.Second

// conformance is a check as code: it returns why the lock failed it (a failure), or an
// error of the harness (a server that would not start), or skips with a reason.
type conformance struct {
	name, asks string
	// skip says why the check does not apply to impl; "" when it does.
	skip func(impl lockimpl.Impl) string
	run  func(ctx context.Context, e *conformEnv) (failure string, err error)
}

// conformances are the checks every lock client can take, black-box: only through the
// Locker interface and the servers, so that a client in any language takes them as a Go
// lock does (lockimpl/locktest's conformance suite also reads Redis keys, which only
// locklab's own locks are bound to).
func conformances() []conformance {
	return []conformance{
		{
			name: "exclusion",
			asks: "a held lock refuses a second client with a definite refusal, and is granted again once released",
			run:  checkExclusion,
		},
		{
			name: "release-and-extend-check-ownership",
			asks: "a holder whose lease expired and was taken by another can neither release nor extend the new holder's lock",
			skip: func(impl lockimpl.Impl) string {
				if impl.Renews {
					return "the lock renews its lease while its holder lives, so the holder's lease does not expire under it"
				}
				return ""
			},
			run: checkOwnership,
		},
		{
			name: "lease-expires",
			asks: "a lease whose holder is gone (closed without a release) ends by its TTL and the lock is granted again",
			run:  checkExpiry,
		},
		{
			name: "unknown-outcome",
			asks: "an acquire the servers did not answer in time is reported as unknown (not as a refusal), and whatever it may have taken expires",
			run:  checkUnknown,
		},
	}
}

// conformEnv is what a check has: the lock, its servers, a way to make clients.
type conformEnv struct {
	impl    lockimpl.Impl
	cluster *cluster.Cluster
	cfg     lockimpl.Config
	lockers []lockimpl.Locker
	key     string
}

// locker makes a client of the lock with cfg's servers, closed at the end of the check.
func (e *conformEnv) locker(timeout time.Duration) (lockimpl.Locker, error) {
	cfg := e.cfg
	cfg.Timeout = timeout
	l, err := e.impl.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("start a client of %s: %w", e.impl.Name, err)
	}
	e.lockers = append(e.lockers, l)
	return l, nil
}

// clients makes n clients of the lock with the default timeout.
func (e *conformEnv) clients(n int) ([]lockimpl.Locker, error) {
	out := make([]lockimpl.Locker, n)
	for i := range out {
		l, err := e.locker(lockimpl.DefaultTimeout)
		if err != nil {
			return nil, err
		}
		out[i] = l
	}
	return out, nil
}

func (e *conformEnv) close() {
	for _, l := range e.lockers {
		l.Close()
	}
	e.lockers = nil
}

// Conform runs the conformance checks on impl, each on servers of its own started on b.
// log receives what client processes print. A check that cannot be run (its servers do
// not start) ends Conform with an error.
func Conform(ctx context.Context, b cluster.Backend, impl lockimpl.Impl, log io.Writer) ([]Check, error) {
	topo, err := conformTopology(impl)
	if err != nil {
		return nil, err
	}
	var out []Check
	for _, c := range conformances() {
		ch := Check{Name: c.name, Asks: c.asks}
		if c.skip != nil {
			if why := c.skip(impl); why != "" {
				ch.Status, ch.Detail = CheckSkipped, why
				out = append(out, ch)
				continue
			}
		}
		failure, err := runConformance(ctx, b, topo, impl, log, c)
		if err != nil {
			return out, fmt.Errorf("conformance check %s of %s: %w", c.name, impl.Name, err)
		}
		ch.Status = CheckPassed
		if failure != "" {
			ch.Status, ch.Detail = CheckFailed, failure
		}
		out = append(out, ch)
	}
	return out, nil
}

func runConformance(ctx context.Context, b cluster.Backend, topo cluster.Topology, impl lockimpl.Impl, log io.Writer, c conformance) (string, error) {
	cl, err := cluster.Start(ctx, b, topo, cluster.Options{})
	if err != nil {
		return "", err
	}
	defer cl.Discard()
	ep, err := cl.Endpoints(0)
	if err != nil {
		return "", err
	}
	e := &conformEnv{impl: impl, cluster: cl, key: "conform-" + c.name,
		cfg: lockimpl.Config{Addrs: ep.Lock, Sentinels: ep.Sentinels, Master: ep.Master, Cluster: ep.Cluster, Via: ep.Via, Access: ep.Access, Log: log}}
	defer e.close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return c.run(ctx, e)
}

// conformTopology is the smallest topology impl runs on.
func conformTopology(impl lockimpl.Impl) (cluster.Topology, error) {
	switch impl.Topology {
	case cluster.Single:
		return cluster.Topology{Kind: cluster.Single}, nil
	case cluster.Nodes, cluster.Etcd, cluster.ZooKeeper:
		return cluster.Topology{Kind: impl.Topology, Nodes: 3}, nil
	}
	return cluster.Topology{}, fmt.Errorf("%s runs on topology %q, which the conformance checks do not start", impl.Name, impl.Topology)
}

// outcome names an operation's outcome for a failure's words.
func outcome(err error) string {
	switch lockimpl.Classify(err) {
	case histories.OK:
		return "ok"
	case histories.Fail:
		return "a definite refusal (" + err.Error() + ")"
	}
	return "unknown (" + err.Error() + ")"
}

func checkExclusion(ctx context.Context, e *conformEnv) (string, error) {
	ls, err := e.clients(2)
	if err != nil {
		return "", err
	}
	a, b := ls[0], ls[1]
	lease, err := a.Acquire(ctx, e.key, 10*time.Second)
	if err != nil {
		return "the first acquire of a free lock answered " + outcome(err), nil
	}
	if _, err := b.Acquire(ctx, e.key, 10*time.Second); lockimpl.Classify(err) != histories.Fail {
		return "a second client's acquire of the held lock answered " + outcome(err) + ", not a definite refusal", nil
	}
	if err := a.Release(ctx, lease); err != nil {
		return "the holder's release answered " + outcome(err), nil
	}
	got, err := b.Acquire(ctx, e.key, 10*time.Second)
	if err != nil {
		return "after the release, another client's acquire answered " + outcome(err), nil
	}
	if err := b.Release(ctx, got); err != nil {
		return "the second holder's release answered " + outcome(err), nil
	}
	return "", nil
}

// awaitGrant tries l's acquire of key every 20 ms until it is granted or within has
// passed: the lease, or "" with how the last try ended.
func awaitGrant(ctx context.Context, l lockimpl.Locker, key string, ttl, within time.Duration) (lockimpl.Lease, bool, string) {
	deadline := time.Now().Add(within)
	last := "no try"
	for {
		lease, err := l.Acquire(ctx, key, ttl)
		if err == nil {
			return lease, true, ""
		}
		last = outcome(err)
		if time.Now().After(deadline) || ctx.Err() != nil {
			return lockimpl.Lease{}, false, last
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// expiryWithin is how long after its TTL a lease may take to be granted again: the
// server's expiry cycle, a client process's round trips, etcd's lease revocation.
const expiryWithin = 3 * time.Second

func checkOwnership(ctx context.Context, e *conformEnv) (string, error) {
	ls, err := e.clients(3)
	if err != nil {
		return "", err
	}
	a, b, c := ls[0], ls[1], ls[2]
	stale, err := a.Acquire(ctx, e.key, conformTTL)
	if err != nil {
		return "the first acquire of a free lock answered " + outcome(err), nil
	}
	fresh, ok, last := awaitGrant(ctx, b, e.key, 30*time.Second, conformTTL+expiryWithin)
	if !ok {
		return fmt.Sprintf("a lease of %s was not granted to another client within %s of its TTL: the last acquire answered %s", conformTTL, expiryWithin, last), nil
	}
	if !e.impl.NoExtend {
		if _, err := a.Extend(ctx, stale, 30*time.Second); err == nil {
			return "the expired holder's extend answered ok while another client held the lock", nil
		}
	}
	if err := a.Release(ctx, stale); err == nil {
		// A release that answers ok is harmless only if it left the new holder's lock alone.
		if _, err := c.Acquire(ctx, e.key, time.Second); err == nil {
			return "the expired holder's release freed the new holder's lock: a third client was granted it", nil
		}
	}
	if _, err := c.Acquire(ctx, e.key, time.Second); lockimpl.Classify(err) != histories.Fail {
		return "after the expired holder's release and extend, a third client's acquire answered " + outcome(err) + ", not a definite refusal", nil
	}
	if err := b.Release(ctx, fresh); err != nil {
		return "the new holder's release answered " + outcome(err) + " after the expired holder's release and extend", nil
	}
	return "", nil
}

func checkExpiry(ctx context.Context, e *conformEnv) (string, error) {
	ls, err := e.clients(2)
	if err != nil {
		return "", err
	}
	a, b := ls[0], ls[1]
	if _, err := a.Acquire(ctx, e.key, conformTTL); err != nil {
		return "the first acquire of a free lock answered " + outcome(err), nil
	}
	// Gone without a release: a crash. A renewing lock's renewal ends with its client.
	a.Close()
	if _, ok, last := awaitGrant(ctx, b, e.key, 10*time.Second, conformTTL+expiryWithin); !ok {
		return fmt.Sprintf("a lease of %s whose holder closed without releasing was not granted again within %s of its TTL: the last acquire answered %s", conformTTL, expiryWithin, last), nil
	}
	return "", nil
}

// unknownTimeout is the clients' command timeout in checkUnknown: short, so that an
// acquire sent to a paused server gives up soon.
const unknownTimeout = 300 * time.Millisecond

func checkUnknown(ctx context.Context, e *conformEnv) (string, error) {
	a, err := e.locker(unknownTimeout)
	if err != nil {
		return "", err
	}
	b, err := e.locker(lockimpl.DefaultTimeout)
	if err != nil {
		return "", err
	}
	// A lease taken and released first opens the client's connections, so that the
	// acquire below reaches the paused servers' sockets instead of stalling in a dial or
	// a handshake: the servers then run it when they resume.
	warm, err := a.Acquire(ctx, e.key+"-warm", conformTTL)
	if err != nil {
		return "an acquire of a free lock answered " + outcome(err), nil
	}
	if err := a.Release(ctx, warm); err != nil {
		return "the holder's release answered " + outcome(err), nil
	}
	for _, n := range e.cluster.Lock {
		if err := n.Pause(ctx); err != nil {
			return "", err
		}
	}
	_, acqErr := a.Acquire(ctx, e.key, conformTTL)
	var resumeErr error
	for _, n := range e.cluster.Lock {
		resumeErr = errors.Join(resumeErr, n.Resume(ctx))
	}
	if resumeErr != nil {
		return "", resumeErr
	}
	switch lockimpl.Classify(acqErr) {
	case histories.OK:
		return "an acquire answered ok while every lock server was paused", nil
	case histories.Fail:
		return "an acquire that no server answered was reported as " + outcome(acqErr) + ": the servers may grant it when they resume, so only unknown is true", nil
	}
	// The paused servers now run the acquire they queued: the lease it took, owned by no
	// one who knows, must end by its TTL.
	if _, ok, last := awaitGrant(ctx, b, e.key, 10*time.Second, conformTTL+expiryWithin); !ok {
		return fmt.Sprintf("after an acquire of unknown outcome, the lock was not granted again within %s of its TTL: the last acquire answered %s", expiryWithin, last), nil
	}
	return "", nil
}
