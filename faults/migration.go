package faults

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustermode"
	"github.com/locklab/locklab/faults/spec"
)

// migrationKinds are the faults of a Redis Cluster's slot map.
func migrationKinds() []KindInfo {
	return []KindInfo{{
		Name: "slot-migration",
		Description: "on a Redis Cluster, the slot of the first lock key (k0) moves from its primary to the next primary, as an operator's reshard does: " +
			"the target primary imports it, the source migrates it, and every key of the slot (lock, fence counter, with its remaining TTL) is moved by MIGRATE at injection; " +
			"for the duration the source answers ASK for a key it no longer has (a script over two keys of the slot answers TRYAGAIN while they are split), and at heal " +
			"every primary assigns the slot to the target, which clients then meet by MOVED. With a trigger at a client's point the lock moves while that client holds it",
		Targets:   "none: the slot of k0",
		build:     buildMigration,
		ownWindow: true,
	}}
}

func buildMigration(s Spec) (Fault, error) {
	switch {
	case s.Target != "":
		return nil, fmt.Errorf("fault %s: target %q: it takes none (the slot of k0 moves to the next primary)", s.Kind, s.Target)
	case s.Duration <= 0:
		return nil, fmt.Errorf("fault %s needs a duration: how long the slot stays half moved", s.Kind)
	case s.Latency != 0 || s.Jitter != 0 || s.Direction != "" || s.Offset != 0 || s.Rate != 0 || s.Mode != "":
		return nil, fmt.Errorf("fault %s takes no latency, jitter, direction, offset, rate or mode", s.Kind)
	}
	return &migration{spec: s, window: -1}, nil
}

// migration is slot-migration: MigrateSlot at Inject, FinishSlot at Heal.
type migration struct {
	spec Spec

	mu       sync.Mutex
	slot     int
	src, dst *clustermode.Member // set once the migration began, until it is finished
	window   int
	detail   string
}

func (m *migration) Available(env *Env) error {
	if env.Cluster == nil {
		return fmt.Errorf("fault %s: %w", m.spec.Kind, ErrNeedsCluster)
	}
	if t := env.Cluster.Topology; t.Kind != cluster.RedisCluster || t.Primaries() < 2 {
		return fmt.Errorf("fault %s needs a Redis Cluster of two primaries or more (topology cluster:PxR), not %s", m.spec.Kind, t)
	}
	return nil
}

func (m *migration) Inject(ctx context.Context, env *Env) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := env.Cluster
	key := env.firstLockKey()
	primary, _, err := c.SlotPrimary(ctx, key)
	if err != nil {
		return fmt.Errorf("%s: %w", m.spec.Kind, err)
	}
	members := c.Members()
	i := slices.IndexFunc(c.Lock, func(n cluster.Node) bool { return n == primary })
	// The next primary of the layout (the first P nodes are the primaries at the start).
	dst := members[(i+1)%c.Topology.Primaries()]
	if m.slot, err = clustermode.KeySlot(ctx, members[i].Admin, key); err != nil {
		return fmt.Errorf("%s: %w", m.spec.Kind, err)
	}
	m.src, m.dst = &members[i], &dst
	moved, err := clustermode.MigrateSlot(ctx, *m.src, dst, m.slot)
	m.detail = fmt.Sprintf("slot %d (of k0) migrating from %s to %s: %d keys moved by MIGRATE; ASK until healed", m.slot, m.src.Name, dst.Name, moved)
	m.window = spec.OpenWindow(env.Rec, m.spec, m.detail)
	if err != nil {
		return fmt.Errorf("%s: %w", m.spec.Kind, err)
	}
	return nil
}

func (m *migration) Heal(ctx context.Context, env *Env) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dst == nil {
		return nil
	}
	if err := clustermode.FinishSlot(ctx, env.Cluster.Members(), m.slot, *m.dst); err != nil {
		return fmt.Errorf("%s: finish slot %d: %w", m.spec.Kind, m.slot, err)
	}
	spec.DetailWindow(env.Rec, m.window, m.detail+fmt.Sprintf("; healed: %s serves slot %d (MOVED)", m.dst.Name, m.slot))
	spec.CloseWindow(env.Rec, &m.window)
	m.src, m.dst = nil, nil
	return nil
}
