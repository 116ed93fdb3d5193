// Package failover is the failover fault: a primary dies (or, gracefully, hands over)
// and a replica is promoted, on Sentinel's replicated topology and on a Redis Cluster,
// with the cut that loses a grant at a point and the holds that make the loss count. The
// faults package schedules it like every other fault; it acts on the Scene it is given.
package failover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/replication"
	"github.com/locklab/locklab/cluster/sentinel"
	"github.com/locklab/locklab/faults/gates"
	"github.com/locklab/locklab/faults/spec"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/workload"
)

// Failover modes. On the replicated topology: sentinel (the default) and manual; on a
// Redis Cluster: cluster (the default), force and takeover.
const (
	Sentinel = "sentinel" // Redis Sentinel notices the dead primary and promotes a replica
	Manual   = "manual"   // the harness promotes a replica, as an operator would
	Cluster  = "cluster"  // the cluster's nodes judge the primary failed and its replica takes over
	Force    = "force"    // the harness sends CLUSTER FAILOVER FORCE to the replica: the primaries still vote
	Takeover = "takeover" // CLUSTER FAILOVER TAKEOVER: the replica takes the slots without a vote
	Graceful = "graceful" // CLUSTER FAILOVER to the replica of a live primary: it catches up, then takes over
)

// modes are the modes of each topology the failover fault runs on, the default first.
var modes = map[string][]string{
	cluster.Replicated:   {Sentinel, Manual},
	cluster.RedisCluster: {Cluster, Force, Takeover, Graceful},
}

// Scene is what a failover acts on: the run's servers, its client gates (the holds and
// the strike at a point), its recorder, how many clients it has, and the first lock key
// as the servers see it (on a Redis Cluster the failover strikes the primary of its slot).
type Scene struct {
	Cluster *cluster.Cluster
	Gates   *gates.Gates
	Rec     *histories.Recorder
	Clients int
	LockKey string
}

// Modes are the failover modes of a topology kind, the default first; nil where there is
// no failover.
func Modes(kind string) []string { return modes[kind] }

// Name, Description and Targets describe the failover fault kind for `locklab list`.
const (
	Name        = "failover"
	Description = "the primary of the replicated topology dies (kill -9) and a replica is promoted: mode sentinel (default) lets Redis Sentinel notice and elect one, " +
		"manual promotes the most up-to-date replica by hand and re-registers it with the Sentinels; the fault is in place once a Sentinel names the new primary. " +
		"On a Redis Cluster the primary serving the slot of the first lock key (k0) dies, and mode cluster (default) lets the other nodes judge it failed and its replica take over after the node timeout, " +
		"force and takeover send CLUSTER FAILOVER FORCE or TAKEOVER to its replica once it is dead; the fault is in place once that replica says it is a primary. " +
		"Mode graceful (a Redis Cluster's, at a time only) kills nothing: it sends CLUSTER FAILOVER to the replica of the live primary, which pauses its clients' writes until the replica has caught up, and the replica takes over; nothing is lost. " +
		"With a point, replication from the primary is cut when the fault starts, at an instant when no lease is held (every client is held before its next acquire until the leases held drain, and writes are paused while the leases are counted and replication cut; the window says for how long), and the primary dies when the target client (or any) next reaches the point " +
		"with a write made after the cut (e.g. acquire:granted: that grant then exists only on the dead primary); the point must be reached within the duration. " +
		"The other clients wait before acquiring while the kill is under way (an engine can report a death seconds late). That client is held there until the promotion is done and another client was granted by the new primary and read; that one is held before its write until the first has read (each wait at most the duration), and the run's clients keep going until the first goes on. " +
		"With cut one (on a primary with two replicas or more, in every mode but manual), only one replica is cut off, on its own side, and it is the one promoted: the others keep replicating, and acknowledge WAIT, but are barred from promotion (replica-priority 0, which every Sentinel is seen to know before the cut; on a Redis Cluster cluster-replica-no-failover; force and takeover are sent to the lagging one), so a grant a replica acknowledged is lost all the same. " +
		"Heal restarts the dead node as a replica of the new primary"
	Targets = "without a point: primary (the default); with a point: client:N or any, whose point it is"
)

