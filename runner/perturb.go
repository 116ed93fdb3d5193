package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
)

// Phases keeps the checks of runs that share a machine away from the runs in progress:
// any number of runs are live at once, and a check waits until none is (and holds new
// ones back), so that a checker using every core cannot slow the servers and clients of
// a live run into violations of their own making. A run is live from the start of its
// clock until its faults are healed: its servers start and stop, and its clients' lockers
// are built, outside. A matrix gives all its runs one Phases; nil coordinates nothing. A
// campaign has none: its checks run beside its runs (Slots), and a run a check disturbed
// shows the stall and is perturbed.
type Phases struct{ mu sync.RWMutex }

func (p *Phases) execute() func() {
	if p == nil {
		return func() {}
	}
	p.mu.RLock()
	return p.mu.RUnlock
}

func (p *Phases) check() func() {
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	return p.mu.Unlock
}

// Harness stalls: a run whose own machinery stalled is reported as perturbed.
const (
	stallTick  = 10 * time.Millisecond  // how often the monitor wakes
	pingEvery  = 100 * time.Millisecond // how often it pings every server directly
	stallLimit = 100 * time.Millisecond // a stall this long, or a quarter of the TTL, perturbs
)

// monitor measures how far the harness itself lags while clients run: how late its own
// timer fires (the Go runtime starved of CPU) and how long a direct PING to each server
// takes (a server starved of CPU), past what faults explain: servers a fault acts on are
// not pinged while it does. The largest lag is the run's stall.
type monitor struct {
	mu      sync.Mutex
	stall   time.Duration
	where   string
	stop    chan struct{}
	done    chan struct{}
	clients []*redis.Client
	names   []string
	faulted func(name string) bool
}

// startMonitor starts measuring the harness of cl until stop; faulted says whether a
// fault acts on a server right now.
func startMonitor(cl *cluster.Cluster, faulted func(name string) bool) *monitor {
	m := &monitor{stop: make(chan struct{}), done: make(chan struct{}), faulted: faulted}
	for _, n := range cl.Nodes() {
		if cluster.Consensus(cluster.KindOf(n)) {
			continue // a PING of the Redis servers (the store at least) measures the harness
		}
		m.clients = append(m.clients, redis.NewClient(cluster.AccessOf(n).Apply(&redis.Options{
			Addr: n.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
			PoolSize: 1, MaxRetries: -1, DisableIdentity: true,
		})))
		m.names = append(m.names, n.Name())
	}
	go m.run()
	return m
}

func (m *monitor) note(d time.Duration, where string) {
	m.mu.Lock()
	if d > m.stall {
		m.stall, m.where = d, where
	}
	m.mu.Unlock()
}

func (m *monitor) run() {
	defer close(m.done)
	next := time.Now().Add(stallTick)
	lastPing := time.Now()
	for {
		t := time.NewTimer(time.Until(next))
		select {
		case <-m.stop:
			t.Stop()
			return
		case now := <-t.C:
			m.note(now.Sub(next), "locklab's own goroutines")
		}
		if time.Since(lastPing) >= pingEvery {
			lastPing = time.Now()
			for i, c := range m.clients {
				if m.faulted(m.names[i]) {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				start := time.Now()
				err := c.Ping(ctx).Err()
				cancel()
				if err == nil && !m.faulted(m.names[i]) { // a fault that began meanwhile explains it
					m.note(time.Since(start), "redis "+m.names[i])
				}
			}
		}
		next = time.Now().Add(stallTick)
	}
}

// end stops the monitor and returns the largest stall and where it was.
func (m *monitor) end() (time.Duration, string) {
	close(m.stop)
	<-m.done
	for _, c := range m.clients {
		_ = c.Close()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stall, m.where
}

// perturbed is why a run with this stall is perturbed, or "".
func perturbed(stall time.Duration, where string, ttl time.Duration) string {
	limit := min(stallLimit, ttl/4)
	if stall <= limit {
		return ""
	}
	return fmt.Sprintf("the harness stalled for %s (%s), more than %s: the run's timing is not the plan's, and its verdicts say more about this machine than about the lock",
		stall.Round(time.Millisecond), where, limit)
}
