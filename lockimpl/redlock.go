package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redlockImpls lists this file's implementations.
func redlockImpls() []Impl {
	return []Impl{
		{
			Name: "redlock",
			Description: "Redlock as the Redis docs describe it: SET NX PX on N independent nodes at once, " +
				"granted on a majority within the validity (ttl minus elapsed minus drift); release and extend on all nodes",
			Topology: "nodes",
			Steps:    []string{StepGranted},
			New:      newRedlock,
		},
	}
}

// redlock is the Redlock algorithm of the Redis documentation
// (https://redis.io/docs/latest/develop/use/patterns/distributed-locks/) over N
// independent nodes: the lock is ours when our token is on a majority of them.
//
// Acquire makes one attempt. The docs retry after a random delay; here the workload
// already retries after ErrNotAcquired, and a retry inside Acquire would hide from the
// history the attempts it makes.
type redlock struct {
	clients []*redis.Client
	quorum  int
	clock   Clock
	step    StepFunc
	timeout time.Duration // cfg.Timeout: per command of a release, and the cap of nodeTimeout
	scripts scripts
}

var _ Locker = (*redlock)(nil)

// newRedlock builds a Redlock client over cfg.Addrs, one client per node.
func newRedlock(cfg Config) (Locker, error) {
	cfg = cfg.WithDefaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("redlock: needs at least one node address")
	}
	l := &redlock{
		quorum:  len(cfg.Addrs)/2 + 1,
		clock:   cfg.Clock,
		step:    cfg.Step,
		timeout: cfg.Timeout,
		scripts: newScripts(),
	}
	for _, addr := range cfg.Addrs {
		l.clients = append(l.clients, cfg.Client(addr))
	}
	return l, nil
}

// redlockDrift is the allowance for the clocks of the client and the nodes running at
// different rates, as in the docs' reference implementations: 1% of the ttl plus 2 ms
// for the granularity of Redis's expiry.
func redlockDrift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// nodeTimeout bounds each node's SET (and extend) so that a dead or slow node cannot
// eat the validity: the docs want a timeout much smaller than the ttl (5-50 ms for
// 10 s). A tenth of the ttl keeps at least ~90% of it for the holder, as all nodes are
// asked at once, while leaving room for the round trips of a loaded test machine with
// short ttls; cfg.Timeout caps it, and 1 ms is the floor so that a tiny ttl still sends.
func (l *redlock) nodeTimeout(ttl time.Duration) time.Duration {
	return max(min(l.timeout, ttl/10), time.Millisecond)
}

// nodeReply is one node's answer: yes when it did what was asked (set, deleted, extended),
// no when it definitely refused; err when the outcome is unknown.
type nodeReply struct {
	yes bool
	err error
}

// onAll runs op on every node at once, each bounded by timeout, and waits for all.
func (l *redlock) onAll(ctx context.Context, timeout time.Duration, op func(context.Context, *redis.Client) (bool, error)) []nodeReply {
	replies := make([]nodeReply, len(l.clients))
	var wg sync.WaitGroup
	for i, c := range l.clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			yes, err := op(ctx, c)
			if err != nil {
				err = fmt.Errorf("node %s: %w", c.Options().Addr, err)
			}
			replies[i] = nodeReply{yes: yes, err: err}
		})
	}
	wg.Wait()
	return replies
}

// countReplies is how many replies said yes, and how many had an unknown outcome, with their
// errors.
func countReplies(replies []nodeReply) (yes, unknown int, errs []error) {
	for _, r := range replies {
		switch {
		case r.err != nil:
			unknown++
			errs = append(errs, r.err)
		case r.yes:
			yes++
		}
	}
	return yes, unknown, errs
}

// grantedBy is the indices of the nodes that said yes.
func grantedBy(replies []nodeReply) []int {
	var nodes []int
	for i, r := range replies {
		if r.err == nil && r.yes {
			nodes = append(nodes, i)
		}
	}
	return nodes
}

// redlockSetNX is SET key token NX PX ttl: yes when granted.
func redlockSetNX(key, token string, ttl time.Duration) func(context.Context, *redis.Client) (bool, error) {
	return func(ctx context.Context, c *redis.Client) (bool, error) {
		err := c.Do(ctx, "SET", key, token, "NX", "PX", ttl.Milliseconds()).Err()
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return err == nil, err
	}
}

// redlockScript runs a compare-and-act script: yes when it acted (the key held our token).
func redlockScript(s *redis.Script, key string, args ...any) func(context.Context, *redis.Client) (bool, error) {
	return func(ctx context.Context, c *redis.Client) (bool, error) {
		n, err := s.Run(ctx, c, []string{key}, args...).Int64()
		return n == 1, err
	}
}

