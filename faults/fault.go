// Package faults injects faults into a run behind one small interface, scheduled by the
// plan: each fault is injected at its time and healed after its duration, and every fault
// is healed when the run ends, whatever happened.
package faults

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/zookeeper"
	"github.com/locklab/locklab/faults/failover"
	"github.com/locklab/locklab/faults/gates"
	"github.com/locklab/locklab/faults/spec"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/workload"
)

// Fault is one injectable fault, built from a Spec.
type Fault interface {
	// Available says why the fault cannot run in env (nil when it can).
	Available(env *Env) error
	// Inject starts the fault.
	Inject(ctx context.Context, env *Env) error
	// Heal ends it. It must be safe to call more than once and after a failed Inject.
	Heal(ctx context.Context, env *Env) error
}

// startHolder is a fault that holds clients at a point from before they start when it is
// due at the start of the run (Start calls holdFromStart then), so that no client gets
// past the point while the fault's goroutine is on its way. Its Heal lifts the hold.
type startHolder interface {
	holdFromStart(env *Env)
}

// settler is a fault whose strike holds a client past its Inject (a failover at a
// point): the run's clients must keep going until the held one goes on.
type settler interface {
	unsettled() <-chan struct{} // nil while no strike is under way; closed when it is over
}

// overrunner is a fault that may outlast its duration (a failover waits for its promotion).
type overrunner interface {
	overrun() time.Duration
}

// Spec and ErrNeedsCluster are package spec's, which every fault family shares.
type Spec = spec.Spec

var ErrNeedsCluster = spec.ErrNeedsCluster

// Env is what faults act on.
type Env struct {
	Cluster          *cluster.Cluster // nil in tests that need no servers
	Gates            *Gates
	Rec              *histories.Recorder
	Clients          int
	AllowDestructive bool // faults that destroy data or need the process may act on external servers
	// LockKey is the first lock key as the servers see it (workload.LockKey of the run's
	// namespace and k0): a fault on a Redis Cluster strikes the primary serving its slot,
	// which the key's hash tag decides. "" means no namespace (firstLockKey).
	LockKey string
	clocks  []*SkewClock // one per client; see NewEnv
}

// KindInfo describes a fault kind for `locklab list` and for validation.
type KindInfo struct {
	Name        string
	Description string
	Targets     string // what Target may name
	Points      bool   // whether Point applies
	build       func(Spec) (Fault, error)
	ownWindow   bool // the fault records its own window (client gates: when they fire)
	// healsAtUntil: Spec.Until heals the fault when that client reaches that point after
	// it was put in place (the schedule's, for a link's toxics); client-pause reads until
	// itself.
	healsAtUntil bool
}

// Kinds lists the fault kinds this locklab can inject, family by family; each family
// lists its kinds in its own file.
func Kinds() []KindInfo {
	var all []KindInfo
	for _, family := range [][]KindInfo{clientKinds(), serverKinds(), networkKinds(), failoverKinds(), migrationKinds()} {
		all = append(all, family...)
	}
	return all
}

// New builds the fault a spec describes, or says what is wrong with the spec. A trigger
// is checked by Prepare, which knows how many clients the run has.
func New(s Spec) (Fault, error) {
	k, err := kindOf(s)
	if err != nil {
		return nil, err
	}
	return k.build(s)
}

// kindOf is the kind of s, after the checks every kind shares.
func kindOf(s Spec) (KindInfo, error) {
	k, ok := kindNamed(s.Kind)
	if !ok {
		names := make([]string, 0, 8)
		for _, k := range Kinds() {
			names = append(names, k.Name)
		}
		return KindInfo{}, fmt.Errorf("unknown fault kind %q (known: %s)", s.Kind, strings.Join(names, ", "))
	}
	if s.At < 0 || s.Duration < 0 {
		return k, fmt.Errorf("fault %s: negative time", s.Kind)
	}
	if !k.Points && s.Point != "" {
		return k, fmt.Errorf("fault %s takes no point", s.Kind)
	}
	if s.Cut != "" && s.Kind != "failover" {
		return k, fmt.Errorf("fault %s takes no cut (a failover's)", s.Kind)
	}
	if s.Until != "" && s.Kind != "client-pause" && !k.healsAtUntil {
		return k, fmt.Errorf("fault %s takes no until (a client-pause's and a link fault's)", s.Kind)
	}
	return k, nil
}