// OnTopology says why a failover cannot strike topology t (nil when it can).
func OnTopology(t cluster.Topology) error {
	switch {
	case cluster.Consensus(t.Kind):
		return fmt.Errorf("fault failover is Redis replication's: a consensus service (%s) elects its leader itself (to move it, pause, crash or cut off the leader, lock-0 at the start)", t)
	case modes[t.Kind] == nil:
		return fmt.Errorf("fault failover needs topology %s (primary, replicas and Sentinels) or %s (a Redis Cluster), not %s", cluster.Replicated, cluster.RedisCluster, t)
	}
	return nil
}

// ModeOnTopology says why a failover cannot take mode on topology t (nil when it can).
func ModeOnTopology(mode string, t cluster.Topology) error {
	if ms := modes[t.Kind]; mode != "" && ms != nil && !slices.Contains(ms, mode) {
		return fmt.Errorf("failover mode %s does not apply to topology %s (its modes: %s)", mode, t, strings.Join(ms, ", "))
	}
	return nil
}

// New builds the failover a spec describes, or says what is wrong with it.
func New(s spec.Spec) (*Fault, error) {
	f := &Fault{spec: s, mode: s.Mode, window: -1, strikeDone: make(chan struct{})}
	f.cutting.changed = sync.NewCond(&f.cutting.mu)
	var all []string
	for _, topo := range []string{cluster.Replicated, cluster.RedisCluster} {
		all = append(all, modes[topo]...)
	}
	if s.Mode != "" && !slices.Contains(all, s.Mode) {
		return nil, fmt.Errorf("fault failover: mode %q: want one of %s", s.Mode, strings.Join(all, ", "))
	}
	switch {
	case s.Point == "" && s.Target != "" && s.Target != "primary":
		return nil, fmt.Errorf("fault failover: target %q: without a point the target is the primary", s.Target)
	case s.Point != "" && s.Duration <= 0:
		return nil, fmt.Errorf("fault failover at point %s: needs a duration, the time within which the point must be reached", s.Point)
	case s.Cut != "" && s.Cut != "all" && s.Cut != "one":
		return nil, fmt.Errorf("fault failover: cut %q: want all (every replica lags, the default) or one (one replica lags and is promoted)", s.Cut)
	case s.Cut == "one" && s.Point == "":
		return nil, fmt.Errorf("fault failover: cut one needs a point: the replica is cut before the grant the point strikes at")
	case s.Mode == Graceful && (s.Point != "" || s.Cut != ""):
		return nil, fmt.Errorf("fault failover: mode graceful takes no point and no cut: it kills nothing and hands over only once the replica caught up, so it strikes at its time")
	case s.Cut == "one" && s.Mode == Manual:
		return nil, fmt.Errorf("fault failover: cut one does not apply to mode manual, which promotes the replica with the most of the stream: never the lagging one")
	}
	return f, nil
}

// failover is the failover fault. Without a point it strikes at injection. With one,
// injection cuts replication from the primary and arms a gate at the point; the first
// client to reach it makes the fault strike there, held as strikeAtGate says.
type Fault struct {
	spec spec.Spec
	mode string

	fired atomic.Bool // a gate struck, or Heal disarmed the gates
	// struck is set when a gate strikes; strikeDone closes when the struck client goes on.
	struck     atomic.Bool
	strikeDone chan struct{}

	cutting cutState // what the gates must know of the cut

	mu        sync.Mutex // held while injecting, striking and healing
	injected  bool
	cut       cluster.Node // the primary whose replication was cut, until it dies
	cutAt     time.Time
	cutNote   string                                      // how the cut was made, for the window's detail
	lift      func() (clients int, longest time.Duration) // lifts the hold of clients before acquiring (nil: none taken)
	heldSince time.Time
	dead      cluster.Node   // the primary that was killed
	replicas  []cluster.Node // on a Redis Cluster: the replicas of the primary it kills
	lagging   cluster.Node   // cut one: the replica cut off alone, to be promoted
	barred    []cluster.Node // cut one: the replicas barred from promotion, until Heal
	promoted  cluster.Node
	restarted bool // the dead node runs again
	healed    bool
	strikeErr error // from a strike at a gate, which has no caller to tell

	detailMu sync.Mutex // the window's detail grows from the clients' gates too
	window   int
	detail   string
}

