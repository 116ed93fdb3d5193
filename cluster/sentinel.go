package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/sentinel"
)

// MasterName is the name under which the Sentinels of a replicated topology monitor its
// primary; clients give it to go-redis's failover client.
const MasterName = "locklab"

// Sentinel settings of a replicated topology.
const (
	sentinelCount  = 3
	sentinelQuorum = 2 // a majority of three: one Sentinel alone can neither judge nor promote
	// SentinelDownAfter is how long the primary must stay silent before the first Sentinel
	// thinks it down: low, so that a failover takes about two seconds, but well above the
	// pauses a loaded test machine makes, so that a healthy primary is never failed over.
	SentinelDownAfter = 500 * time.Millisecond
	// sentinelStagger is how much longer each further Sentinel waits (800 ms, 1.1 s), so
	// that one of them always judges first and the others vote for it. With equal timings
	// all three can start an election at once and each vote for itself: 1 of 45 failovers
	// did, and Sentinel retries a split vote only after twice the failover-timeout.
	sentinelStagger = 300 * time.Millisecond
	// SteadyFailoverTimeout is the Sentinels' failover-timeout while no failover is wanted.
	// It is longer than any run because Sentinel also uses it as the time after which it
	// "fixes" a replica whose master address differs from the primary's own address, which
	// is what a replica replicating through its proxy link looks like: with a short
	// timeout Sentinel would re-point every proxied replica straight at the primary.
	SteadyFailoverTimeout = 2 * time.Hour
	// FailoverTimeout is the failover-timeout while a failover is wanted (the failover
	// fault sets it): an election that ends in a split vote is retried after twice this.
	FailoverTimeout = 2 * time.Second
	// sentinelPingPeriod is how often a Sentinel pings each node, and how long it waits
	// before reconnecting a broken link; Sentinel's default is 1 s. Longer than
	// SentinelDownAfter, the default makes a Sentinel that has just switched to a new
	// primary judge it down before it has even reconnected to it, and start a second,
	// needless failover: 10 of 20 failovers under load did, none of 20 with 100 ms.
	sentinelPingPeriod = 100 * time.Millisecond
	failoverPingPeriod = 300 * time.Millisecond // see PrepareFailover; still below SentinelDownAfter
	// tiltPeriod is how long a Sentinel stays in TILT mode after a stall (SENTINEL_TILT_PERIOD), starting no failover.
	tiltPeriod = 30 * time.Second
	// While Sentinels must learn the topology quickly (after a start, a re-registration or
	// a heal) they say hello (how they find each other) and ask the nodes for INFO (how they
	// find replicas) every 100 ms instead of Sentinel's defaults, 2 s and 10 s.
	quickPeriod          = 100 * time.Millisecond
	defaultHelloPeriod   = 2 * time.Second
	defaultInfoPeriod    = 10 * time.Second
	sentinelPollInterval = 20 * time.Millisecond
	promotionPoll        = 5 * time.Millisecond // AwaitPrimary: a held client waits on it
	sentinelAdminTimeout = time.Second
)

// SentinelConfig describes one Sentinel to start (package sentinel).
type SentinelConfig = sentinel.Config

// SentinelBackend is a backend that can also run Redis Sentinel.
type SentinelBackend interface {
	StartSentinel(ctx context.Context, cfg sentinel.Config) (Node, error)
}

var _ SentinelBackend = (*ProcessBackend)(nil)

