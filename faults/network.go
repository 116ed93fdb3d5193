package faults

import (
	"context"
	"sync"
	"time"

	"github.com/locklab/locklab/faults/network"
	"github.com/locklab/locklab/workload"
)

// networkKinds are package network's kinds (toxics on links, partitions between
// servers), each acting on the scene of env.
func networkKinds() []KindInfo {
	var out []KindInfo
	for _, k := range network.Kinds() {
		build := func(s Spec) (Fault, error) {
			f, err := k.Build(s)
			if err != nil {
				return nil, err
			}
			return &onScene{f: f, atOnce: k.AtOnce}, nil
		}
		// A link's toxics heal at once, so until can end them (a partition is in place
		// only once the Sentinels act, and heals by reconnecting containers).
		out = append(out, KindInfo{Name: k.Name, Description: k.Description, Targets: k.Targets, build: build, ownWindow: true, healsAtUntil: k.AtOnce})
	}
	return out
}

// onScene is a network fault acting on env's scene. One in place at once and due at the
// start of the run holds the clients before their first acquire until it is (a trace
// whose first requests are lost must lose them from the first).
type onScene struct {
	f      network.Fault
	atOnce bool

	mu   sync.Mutex
	lift func() (int, time.Duration) // nil: no hold
}

func (o *onScene) Available(env *Env) error { return o.f.Available(env.scene()) }

func (o *onScene) Inject(ctx context.Context, env *Env) error {
	defer o.release()
	return o.f.Inject(ctx, env.scene())
}

func (o *onScene) Heal(ctx context.Context, env *Env) error {
	o.release() // a hold taken at the start of a run whose Inject never came
	return o.f.Heal(ctx, env.scene())
}

func (o *onScene) holdFromStart(env *Env) {
	if o.atOnce && env.Gates != nil {
		o.mu.Lock()
		o.lift = env.Gates.Hold(workload.BeforeAcquire)
		o.mu.Unlock()
	}
}

func (o *onScene) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lift != nil {
		o.lift()
		o.lift = nil
	}
}

// scene is what a network fault sees of env.
func (e *Env) scene() network.Scene {
	return network.Scene{Cluster: e.Cluster, Rec: e.Rec, Clients: e.Clients, LockKey: e.firstLockKey()}
}