func (f *Fault) Available(sc Scene) error {
	if f.spec.Point != "" {
		if sc.Gates == nil {
			return fmt.Errorf("no client gates in this run")
		}
		if _, err := spec.ClientTarget(f.spec.Target, sc.Clients); err != nil {
			return err
		}
	}
	if sc.Cluster == nil {
		return fmt.Errorf("failover: %w", spec.ErrNeedsCluster)
	}
	c := sc.Cluster
	if err := OnTopology(c.Topology); err != nil {
		return err // its modes exist from here on
	}
	if len(c.Lock) < 2 || len(c.Sentinels) == 0 && c.Topology.Kind == cluster.Replicated || c.Topology.Kind == cluster.RedisCluster && c.Topology.Replicas < 1 {
		return fmt.Errorf("failover needs a replica to promote (and on a replicated topology, Sentinels): topology %s has none", c.Topology)
	}
	if f.spec.Cut == "one" && (len(c.Lock) < 3 || c.Topology.Kind == cluster.RedisCluster && c.Topology.Replicas < 2) {
		return fmt.Errorf("failover with cut one needs two replicas of the primary, one to lag and be promoted and one to acknowledge: topology %s has fewer", c.Topology)
	}
	if err := ModeOnTopology(f.spec.Mode, c.Topology); err != nil {
		return err
	}
	if f.spec.Mode == "" {
		f.mode = modes[c.Topology.Kind][0]
	}
	for _, n := range c.Lock {
		if cluster.IsExternal(n) {
			return fmt.Errorf("failover kills %s: %w", n.Name(), cluster.ErrExternal)
		}
	}
	return nil
}

func (f *Fault) Inject(ctx context.Context, sc Scene) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.injected || f.fired.Load() {
		return nil
	}
	f.injected = true
	if f.spec.Point == "" {
		f.fired.Store(true)
		return f.strike(ctx, sc, "", make(chan struct{}))
	}
	// Armed before the cut: a grant made the instant after it must meet a gate.
	client, _ := spec.ClientTarget(f.spec.Target, sc.Clients) // Available checked it
	for i := range sc.Clients {
		if client == -1 || i == client {
			f.arm(sc, i)
		}
	}
	return f.cutWhenIdle(ctx, sc)
}

// cutState tells the gates whether replication is cut. Which side of the cut a grant is
// on is decided by the cut itself: it counts the leases held at its instant and is
// undone when there is one, so a grant whose client reaches the point after a cut that
// stands was made after it. A gate reached while a cut is being made waits for its outcome.
type cutState struct {
	mu      sync.Mutex
	changed *sync.Cond
	trying  bool // a cut is being made
	done    bool // replication is cut
}

func (s *cutState) set(trying, done bool) {
	s.mu.Lock()
	s.trying, s.done = trying, done
	s.mu.Unlock()
	s.changed.Broadcast()
}

// await reports whether replication is cut, once no cut is being made.
func (s *cutState) await() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.trying {
		s.changed.Wait()
	}
	return s.done
}

// idlePoll is how often cutWhenIdle looks for an instant when no lease is held.
const idlePoll = 2 * time.Millisecond

