package plan

import (
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/lockimpl"
)

// resolveReplication checks the plan's WAIT (wait_replicas, wait_timeout) and the lock
// servers' min-replicas-* settings against its topology and, with a registry, its
// implementation, into r.Wait and r.MinReplicas. Both count replicas, so both need a
// replicated topology or a Redis Cluster with that many per primary: on fewer, every
// grant would be refused.
func (p Plan) resolveReplication(r *Resolved, reg *lockimpl.Registry) error {
	bad := badField
	replicas := 0
	switch r.Topology.Kind {
	case cluster.Replicated:
		replicas = r.Topology.Nodes - 1
	case cluster.RedisCluster:
		replicas = r.Topology.Replicas
	}
	enough := func(field string, n int) error {
		switch {
		case n < 0:
			return bad(field, "want 0 or more replicas, got %d", n)
		case n > 0 && r.Topology.Kind != cluster.Replicated && r.Topology.Kind != cluster.RedisCluster:
			return bad(field, "counts replicas, and topology %s has none: use topology %s:%d or more, or %s:3x%d", r.Topology, cluster.Replicated, n+1, cluster.RedisCluster, n)
		case n > replicas:
			return bad(field, "%d replicas, but topology %s has %d: every write would wait for replicas that do not exist", n, r.Topology, replicas)
		}
		return nil
	}

	if err := enough("wait_replicas", p.WaitReplicas); err != nil {
		return err
	}
	r.Wait = lockimpl.Wait{Replicas: p.WaitReplicas, Timeout: p.WaitTimeout.D()}
	switch {
	case p.WaitReplicas == 0 && p.WaitTimeout.D() != 0:
		return bad("wait_timeout", "set without wait_replicas: there is no WAIT to bound")
	case p.WaitReplicas > 0 && p.WaitTimeout.D() == 0:
		return bad("wait_replicas", "set without wait_timeout: say how long WAIT %d may block (less than the timeout, %s)", p.WaitReplicas, p.Timeout.D())
	}
	if err := r.Wait.Check(p.Timeout.D()); err != nil {
		return bad("wait_timeout", "%v", err)
	}
	if reg != nil && p.WaitReplicas > 0 && !r.Impl.Waits {
		var can []string
		for _, i := range reg.List() {
			if i.Waits {
				can = append(can, i.Name)
			}
		}
		return bad("wait_replicas", "%s cannot WAIT for replicas (implementations that can: %s)", p.Impl, strings.Join(can, ", "))
	}

	if err := enough("min_replicas_to_write", p.MinReplicasToWrite); err != nil {
		return err
	}
	lag := p.MinReplicasMaxLag.D()
	switch {
	case p.MinReplicasToWrite == 0 && lag != 0:
		return bad("min_replicas_max_lag", "set without min_replicas_to_write: the servers would not use it")
	case lag != 0 && (lag < time.Second || lag%time.Second != 0):
		return bad("min_replicas_max_lag", "want whole seconds, at least 1s (Redis counts the lag in seconds), got %s", lag)
	}
	r.MinReplicas = MinReplicas{ToWrite: p.MinReplicasToWrite, MaxLag: lag}
	return nil
}

// MinReplicas is a primary's rule for refusing writes (Redis's min-replicas-to-write and
// min-replicas-max-lag): while fewer than ToWrite replicas acknowledged it within MaxLag
// (whole seconds; 0: Redis's default, 10 s) it answers NOREPLICAS.
type MinReplicas struct {
	ToWrite int
	MaxLag  time.Duration
}

// Args are the servers' arguments for m (cluster.Options.ReplicaArgs); none when ToWrite is 0.
func (m MinReplicas) Args() []string {
	if m.ToWrite == 0 {
		return nil
	}
	args := []string{"--min-replicas-to-write", strconv.Itoa(m.ToWrite)}
	if m.MaxLag > 0 {
		args = append(args, "--min-replicas-max-lag", strconv.FormatInt(int64(m.MaxLag/time.Second), 10))
	}
	return args
}
