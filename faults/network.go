package faults

import (
	"context"

	"github.com/locklab/locklab/faults/network"
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
			return onScene{f}, nil
		}
		out = append(out, KindInfo{Name: k.Name, Description: k.Description, Targets: k.Targets, build: build, ownWindow: true})
	}
	return out
}

// onScene is a network fault acting on env's scene.
type onScene struct{ f network.Fault }

func (o onScene) Available(env *Env) error                   { return o.f.Available(env.scene()) }
func (o onScene) Inject(ctx context.Context, env *Env) error { return o.f.Inject(ctx, env.scene()) }
func (o onScene) Heal(ctx context.Context, env *Env) error   { return o.f.Heal(ctx, env.scene()) }

// scene is what a network fault sees of env.
func (e *Env) scene() network.Scene {
	return network.Scene{Cluster: e.Cluster, Rec: e.Rec, Clients: e.Clients, LockKey: e.firstLockKey()}
}
