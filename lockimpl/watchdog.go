package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// watchdogImpls lists this file's implementations.
func watchdogImpls() []Impl {
	return []Impl{
		{
			Name: "watchdog",
			Description: "setnx plus a background renewal, as Redisson's lock watchdog: every ttl/3 a checked PEXPIRE " +
				"back to the full ttl until release; a refused renewal loses the lease",
			Topology: "single",
			Steps:    []string{StepGranted},
			Renews:   true,
			New:      newWatchdog,
		},
	}
}

// watchdog is setnx whose leases are renewed in the background while the holder works,
// as Redisson's lock watchdog does: every lease it grants (by Acquire or Extend) is
// kept at its full ttl by a compare-and-PEXPIRE every ttl/3, until Release, a refused
// renewal (the key is not ours any more), the deadline passing without a renewal that
// is known to have worked, or Close. Current tells the holder which of these it is.
type watchdog struct {
	lock *redisLock
	wg   sync.WaitGroup // every renewal goroutine ever started, for Close

	mu       sync.Mutex
	renewals map[string]*renewal // by token, while the watch lives
	closed   bool
	crashed  bool // Crash closed the client: Close has nothing left to close
}

var (
	_ Locker  = (*watchdog)(nil)
	_ Renewer = (*watchdog)(nil)
	_ Crasher = (*watchdog)(nil)
)

// renewal is the watch over one lease.
type renewal struct {
	key, token string
	ctx        context.Context // cancelled to stop the goroutine and abort its command
	cancel     context.CancelFunc
	done       chan struct{} // closed when the goroutine has exited

	// op makes the renewals and Extend of this lease one command at a time, so the
	// server applies them in the order their deadlines are recorded.
	op sync.Mutex

	// mu guards the state; never held across a command, so Current answers at once.
	mu       sync.Mutex
	ttl      time.Duration
	deadline time.Time // by the Locker's Clock: last known-good renewal's send time + ttl
	lost     bool      // refused or past its deadline; no renewal undoes it, only an Extend (a new watch)
}

// newWatchdog builds the watchdog lock on setnx's single-instance lock.
func newWatchdog(cfg Config) (Locker, error) {
	l, err := newRedisLock("watchdog", cfg, false, acquireSetNX, releaseChecked)
	if err != nil {
		return nil, err
	}
	return &watchdog{lock: l, renewals: map[string]*renewal{}}, nil
}

// Acquire implements Locker: setnx's acquire (with its StepGranted), then the watch
// starts. A client that crashes at the step never starts one, as its watchdog would
// die with it.
func (w *watchdog) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	lease, err := w.lock.Acquire(ctx, key, ttl)
	if err != nil {
		return Lease{}, err
	}
	if !w.watch(lease, ttl.Truncate(time.Millisecond)) {
		return Lease{}, fmt.Errorf("watchdog: acquire %q: closed while acquiring; the lock was granted and stays until its ttl runs out", key)
	}
	return lease, nil
}