// cutWhenIdle cuts replication from the primary at an instant when it holds no lease (no
// key with an expiry). A lease held across the cut would be released on the primary
// alone, and the replicas, one of which becomes the primary, would keep a lock nobody
// holds: nothing would be lost. Meanwhile every client is held before its next acquire
// (from the first thing on: clients start with the run), so that the leases held drain,
// released at the end of their sections or expired, and the wait is bounded by the
// longest section, not left to chance; the clients go on once the cut is made. It waits
// at most the fault's duration.
func (f *Fault) cutWhenIdle(ctx context.Context, sc Scene) error {
	f.holdClients(sc)
	began := f.heldSince
	var paused time.Duration
	primary, err := f.primary(ctx, sc)
	if err == nil && f.spec.Cut == "one" {
		err = f.lag(ctx, sc.Cluster, primary)
	}
	if err != nil {
		err = fmt.Errorf("failover: %w", err)
	} else {
		paused, err = f.cutOnceIdle(ctx, sc.Cluster, primary)
	}
	clients, held := f.lift()
	hold := holdNote(clients, held)
	if err != nil {
		return fmt.Errorf("%w (%s)", err, hold)
	}
	f.cutNote = fmt.Sprintf("cut %s after the fault began; %s; writes on %s paused for at most %s to count its leases and cut",
		spec.Short(f.cutAt.Sub(began)), hold, primary.Name(), spec.Short(paused))
	if f.lagging != nil {
		f.cutNote += fmt.Sprintf("; only %s was cut off, %s barred from promotion", f.lagging.Name(), names(f.barred))
	}
	return nil
}

// lag picks the replica of primary that lags (the last) and bars the others from
// promotion; on Sentinel it waits until every Sentinel knows, so that no election can take
// a barred one. f.mu is held.
func (f *Fault) lag(ctx context.Context, c *cluster.Cluster, primary cluster.Node) error {
	replicas := f.replicas
	if c.Topology.Kind != cluster.RedisCluster {
		replicas = slices.DeleteFunc(slices.Clone(c.Lock), func(n cluster.Node) bool { return n == primary })
	}
	if len(replicas) < 2 {
		return fmt.Errorf("cut one: %s has %d replica(s), and one must lag while another acknowledges", primary.Name(), len(replicas))
	}
	f.lagging, f.barred = replicas[len(replicas)-1], replicas[:len(replicas)-1]
	for _, n := range f.barred {
		if err := replication.Bar(ctx, n.Addr(), c.Topology.Kind == cluster.RedisCluster, true); err != nil {
			return err
		}
	}
	if c.Topology.Kind == cluster.RedisCluster {
		return nil // a node reads its own bar when it would start an election
	}
	return c.AwaitSentinelsSee(ctx, func(ctx context.Context, sc *redis.SentinelClient) error {
		n, err := sentinel.Barred(ctx, sc, cluster.MasterName)
		if err == nil && n != len(f.barred) {
			err = fmt.Errorf("knows %d replicas barred from promotion, want %d", n, len(f.barred))
		}
		return err
	})
}

// names lists nodes' names.
func names(nodes []cluster.Node) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name()
	}
	return strings.Join(out, ", ")
}

// restore undoes the cut, which was never struck: replication from the primary resumes,
// or the lagging replica reconnects.
func (f *Fault) restore(ctx context.Context, c *cluster.Cluster) error {
	if f.lagging != nil {
		return replication.ReconnectReplica(ctx, f.lagging.Addr())
	}
	return c.RestoreReplication(ctx, f.cut)
}

// unlag lifts what cut one did to the replicas: the lagging one reconnects (or, promoted,
// would as soon as it is a replica again) and the others may be promoted again.
func (f *Fault) unlag(ctx context.Context, c *cluster.Cluster) error {
	errs := []error{replication.ReconnectReplica(ctx, f.lagging.Addr())}
	for _, n := range f.barred {
		errs = append(errs, replication.Bar(ctx, n.Addr(), c.Topology.Kind == cluster.RedisCluster, false))
	}
	return errors.Join(errs...)
}