// OnTopology says why a fault of kind cannot strike topology t (nil when it can), for
// what a plan can tell before any server starts. An etcd cluster has no wall clock
// locklab can move (its members are Go programs, which read the clock without libc, and
// etcd times leases on the monotonic clock, which no wall-clock jump moves), a ZooKeeper
// ensemble none that counts (it times sessions on the monotonic clock), and neither has
// Redis replication to fail over (each elects its own leader).
func OnTopology(kind string, t cluster.Topology) error {
	switch {
	case kind == failover.Name:
		return failover.OnTopology(t)
	case kind == "slot-migration" && t.Kind != cluster.RedisCluster:
		return fmt.Errorf("fault %s moves a slot of a Redis Cluster (topology %s:PxR), not of %s", kind, cluster.RedisCluster, t)
	case kind == "server-clock" && t.Kind == cluster.Etcd:
		return fmt.Errorf("fault %s cannot strike an etcd member: etcd is a Go program, which reads the clock without libc, so libfaketime cannot move it; "+
			"and etcd times leases on the monotonic clock, which a wall-clock jump (what NTP does) does not move", kind)
	case kind == "server-clock" && t.Kind == cluster.ZooKeeper:
		return fmt.Errorf("fault %s cannot strike a ZooKeeper member: %s", kind, zookeeper.NoFaketime)
	}
	return nil
}

// firstLockKey is env.LockKey, or k0's key without a namespace when it is not set.
func (e *Env) firstLockKey() string {
	if e.LockKey == "" {
		return workload.LockKey("", workload.KeyName(0))
	}
	return e.LockKey
}

// ModeOnTopology says why a fault of kind cannot take mode on topology t (nil when it
// can): a failover's modes are its topology's.
func ModeOnTopology(kind, mode string, t cluster.Topology) error {
	if kind == failover.Name {
		return failover.ModeOnTopology(mode, t)
	}
	return nil
}

// OnBackend says why a fault of kind cannot strike servers of backend ("" is the
// process backend), nil when it can: partitions between servers need servers with a
// network of their own.
func OnBackend(kind, backend string) error {
	if kind == "partition" && backend != "docker" {
		return fmt.Errorf("fault %s cuts servers off from each other, which needs the docker backend (plan backend docker, or --backend docker): the process backend's servers share the host's loopback", kind)
	}
	return nil
}

// Trigger is a parsed Spec.Trigger (or Spec.Until): the fault starts (ends) when Client
// (-1: any client) reaches Point for the Nth time (counted from when it is armed).
type Trigger struct {
	Client int
	Point  string
	Nth    int // 1: the first arrival
}

// gate is the gate that calls fire when the trigger's arrival comes.
func (t Trigger) gate(fire func(context.Context)) gates.Gate {
	return gates.Gate{Client: t.Client, Point: t.Point, Nth: t.Nth, Trigger: fire}
}

// String is how notes name it: "client 1's acquire:granted", "any client's
// before-acquire (arrival 2)".
func (t Trigger) String() string {
	who := "any client's"
	if t.Client >= 0 {
		who = fmt.Sprintf("client %d's", t.Client)
	}
	s := who + " " + t.Point
	if t.Nth > 1 {
		s += fmt.Sprintf(" (arrival %d)", t.Nth)
	}
	return s
}

// TriggerError is a Spec whose trigger is wrong, so that a plan can name the field.
type TriggerError struct{ Err error }

func (e *TriggerError) Error() string { return e.Err.Error() }
func (e *TriggerError) Unwrap() error { return e.Err }

// Planned is one fault of one run, built once from its spec with its trigger parsed:
// what a plan's validation produces and the schedule runs. A fault keeps state while it
// runs, so a Planned serves one run; another run prepares its own.
type Planned struct {
	Spec    Spec
	Trigger *Trigger // nil: the fault starts Spec.At after the run starts
	Until   *Trigger // a client-pause's or a link fault's end (Spec.Until), nil when it lasts its duration
	kind    KindInfo
	fault   Fault
	used    atomic.Bool
}

// Prepare checks s for a run of clients clients and builds its fault.
func Prepare(s Spec, clients int) (*Planned, error) {
	k, err := kindOf(s)
	if err != nil {
		return nil, err
	}
	pl := &Planned{Spec: s, kind: k}
	if s.Trigger != "" {
		tr, err := ParseTrigger(s.Trigger, clients)
		if err != nil {
			return nil, &TriggerError{fmt.Errorf("fault %s: %w", s.Kind, err)}
		}
		pl.Trigger = &tr
	}
	if s.Until != "" {
		tr, err := ParseTrigger(s.Until, clients)
		if err != nil {
			return nil, fmt.Errorf("fault %s: until: %w", s.Kind, err)
		}
		pl.Until = &tr
	}
	if pl.fault, err = k.build(s); err != nil {
		return nil, err
	}
	return pl, nil
}

// Available says why the fault cannot run in env (nil when it can).
func (pl *Planned) Available(env *Env) error { return pl.fault.Available(env) }

// Span is how long after the start of the run the fault may still act: its time, its
// duration and what its kind may take beyond it.
func (pl *Planned) Span() time.Duration {
	span := pl.Spec.At + pl.Spec.Duration
	if o, ok := pl.fault.(overrunner); ok {
		span += o.overrun()
	}
	return span
}

// Point is where in a client's steps the fault strikes or is triggered ("" for neither).
func (pl *Planned) Point() string {
	if pl.Trigger != nil {
		return pl.Trigger.Point
	}
	return pl.Spec.Point
}