// StartSentinel starts a Redis Sentinel as a node of the backend: the same redis-server
// binary in sentinel mode, in its own process group with Pdeathsig, stopped by Stop and by
// the backend's Close like every server. Sentinel needs a writable configuration file as
// its first argument: it saves what it learns there.
func (b *ProcessBackend) StartSentinel(ctx context.Context, cfg sentinel.Config) (Node, error) {
	cfg.AnnounceIP = "127.0.0.1" // every server of the process backend is on loopback
	text, err := cfg.ConfigFile()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, errBackendClosed
	}
	dir, err := os.MkdirTemp(b.root, cfg.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("make directory for %s: %w", cfg.Name, err)
	}
	conf := filepath.Join(dir, "sentinel.conf")
	n, err := b.startOnFreePort(ctx, func(port int) (*ProcessNode, error) {
		// A fresh file for each attempt: a Sentinel that started rewrote it.
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, fmt.Errorf("write config of %s: %w", cfg.Name, err)
		}
		n := newProcessNode(b, cfg.Name, dir, port, nil, nil)
		n.args = append([]string{conf, "--sentinel"}, n.args...)
		return n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("start sentinel %s: %w", cfg.Name, err)
	}
	return n, nil
}

// startSentinels starts the topology's Sentinels, monitoring primary, and waits until they
// know each other and every replica.
func (c *Cluster) startSentinels(ctx context.Context, sb SentinelBackend, primary Node) error {
	sentinels, err := startAll(sentinelCount, func(i int) (Node, error) {
		return sb.StartSentinel(ctx, sentinel.Config{
			Name: fmt.Sprintf("sentinel-%d", i), Master: MasterName, MasterAddr: PeerAddr(primary),
			Quorum: sentinelQuorum, DownAfter: downAfter(i), FailoverTimeout: SteadyFailoverTimeout,
			ParallelSyncs: len(c.Lock),
		})
	})
	c.Sentinels = append(c.Sentinels, sentinels...)
	if err != nil {
		return err
	}
	err = c.onSentinels(ctx, func(ctx context.Context, _ int, sc *redis.SentinelClient) error {
		return sentinel.Debug(ctx, sc, "ping-period", sentinelPingPeriod)
	})
	if err != nil {
		return err
	}
	return c.AwaitSentinels(ctx, primary)
}

// downAfter is Sentinel i's down-after-milliseconds (see sentinelStagger).
func downAfter(i int) time.Duration { return SentinelDownAfter + time.Duration(i)*sentinelStagger }