// holdFromStart holds the clients before they first acquire when the fault is due at the
// start of the run: its Inject runs beside the clients, and would find them granted.
func (f *Fault) HoldFromStart(sc Scene) {
	if f.spec.Point == "" || sc.Gates == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdClients(sc)
}

// holdClients holds every client before its next acquire, once; f.mu is held.
func (f *Fault) holdClients(sc Scene) {
	if f.lift == nil {
		f.lift, f.heldSince = sc.Gates.Hold(workload.BeforeAcquire), time.Now()
	}
}

// holdNote says how the clients were held for the cut, for the fault's window.
func holdNote(clients int, longest time.Duration) string {
	switch clients {
	case 0:
		return "no client was held before acquiring"
	case 1:
		return fmt.Sprintf("1 client held before acquiring for %s so that no lease was held at the cut", spec.Short(longest))
	}
	return fmt.Sprintf("%d clients held before acquiring for up to %s so that no lease was held at the cut", clients, spec.Short(longest))
}

// cutOnceIdle looks at primary every idlePoll, over one connection, until it holds no
// lease, and then cuts (cutIfIdle), until a cut stands or the fault's duration has passed.
// A look that fails is tried again: a slow look under load is no reason to give up. It
// returns how long the cut paused writes on primary.
func (f *Fault) cutOnceIdle(ctx context.Context, c *cluster.Cluster, primary cluster.Node) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, f.spec.Duration)
	defer cancel()
	k := c.NewCutter(primary)
	defer k.Close()
	if f.lagging != nil {
		k.CutOnly(f.lagging.Name(), f.lagging.Addr())
	}
	seen := int64(-1) // leases at the last look that answered (-1: none did)
	for {
		leases, err := k.Leases(ctx)
		if err == nil && leases == 0 {
			done, counted, paused, cutErr := f.cutIfIdle(ctx, c, k)
			if done || (cutErr != nil && ctx.Err() == nil) {
				return paused, cutErr
			}
			leases, err = counted, cutErr
		}
		if err == nil {
			seen = leases
		}
		if !spec.Sleep(ctx, idlePoll) {
			return 0, f.noInstant(primary, seen, err)
		}
	}
}

// noInstant is the error of a cut that found no instant without a lease in time: seen
// leases at the last look that answered (-1: none did), last the last look's error.
func (f *Fault) noInstant(primary cluster.Node, seen int64, last error) error {
	if seen < 0 {
		return fmt.Errorf("failover: no look at the leases of %s answered within %s: %w", primary.Name(), f.spec.Duration, last)
	}
	failed := ""
	if last != nil {
		failed = fmt.Sprintf("; the last look failed: %v", last)
	}
	return fmt.Errorf("failover: %s always held a lease: no instant to cut its replication without one within %s (%d held at the last look that answered%s)",
		primary.Name(), f.spec.Duration, seen, failed)
}

// cutIfIdle makes one cut when k's primary holds no lease (cluster.Cutter.CutIfIdle). done
// says a cut stands; leases are those it counted. A gate reached meanwhile waits for the
// outcome (cutState).
func (f *Fault) cutIfIdle(ctx context.Context, c *cluster.Cluster, k *cluster.Cutter) (done bool, leases int64, paused time.Duration, err error) {
	f.cut = k.Primary() // before cutting: Heal restores even a cut that failed halfway
	f.cutting.set(true, false)
	leases, cut, paused, err := k.CutIfIdle(ctx)
	if err == nil && cut && leases == 0 {
		f.cutAt = time.Now()
		f.cutting.set(false, true)
		return true, 0, paused, nil
	}
	f.cutting.set(false, false)
	if err != nil || !cut {
		return false, leases, paused, err // !cut: a lease came between the look and the count
	}
	// The pause lapsed before the cut and a lease came in between: undo the cut, let the
	// replicas catch up (or they would miss what happens while they reconnect), look again.
	if err := f.restore(ctx, c); err != nil {
		return false, leases, paused, err
	}
	return false, leases, paused, c.AwaitCaughtUp(ctx, k.Primary())
}