// Acquire implements Locker: one Redlock attempt. The deadline is on cfg.Clock, read just
// before the first SET was sent; elapsed time is measured on the monotonic clock, which
// a skewed or jumping client clock cannot distort.
func (l *redlock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	ttl, err := CheckArgs(key, ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("redlock: acquire: %w", err)
	}
	token, err := NewToken()
	if err != nil {
		return Lease{}, fmt.Errorf("redlock: acquire %q: %w", key, err)
	}
	start := l.clock.Now()
	sent := time.Now()
	sets := l.onAll(ctx, l.nodeTimeout(ttl), redlockSetNX(key, token, ttl))
	validity := ttl - time.Since(sent) - redlockDrift(ttl)
	granted, _, _ := countReplies(sets)
	if granted >= l.quorum && validity > 0 {
		if err := CallStep(ctx, l.step, StepGranted); err != nil {
			return Lease{}, fmt.Errorf("redlock: acquire %q: %w", key, err)
		}
		// The docs' validity counts from the end of the attempt; on cfg.Clock that
		// is start + elapsed + validity = start + ttl - drift, which never overstates
		// what any node granted (each counted its ttl from later than start).
		return Lease{
			Key:      key,
			Token:    token,
			Deadline: start.Add(ttl - redlockDrift(ttl)),
			Validity: ttl - redlockDrift(ttl) - time.Since(sent), // after the step, which may have been slow
			Nodes:    grantedBy(sets),
		}, nil
	}

	why := fmt.Sprintf("granted by %d of %d nodes, %d needed", granted, len(l.clients), l.quorum)
	if granted >= l.quorum {
		why = fmt.Sprintf("granted by %d of %d nodes but the validity ran out (%s left)", granted, len(l.clients), validity)
	}
	// Unlock every node, also those that refused or did not answer, as the docs say.
	cleanup := l.onAll(ctx, l.timeout, redlockScript(l.scripts.release, key, token))
	var (
		mayHold int
		errs    []error
	)
	for i, set := range sets {
		switch {
		case set.err == nil && !set.yes:
			// Refused: our token never was on this node.
		case cleanup[i].err == nil && (set.err == nil || cleanup[i].yes):
			// Granted, then deleted (or gone already: a SET sent once cannot land
			// again); or a SET of unknown outcome whose key we found and deleted.
		default:
			// The cleanup failed, or found nothing after a SET of unknown outcome,
			// which may still be in flight on a connection go-redis gave up on and
			// land after the cleanup.
			mayHold++
			errs = append(errs, set.err, cleanup[i].err)
		}
	}
	if mayHold < l.quorum {
		// Our token may be left on fewer nodes than a majority (until its ttl), so
		// the lock is definitely not ours.
		return Lease{}, fmt.Errorf("redlock: acquire %q: %s: %w", key, why, ErrNotAcquired)
	}
	return Lease{}, fmt.Errorf("redlock: acquire %q: %s; our token may still be on %d nodes, a majority, so the lock might be ours or not: %w",
		key, why, mayHold, errors.Join(errs...))
}

// Release implements Locker: compare-and-delete on every node at once. It succeeds when
// our token was deleted on a majority: the lock was ours (nobody else can have held a
// majority meanwhile) and now is not. It is ErrNotHeld when the nodes that deleted it
// plus those that did not answer are fewer than a majority: the lock was not ours any
// more (an expired lease, or one that only a minority kept). Releasing with "deleted
// on at least one node" instead would report ok for a lease whose extend had failed
// on a majority, and the model allows release ok only to the holder. In between the
// outcome is unknown. Leftovers on a minority expire with their ttl.
func (l *redlock) Release(ctx context.Context, lease Lease) error {
	deleted, unknown, errs := countReplies(l.onAll(ctx, l.timeout, redlockScript(l.scripts.release, lease.Key, lease.Token)))
	switch {
	case deleted >= l.quorum:
		return nil
	case deleted+unknown < l.quorum:
		return fmt.Errorf("redlock: release %q: deleted on %d of %d nodes, %d no answer, %d needed: %w",
			lease.Key, deleted, len(l.clients), unknown, l.quorum, ErrNotHeld)
	}
	return fmt.Errorf("redlock: release %q: deleted on %d of %d nodes, %d needed, %d outcomes unknown: %w",
		lease.Key, deleted, len(l.clients), l.quorum, unknown, errors.Join(errs...))
}

// Extend implements Locker as the docs describe: compare-and-PEXPIRE on every node at
// once, with acquire's per-node timeout; extended when a majority did and the validity,
// recomputed from the extend's own elapsed time, is positive. ErrNotHeld when fewer
// than a majority can have our token; otherwise unknown: also when a majority extended
// but too slowly, as the key then is ours for a while but we cannot vouch for how long.
func (l *redlock) Extend(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error) {
	ttl, err := CheckArgs(lease.Key, ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("redlock: extend: %w", err)
	}
	start := l.clock.Now()
	sent := time.Now()
	extended, unknown, errs := countReplies(l.onAll(ctx, l.nodeTimeout(ttl), redlockScript(l.scripts.extend, lease.Key, lease.Token, ttl.Milliseconds())))
	validity := ttl - time.Since(sent) - redlockDrift(ttl)
	switch {
	case extended >= l.quorum && validity > 0:
		lease.Deadline = start.Add(ttl - redlockDrift(ttl))
		lease.Validity = validity
		return lease, nil
	case extended+unknown < l.quorum:
		return Lease{}, fmt.Errorf("redlock: extend %q: extended on %d of %d nodes, %d no answer, %d needed: %w",
			lease.Key, extended, len(l.clients), unknown, l.quorum, ErrNotHeld)
	case extended >= l.quorum:
		return Lease{}, fmt.Errorf("redlock: extend %q: extended on %d of %d nodes but the validity ran out (%s left): held for now, for how long unknown",
			lease.Key, extended, len(l.clients), validity)
	}
	return Lease{}, fmt.Errorf("redlock: extend %q: extended on %d of %d nodes, %d needed, %d outcomes unknown: %w",
		lease.Key, extended, len(l.clients), l.quorum, unknown, errors.Join(errs...))
}

// Close implements Locker.
func (l *redlock) Close() error {
	var errs []error
	for _, c := range l.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