// onSentinels runs f on every Sentinel at once (i: its index in c.Sentinels) and joins
// their errors.
func (c *Cluster) onSentinels(ctx context.Context, f func(ctx context.Context, i int, sc *redis.SentinelClient) error) error {
	errs := make([]error, len(c.Sentinels))
	var wg sync.WaitGroup
	for i, s := range c.Sentinels {
		wg.Go(func() {
			sc := sentinel.Client(s.Addr(), sentinelAdminTimeout)
			defer sc.Close()
			if err := f(ctx, i, sc); err != nil {
				errs[i] = fmt.Errorf("%s (%s): %w", s.Name(), s.Addr(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SentinelAddrs are the Sentinels' addresses, in order.
func (c *Cluster) SentinelAddrs() []string {
	addrs := make([]string, len(c.Sentinels))
	for i, s := range c.Sentinels {
		addrs[i] = s.Addr()
	}
	return addrs
}

// MasterAddrs is what each Sentinel answers to SENTINEL GET-MASTER-ADDR-BY-NAME, in the
// order of c.Sentinels; "" for a Sentinel that did not answer with an address.
func (c *Cluster) MasterAddrs(ctx context.Context) []string {
	addrs := make([]string, len(c.Sentinels))
	_ = c.onSentinels(ctx, func(ctx context.Context, i int, sc *redis.SentinelClient) error {
		hp, err := sc.GetMasterAddrByName(ctx, MasterName).Result()
		if err == nil && len(hp) == 2 {
			addrs[i] = net.JoinHostPort(hp[0], hp[1])
		}
		return err
	})
	return addrs
}

// Primary is the data node a majority of the Sentinels name as the master: the node
// clients are sent to. It fails while the Sentinels disagree (during a failover).
func (c *Cluster) Primary(ctx context.Context) (Node, error) {
	if c.Topology.Kind != Replicated {
		return nil, fmt.Errorf("topology %s has no Sentinels to name a primary", c.Topology)
	}
	addrs := c.MasterAddrs(ctx)
	votes := map[string]int{}
	for _, a := range addrs {
		if a != "" {
			votes[a]++
		}
	}
	for a, v := range votes {
		if v > len(c.Sentinels)/2 {
			if n := c.NodeByAddr(a); n != nil {
				return n, nil
			}
			return nil, fmt.Errorf("sentinels name %s as master, which is no data node of the cluster", a)
		}
	}
	return nil, fmt.Errorf("no majority of sentinels names a master (they answer %q)", addrs)
}

// AwaitPrimary waits until a Sentinel names a master other than not (nil: any) and that
// node says it is a master, and returns that node: the first moment a client can be
// sent to the new primary. The leading Sentinel knows first; the others learn it from
// its hellos, within a hello period. Bounded by ctx.
func (c *Cluster) AwaitPrimary(ctx context.Context, not Node) (Node, error) {
	var last string
	for {
		last = ""
		addrs := c.MasterAddrs(ctx)
		for _, a := range addrs {
			n := c.NodeByAddr(a)
			if n == nil || n == not {
				continue
			}
			role, err := c.Role(ctx, n)
			if err == nil && role == "master" {
				return n, nil
			}
			last = fmt.Sprintf("a sentinel names %s, which says role %q (%v)", n.Name(), role, err)
		}
		if last == "" {
			last = fmt.Sprintf("sentinels answer %q", addrs)
		}
		if !sleepCtx(ctx, promotionPoll) {
			// ctx is done: a last look of its own says what each Sentinel saw.
			vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*sentinelAdminTimeout)
			defer cancel()
			return nil, fmt.Errorf("no sentinel names a new master: %w (last: %s; the sentinels see: %s)", ctx.Err(), last, c.SentinelViews(vctx))
		}
	}
}

// AwaitPromotion is AwaitPrimary within a bound, twice, each once no Sentinel tilts (tiltPeriod).
func (c *Cluster) AwaitPromotion(ctx context.Context, old Node, within time.Duration) (n Node, err error) {
	for try := range 2 {
		if _, terr := c.AwaitNoTilt(ctx); try == 1 && terr != nil {
			return nil, fmt.Errorf("%w; then %w", err, terr)
		}
		wctx, cancel := context.WithTimeout(ctx, within)
		n, err = c.AwaitPrimary(wctx, old)
		if cancel(); err == nil || ctx.Err() != nil {
			break
		}
	}
	return n, err
}

// PrepareFailover readies the Sentinels for a failover that is wanted now: a short
// failover-timeout, and hellos every 100 ms so that the leader's promotion reaches the
// other Sentinels at once instead of at its next hello, up to 2 s later. SteadySentinels
// undoes it once the failover is over. Pings every 300 ms: the leader takes a replica whose
// INFO is younger than 5 pings and asks a cut replica for INFO each second, so at 100 ms
// half of its looks found no candidate and waited 4 s (none promoted in 40 s, under load).
//
// linkDown is how long the replicas' links to the dead primary have been down (cut before
// it died; 0: not before). The leader takes only a replica whose link has been down less
// than ten down-afters plus the time it has judged the primary down: with a 500 ms
// down-after, a cut that came more than 5 s before the death (a container can take that
// long to die) ruled out every replica for good ("-failover-abort-no-good-slave" every 4 s,
// under load). The down-after rises by a ninth of linkDown and a second, so the cut counts.
func (c *Cluster) PrepareFailover(ctx context.Context, linkDown time.Duration) error {
	extra := time.Duration(0)
	if linkDown > 0 {
		extra = (linkDown + time.Second) / 9
	}
	return c.setSentinelPace(ctx, FailoverTimeout, quickPeriod, failoverPingPeriod, extra)
}

// SteadySentinels restores the Sentinels' pace while no failover is wanted (see
// SteadyFailoverTimeout).
func (c *Cluster) SteadySentinels(ctx context.Context) error {
	return c.setSentinelPace(ctx, SteadyFailoverTimeout, defaultHelloPeriod, sentinelPingPeriod, 0)
}

// setSentinelPace sets every Sentinel's failover-timeout, hello and ping periods, and
// down-after (its own, downAfter, plus extraDown).
func (c *Cluster) setSentinelPace(ctx context.Context, failoverTimeout, hello, ping, extraDown time.Duration) error {
	err := c.onSentinels(ctx, func(ctx context.Context, i int, sc *redis.SentinelClient) error {
		for _, kv := range [][2]string{
			{"failover-timeout", strconv.FormatInt(failoverTimeout.Milliseconds(), 10)},
			{"down-after-milliseconds", strconv.FormatInt((downAfter(i) + extraDown).Milliseconds(), 10)},
		} {
			if err := sc.Set(ctx, MasterName, kv[0], kv[1]).Err(); err != nil {
				return fmt.Errorf("sentinel set %s %s: %w", kv[0], kv[1], err)
			}
		}
		if err := sentinel.Debug(ctx, sc, "ping-period", ping); err != nil {
			return err
		}
		return sentinel.Debug(ctx, sc, "publish-period", hello)
	})
	if err != nil {
		return fmt.Errorf("pace the sentinels: %w", err)
	}
	return nil
}

// Reregister makes every Sentinel monitor primary as the master from now on, forgetting
// what it knew: what an operator does after promoting a replica by hand, so that clients
// asking the Sentinels find the new primary and the Sentinels never elect another one.
// It returns once every Sentinel names primary; the Sentinels find each other and the
// replicas again within AwaitSentinels.
func (c *Cluster) Reregister(ctx context.Context, primary Node) error {
	host, port, err := net.SplitHostPort(PeerAddr(primary))
	if err != nil {
		return err
	}
	err = c.onSentinels(ctx, func(ctx context.Context, i int, sc *redis.SentinelClient) error {
		if err := sc.Remove(ctx, MasterName).Err(); err != nil && !strings.Contains(err.Error(), "No such master") {
			return fmt.Errorf("sentinel remove: %w", err)
		}
		if err := sc.Monitor(ctx, MasterName, host, port, strconv.Itoa(sentinelQuorum)).Err(); err != nil {
			return fmt.Errorf("sentinel monitor: %w", err)
		}
		for _, kv := range [][2]string{
			{"down-after-milliseconds", strconv.FormatInt(downAfter(i).Milliseconds(), 10)},
			{"failover-timeout", strconv.FormatInt(SteadyFailoverTimeout.Milliseconds(), 10)},
			{"parallel-syncs", strconv.Itoa(len(c.Lock))},
		} {
			if err := sc.Set(ctx, MasterName, kv[0], kv[1]).Err(); err != nil {
				return fmt.Errorf("sentinel set %s: %w", kv[0], err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("re-register %s with the sentinels: %w", primary.Name(), err)
	}
	return nil
}

// AwaitSentinels waits until every Sentinel monitors primary as an up master and knows
// every other data node as its replica and the other Sentinels as peers, so that a
// failover can be agreed on.
func (c *Cluster) AwaitSentinels(ctx context.Context, primary Node) error {
	return c.AwaitSentinelsSee(ctx, func(ctx context.Context, sc *redis.SentinelClient) error {
		return sentinel.Ready(ctx, sc, MasterName, PeerAddr(primary), len(c.Lock)-1, len(c.Sentinels)-1)
	})
}

// AwaitSentinelsSee waits until check passes on every Sentinel. Sentinels find each other
// by hello messages, which they send every 2 s, and learn of the servers by asking for
// INFO every 10 s; the wait shortens both periods and restores them.
func (c *Cluster) AwaitSentinelsSee(ctx context.Context, check func(context.Context, *redis.SentinelClient) error) error {
	if err := c.setPeriods(ctx, quickPeriod, quickPeriod); err != nil {
		return err
	}
	var last error
	for {
		last = c.onSentinels(ctx, func(ctx context.Context, _ int, sc *redis.SentinelClient) error { return check(ctx, sc) })
		if last == nil {
			break
		}
		if !sleepCtx(ctx, sentinelPollInterval) {
			return fmt.Errorf("sentinels: %w (last: %v)", ctx.Err(), last)
		}
	}
	return c.setPeriods(ctx, defaultHelloPeriod, defaultInfoPeriod)
}

// AwaitFailoverEnd waits until every Sentinel monitors primary as an up master with no
// failover in progress. After it promotes a replica, the leading Sentinel re-points the
// other replicas and declares the failover over only once each reports the new master:
// a replica re-pointed elsewhere meanwhile (through its link) or an old primary restarted
// meanwhile holds the failover up for Sentinel's reconfiguration timeout, 10 s. Heal
// after this.
func (c *Cluster) AwaitFailoverEnd(ctx context.Context, primary Node) error {
	var last error
	for {
		last = c.onSentinels(ctx, func(ctx context.Context, _ int, sc *redis.SentinelClient) error {
			_, err := sentinel.Monitors(ctx, sc, MasterName, PeerAddr(primary))
			return err
		})
		if last == nil {
			return nil
		}
		if !sleepCtx(ctx, sentinelPollInterval) {
			return fmt.Errorf("failover to %s not over: %w (last: %v)", primary.Name(), ctx.Err(), last)
		}
	}
}

// setPeriods sets how often every Sentinel says hello and asks for INFO (SENTINEL DEBUG,
// Redis 7.0 or later).
func (c *Cluster) setPeriods(ctx context.Context, hello, info time.Duration) error {
	return c.onSentinels(ctx, func(ctx context.Context, _ int, sc *redis.SentinelClient) error {
		if err := sentinel.Debug(ctx, sc, "publish-period", hello); err != nil {
			return err
		}
		return sentinel.Debug(ctx, sc, "info-period", info)
	})
}

// sleepCtx waits d; it reports false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// AwaitNoTilt waits until no Sentinel is in TILT mode. A Sentinel whose timer ran more
// than 2 s late (a machine so busy that it got no CPU for that long, as when a check
// took every core while the run's servers waited to go live) enters TILT and starts no
// failover for 30 s: a failover fault injected meanwhile would find no new primary.
// Bounded by ctx; it returns at once when no Sentinel tilts. It reports how long it waited.
func (c *Cluster) AwaitNoTilt(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	for {
		err := c.onSentinels(ctx, func(ctx context.Context, i int, sc *redis.SentinelClient) error {
			tilt, err := sentinel.Tilts(ctx, sc)
			if err != nil {
				return fmt.Errorf("sentinel-%d: info sentinel: %w", i, err)
			}
			if tilt {
				return fmt.Errorf("sentinel-%d is in TILT mode", i)
			}
			return nil
		})
		if err == nil {
			return time.Since(start), nil
		}
		if !sleepCtx(ctx, sentinelPollInterval) {
			return time.Since(start), fmt.Errorf("sentinels still tilting after %s (Sentinel leaves TILT mode %s after a stall): %w",
				time.Since(start).Round(time.Millisecond), tiltPeriod, err)
		}
	}
}

// SentinelViews says what each Sentinel sees of the master and its replicas: the flags,
// failover state and replicas' links that explain why no promotion came.
func (c *Cluster) SentinelViews(ctx context.Context) string {
	views := make([]string, len(c.Sentinels))
	_ = c.onSentinels(ctx, func(ctx context.Context, i int, sc *redis.SentinelClient) error {
		views[i] = c.Sentinels[i].Name() + ": " + sentinel.View(ctx, sc, MasterName)
		return nil
	})
	return strings.Join(views, "; ")
}