// arm puts a gate at the point for client. One gate per client, so that the strike knows
// whose point it was.
func (f *Fault) arm(sc Scene, client int) {
	sc.Gates.AddTrigger(client, f.spec.Point, func(ctx context.Context) { f.strikeAtGate(ctx, sc, client) })
}

// strikeAtGate strikes when client is the first to reach the point after the cut; the
// client is held until the promotion is done, and then until another client was granted
// by the new primary and read (aftermath). Arrivals before the cut, and after the first,
// pass at once (a gate fires once: one reached before the cut is armed again).
func (f *Fault) strikeAtGate(ctx context.Context, sc Scene, client int) {
	if !f.cutting.await() {
		if !f.fired.Load() {
			f.arm(sc, client)
		}
		return
	}
	if !f.fired.CompareAndSwap(false, true) {
		return
	}
	f.struck.Store(true)
	defer close(f.strikeDone)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.healed {
		return
	}
	a := newAftermath(f, sc, client) // armed before the kill: no grant by the new primary goes unseen
	f.strikeErr = f.strike(ctx, sc, fmt.Sprintf("client %d's %s", client, f.spec.Point), a.killed)
	a.struck(f.promoted != nil)
	if f.promoted != nil {
		f.note(sc, a.holdHolder(ctx))
	}
}

// unsettled is closed when the client a gate struck at goes on (nil before a strike): the
// run's clients keep going until then, however long the promotion takes.
func (f *Fault) Unsettled() <-chan struct{} {
	if !f.struck.Load() {
		return nil
	}
	return f.strikeDone
}

// overrun is how long a strike may outlast the duration: the promotion, the aftermath's waits.
func (f *Fault) Overrun() time.Duration {
	return 4*spec.PromoteTimeout + 2*f.spec.Duration // a TILT waited out between two tries included
}

// strike kills the primary and has a replica promoted; f.mu is held. where says at which
// client's point it strikes ("" at injection); killed is closed once the old primary is dead.
func (f *Fault) strike(ctx context.Context, sc Scene, where string, killed chan struct{}) error {
	c := sc.Cluster
	if f.mode == Graceful {
		return f.handOver(ctx, sc)
	}
	old := f.cut
	if old == nil {
		var err error
		if old, err = f.primary(ctx, sc); err != nil {
			return fmt.Errorf("failover: %w", err)
		}
	}
	detail := fmt.Sprintf("kill -9 %s (the primary)", old.Name())
	if where != "" {
		detail += fmt.Sprintf(" at %s, %s after its replication was cut (%s)", where, time.Since(f.cutAt).Round(time.Millisecond), f.cutNote)
	}
	f.detailMu.Lock()
	f.detail = detail
	if sc.Rec != nil {
		f.window = sc.Rec.FaultStart(f.spec.Kind, old.Name(), f.detail)
	}
	f.detailMu.Unlock()
	start := time.Now()
	lift := func() (int, time.Duration) { return 0, 0 }
	if where != "" {
		// The others wait before acquiring until the kill returns: an engine can report a
		// death seconds late, and a grant by the new primary meanwhile would pass for the
		// old one's (the aftermath takes a witness among grants after killed).
		lift = sc.Gates.Hold(workload.BeforeAcquire)
	}
	if err := old.Kill(ctx); err != nil {
		lift()
		return fmt.Errorf("failover: %w", err)
	}
	f.dead, f.cut = old, nil
	close(killed)
	lift()
	// A container can take seconds to die: the promotion's time counts from the death.
	f.note(sc, fmt.Sprintf(", dead after %s", spec.Short(time.Since(start))))
	died := time.Now()
	linkDown := time.Duration(0) // how long the replicas' links have been down
	if !f.cutAt.IsZero() {
		linkDown = died.Sub(f.cutAt)
	}
	promoted, err := f.promote(ctx, c, old, linkDown)
	took := time.Since(died).Round(time.Millisecond)
	if err := f.settle(sc, old, promoted, took, err); err != nil {
		return err
	}
	f.note(sc, fmt.Sprintf("; %s promoted %s after %s", f.promoter(), promoted.Name(), took))
	return nil
}