// watch starts renewing lease (replacing an older watch of it); false once closed.
func (w *watchdog) watch(lease Lease, ttl time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	if old := w.renewals[lease.Token]; old != nil {
		old.cancel() // already lost; its goroutine is exiting, and w.wg waits for it
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &renewal{
		key: lease.Key, token: lease.Token,
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
		ttl: ttl, deadline: lease.Deadline,
	}
	w.renewals[lease.Token] = r
	w.wg.Go(func() { w.renewLoop(r) })
	return true
}

// renewLoop renews r every ttl/3 until it is stopped or lost. A watch that ends leaves
// the map (unless a newer watch of the token replaced it), so that nothing is kept for
// a lease nobody renews.
func (w *watchdog) renewLoop(r *renewal) {
	defer close(r.done)
	defer func() {
		w.mu.Lock()
		if w.renewals[r.token] == r {
			delete(w.renewals, r.token)
		}
		w.mu.Unlock()
	}()
	for {
		r.mu.Lock()
		period := max(r.ttl/3, time.Millisecond)
		r.mu.Unlock()
		timer := time.NewTimer(period)
		select {
		case <-r.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if !w.renew(r) {
			return
		}
	}
}

// renew sends one renewal; false when the watch is over. A renewal of unknown outcome
// (timeout, connection error) keeps the last known deadline, since the key may or may
// not have been reset, and is tried again at the next tick, until that deadline passes:
// then the lease is lost, as we cannot know it is still ours.
func (w *watchdog) renew(r *renewal) bool {
	r.op.Lock()
	defer r.op.Unlock()
	if r.ctx.Err() != nil {
		return false
	}
	r.mu.Lock()
	ttl, deadline, lost := r.ttl, r.deadline, r.lost
	r.mu.Unlock()
	sent := w.lock.clock.Now()
	if lost || !sent.Before(deadline) {
		r.lose()
		return false
	}
	n, err := w.lock.scripts.extend.Run(r.ctx, w.lock.client, []string{r.key}, r.token, ttl.Milliseconds()).Int64()
	switch {
	case err != nil:
		return true
	case n == 0:
		r.lose()
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.lost { // Current may have seen the deadline pass meanwhile: lost stays lost
		r.deadline = sent.Add(ttl)
	}
	return !r.lost
}

// lose marks the lease lost for good.
func (r *renewal) lose() {
	r.mu.Lock()
	r.lost = true
	r.mu.Unlock()
}

// Current implements Renewer: the lease with the deadline of its last renewal that is
// known to have worked, and whether it is still ours as far as the watchdog knows.
// False for a lease that was refused a renewal, whose deadline passed, that was
// released, or that this locker does not watch.
func (w *watchdog) Current(lease Lease) (Lease, bool) {
	w.mu.Lock()
	r := w.renewals[lease.Token]
	w.mu.Unlock()
	if r == nil || r.key != lease.Key {
		return lease, false
	}
	now := w.lock.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.lost && !now.Before(r.deadline) {
		r.lost = true // latched, so that a renewal landing later cannot revive a belief given up
		r.cancel()
	}
	lease.Deadline = r.deadline
	lease.Validity = r.deadline.Sub(now)
	return lease, !r.lost
}

// Release implements Locker: the watch stops first, and its goroutine has exited before
// the compare-and-delete is sent. A renewal in flight is aborted; if it still reaches
// the server, its compare keeps it from touching anything but our own key.
func (w *watchdog) Release(ctx context.Context, lease Lease) error {
	w.mu.Lock()
	r := w.renewals[lease.Token]
	delete(w.renewals, lease.Token)
	w.mu.Unlock()
	if r != nil {
		r.cancel()
		<-r.done
	}
	return w.lock.Release(ctx, lease)
}

// Extend implements Locker as setnx does. Success sets the watch's deadline and ttl
// (renewals then keep the new ttl), or starts a new watch when the old one was over: a
// lease Extend grants is renewed like one Acquire grants. ErrNotHeld ends the watch.
// An unknown outcome may have shortened the key's expiry to ttl, so the deadline
// becomes the earlier of the two.
func (w *watchdog) Extend(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error) {
	if _, err := CheckArgs(lease.Key, ttl); err != nil {
		return w.lock.Extend(ctx, lease, ttl) // refused before anything is sent
	}
	ttl = ttl.Truncate(time.Millisecond)
	w.mu.Lock()
	r := w.renewals[lease.Token]
	w.mu.Unlock()
	if r != nil {
		r.op.Lock()
		defer r.op.Unlock()
	}
	before := w.lock.clock.Now()
	ext, err := w.lock.Extend(ctx, lease, ttl)
	switch {
	case err == nil:
		if r == nil || !r.refresh(ext.Deadline, ttl) {
			w.watch(ext, ttl)
		}
	case errors.Is(err, ErrNotHeld):
		if r != nil {
			r.lose()
			r.cancel()
		}
	case r != nil:
		r.mu.Lock()
		if d := before.Add(ttl); d.Before(r.deadline) {
			r.deadline = d
		}
		r.mu.Unlock()
	}
	return ext, err
}

// refresh records a successful Extend; false when the watch was already over.
func (r *renewal) refresh(deadline time.Time, ttl time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost || r.ctx.Err() != nil {
		return false
	}
	r.deadline, r.ttl = deadline, ttl
	return true
}

// Crash implements Crasher: every watch stops without a release, and the client's
// connections close, as when its process dies.
func (w *watchdog) Crash() {
	w.mu.Lock()
	if w.crashed {
		w.mu.Unlock()
		return
	}
	w.closed, w.crashed = true, true
	for _, r := range w.renewals {
		r.cancel()
	}
	w.renewals = map[string]*renewal{}
	w.mu.Unlock()
	w.wg.Wait()
	_ = w.lock.Close() // a dead process's connections just end
}

// Close implements Locker: every watch stops, and its goroutine has exited, before the
// client closes.
func (w *watchdog) Close() error {
	w.mu.Lock()
	w.closed = true
	for _, r := range w.renewals {
		r.cancel()
	}
	w.renewals = map[string]*renewal{}
	crashed := w.crashed
	w.mu.Unlock()
	w.wg.Wait()
	if crashed {
		return nil
	}
	return w.lock.Close()
}
