package faults

import (
	"context"
	"time"

	"github.com/locklab/locklab/faults/failover"
)

// Failover modes, package failover's: on the replicated topology sentinel (the default)
// and manual; on a Redis Cluster cluster (the default), force, takeover and graceful.
const (
	FailoverSentinel = failover.Sentinel
	FailoverManual   = failover.Manual
	FailoverCluster  = failover.Cluster
	FailoverForce    = failover.Force
	FailoverTakeover = failover.Takeover
	FailoverGraceful = failover.Graceful
)

// failoverKinds is package failover's kind, acting on env's failover scene.
func failoverKinds() []KindInfo {
	build := func(s Spec) (Fault, error) {
		f, err := failover.New(s)
		if err != nil {
			return nil, err
		}
		return &failoverOn{f}, nil
	}
	return []KindInfo{{Name: failover.Name, Description: failover.Description, Targets: failover.Targets, Points: true, build: build, ownWindow: true}}
}

// failoverOn is a failover acting on env: a fault that holds the clients from the start
// when due then (startHolder), keeps the run's clients going while its strike holds one
// (settler) and may outlast its duration (overrunner).
type failoverOn struct{ f *failover.Fault }

func (o *failoverOn) Available(env *Env) error { return o.f.Available(env.failoverScene()) }
func (o *failoverOn) Inject(ctx context.Context, env *Env) error {
	return o.f.Inject(ctx, env.failoverScene())
}
func (o *failoverOn) Heal(ctx context.Context, env *Env) error {
	return o.f.Heal(ctx, env.failoverScene())
}
func (o *failoverOn) holdFromStart(env *Env)     { o.f.HoldFromStart(env.failoverScene()) }
func (o *failoverOn) unsettled() <-chan struct{} { return o.f.Unsettled() }
func (o *failoverOn) overrun() time.Duration     { return o.f.Overrun() }

// failoverScene is what a failover sees of env.
func (e *Env) failoverScene() failover.Scene {
	return failover.Scene{Cluster: e.Cluster, Gates: e.Gates, Rec: e.Rec, Clients: e.Clients, LockKey: e.firstLockKey()}
}