// settle records the promotion that replaced old after took, or that none came (err).
func (f *Fault) settle(sc Scene, old, promoted cluster.Node, took time.Duration, err error) error {
	if err != nil {
		f.note(sc, fmt.Sprintf("; no promotion after %s", took))
		return fmt.Errorf("failover of %s: %w", old.Name(), err)
	}
	f.promoted = promoted
	if sc.Rec != nil && f.window >= 0 {
		sc.Rec.FaultUpdate(f.window, func(w *histories.FaultWindow) { w.Promoted = promoted.Name() })
	}
	return nil
}

// handOver is the graceful failover: CLUSTER FAILOVER sent to a replica of the live
// primary of the first lock key's slot, which takes over once it has caught up; f.mu is
// held.
func (f *Fault) handOver(ctx context.Context, sc Scene) error {
	old, err := f.primary(ctx, sc)
	if err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	to := f.replicas[0]
	f.detailMu.Lock()
	f.detail = fmt.Sprintf("CLUSTER FAILOVER (graceful) sent to %s, a replica of %s (the primary, alive)", to.Name(), old.Name())
	if sc.Rec != nil {
		f.window = sc.Rec.FaultStart(f.spec.Kind, old.Name(), f.detail)
	}
	f.detailMu.Unlock()
	start := time.Now()
	if err := sc.Cluster.ClusterFailover(ctx, to, ""); err != nil {
		return fmt.Errorf("failover of %s: %w", old.Name(), err)
	}
	promoted, err := sc.Cluster.AwaitClusterPromotion(ctx, []cluster.Node{to}, spec.PromoteTimeout)
	took := time.Since(start).Round(time.Millisecond)
	if err := f.settle(sc, old, promoted, took, err); err != nil {
		return err
	}
	f.note(sc, fmt.Sprintf("; %s took over after %s, %s its replica", promoted.Name(), took, old.Name()))
	return nil
}

// primary is the primary the fault cuts and kills: the one Sentinel names, or on a Redis
// Cluster the one serving the first lock key's slot (whose replicas it notes).
func (f *Fault) primary(ctx context.Context, sc Scene) (cluster.Node, error) {
	c := sc.Cluster
	if c.Topology.Kind != cluster.RedisCluster {
		return c.Primary(ctx)
	}
	key := sc.LockKey
	p, replicas, err := c.SlotPrimary(ctx, key)
	if err == nil && len(replicas) == 0 {
		err = fmt.Errorf("%s, the primary of %s, has no replica to promote", p.Name(), key)
	}
	f.replicas = replicas
	return p, err
}

// promote has a replica of the dead primary old promoted, by Sentinel or by hand; on a
// Redis Cluster by the cluster, or by CLUSTER FAILOVER sent to its replica.
func (f *Fault) promote(ctx context.Context, c *cluster.Cluster, old cluster.Node, linkDown time.Duration) (cluster.Node, error) {
	switch f.mode {
	case Manual:
		return c.PromoteByHand(ctx, old)
	case Cluster:
		return c.AwaitClusterPromotion(ctx, f.replicas, spec.PromoteTimeout)
	case Force, Takeover:
		to := f.replicas[0]
		if f.lagging != nil {
			to = f.lagging
		}
		if err := c.ClusterFailover(ctx, to, strings.ToUpper(f.mode)); err != nil {
			return nil, err
		}
		return c.AwaitClusterPromotion(ctx, f.replicas, spec.PromoteTimeout)
	}
	// Only now that the primary is dead: a short failover-timeout on a live primary would
	// let Sentinel re-point proxied replicas straight at it (see cluster.SteadyFailoverTimeout).
	if err := c.PrepareFailover(ctx, linkDown); err != nil {
		return nil, err
	}
	return c.AwaitPromotion(ctx, old, spec.PromoteTimeout)
}

func (f *Fault) promoter() string {
	switch f.mode {
	case Manual:
		return "the harness"
	case Cluster:
		return "the cluster"
	case Force, Takeover:
		return "CLUSTER FAILOVER " + strings.ToUpper(f.mode)
	}
	return "Sentinel"
}

// note appends to the window's detail.
func (f *Fault) note(sc Scene, s string) {
	f.detailMu.Lock()
	defer f.detailMu.Unlock()
	f.detail += s
	spec.DetailWindow(sc.Rec, f.window, f.detail)
}

// Heal disarms the gates, waits for a strike in progress, and puts the topology back
// together: after a strike, the dead node restarts as a replica of the new primary;
// without one, replication from the primary resumes. A heal cut short by the end of the
// run (ctx done) is left unfinished and unreported: the schedule's final Heal, which
// always runs with a fresh context, completes it.
func (f *Fault) Heal(ctx context.Context, sc Scene) error {
	f.fired.Store(true)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lift != nil {
		f.lift() // a hold taken at the start of a run whose Inject never came
	}
	if !f.injected || f.healed {
		return nil
	}
	c := sc.Cluster
	var err error
	switch {
	case f.cut != nil: // never struck
		err = f.restore(ctx, c)
	case f.dead != nil:
		err = f.rejoin(ctx, c)
	}
	if f.lagging != nil {
		err = errors.Join(err, f.unlag(ctx, c))
	}
	if err != nil && ctx.Err() != nil {
		return nil
	}
	f.healed = true
	if f.dead != nil {
		switch {
		case err != nil:
			f.note(sc, fmt.Sprintf("; healing %s failed: %v", f.dead.Name(), err))
		case f.promoted != nil:
			f.note(sc, fmt.Sprintf("; healed: %s rejoined as a replica of %s", f.dead.Name(), f.promoted.Name()))
		default:
			f.note(sc, fmt.Sprintf("; healed: %s restarted", f.dead.Name()))
		}
	}
	if sc.Rec != nil && f.window >= 0 {
		sc.Rec.FaultEnd(f.window)
	}
	return errors.Join(f.strikeErr, err)
}

// rejoin restarts the dead node and waits until the topology is whole around the new
// primary; f.mu is held.
func (f *Fault) rejoin(ctx context.Context, c *cluster.Cluster) error {
	if f.promoted == nil {
		// No new primary to join: bring the node back as it was, so that the run ends
		// with its servers up; the strike's error says what went wrong.
		return f.restart(ctx)
	}
	if f.mode == Sentinel {
		// Sentinel finishes re-pointing the replicas only now; nothing may touch them before.
		if err := c.AwaitFailoverEnd(ctx, f.promoted); err != nil {
			return err
		}
		if err := c.SteadySentinels(ctx); err != nil {
			return err
		}
	}
	if err := f.restart(ctx); err != nil {
		return err
	}
	if c.Topology.Kind == cluster.RedisCluster {
		// The restarted node reads its nodes.conf, learns of the newer epoch and follows
		// its replacement by itself.
		return c.AwaitClusterOK(ctx, spec.PromoteTimeout)
	}
	return c.AwaitHealthy(ctx, f.promoted)
}

// restart restarts the dead node once, however often a heal is retried; f.mu is held.
func (f *Fault) restart(ctx context.Context) error {
	if f.restarted {
		return nil
	}
	if err := f.dead.Restart(ctx); err != nil {
		return err
	}
	f.restarted = true
	return nil
}
