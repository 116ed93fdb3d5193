package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults/spec"
)

// serverKinds are the faults that strike a Redis server: its process (pause, crash and
// restart) or its wall clock. Each records its own window, so that the window says what
// was really done (and, for the clock, which of the two mechanisms did it).
func serverKinds() []KindInfo {
	const targets = "a server of the cluster by name: lock-N or store"
	return []KindInfo{
		{
			Name: "server-pause",
			Description: "the target server is frozen (SIGSTOP; on the docker backend the cgroup freezer) for the duration, then continued: connections stay open and commands queue unanswered; " +
				"its wall clock runs on, so keys whose TTL passed meanwhile are expired as soon as it continues",
			Targets:   targets,
			build:     func(s Spec) (Fault, error) { return buildServer(s, &serverPause{spec: s, window: -1}) },
			ownWindow: true,
		},
		{
			Name: "server-crash",
			Description: "the target server is killed (SIGKILL) and restarted on the same port after the duration (0: at once), with what its persistence kept: " +
				"persistence none loses every key (fence counters included); aof-everysec and aof-always keep every acknowledged write, since a process crash loses nothing the kernel has (everysec loses up to a second only when the machine crashes)",
			Targets:   targets,
			build:     func(s Spec) (Fault, error) { return buildServer(s, &serverCrash{spec: s, window: -1}) },
			ownWindow: true,
		},
		{
			Name: "server-clock",
			Description: "the target server's wall clock jumps by offset (negative: back) and runs at rate until healed, when it is the real clock again; key expiry follows it. " +
				"Mode faketime (default): the server runs under libfaketime (plan server_clock faketime). " +
				"Mode emulated: for servers that cannot: every volatile key's remaining TTL is shortened by the jump at once (lengthened at heal), the same for expiry; jumps only, no rate",
			Targets:   targets,
			build:     func(s Spec) (Fault, error) { return buildServer(s, &serverClock{spec: s, window: -1}) },
			ownWindow: true,
		},
	}
}

// serverFault is a server kind before its spec is checked.
type serverFault interface {
	Fault
	check() error // the kind's own fields
}

// buildServer checks what every server kind shares (a server target, no network fields)
// and then the kind's own fields.
func buildServer(s Spec, f serverFault) (Fault, error) {
	switch {
	case s.Target == "" || s.Target == "any" || strings.HasPrefix(s.Target, "client:") || strings.Contains(s.Target, "->"):
		return nil, fmt.Errorf("fault %s: target %q: want a server name (lock-0, lock-1, …, store)", s.Kind, s.Target)
	case s.Latency != 0 || s.Jitter != 0 || s.Direction != "":
		return nil, fmt.Errorf("fault %s takes no latency, jitter or direction", s.Kind)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("fault %s: %w", s.Kind, err)
	}
	return f, nil
}

// serverNode is the cluster's server named target, provided this fault may act on it:
// on an external server (one the harness did not start) only with env.AllowDestructive.
func serverNode(env *Env, s Spec, why string) (cluster.Node, error) {
	if env.Cluster == nil {
		return nil, fmt.Errorf("target server %s: %w", s.Target, ErrNeedsCluster)
	}
	var names []string
	for _, n := range env.Cluster.Nodes() {
		if n.Name() != s.Target {
			names = append(names, n.Name())
			continue
		}
		if cluster.IsExternal(n) && !env.AllowDestructive {
			return nil, fmt.Errorf("%s on %s (%s) refused: it is an external server and this fault %s; "+
				"run it only with destructive faults explicitly allowed (locklab run --allow-destructive)", s.Kind, n.Name(), n.Addr(), why)
		}
		return n, nil
	}
	return nil, fmt.Errorf("target %q: no such server (servers: %s)", s.Target, strings.Join(names, ", "))
}

// processNode is serverNode for faults that need the server's process, which an external
// server does not give even when destructive faults are allowed.
func processNode(env *Env, s Spec, why string) (cluster.Node, error) {
	n, err := serverNode(env, s, why)
	if err != nil {
		return nil, err
	}
	if cluster.IsExternal(n) {
		return nil, fmt.Errorf("%s on %s (%s): %w", s.Kind, n.Name(), n.Addr(), cluster.ErrExternal)
	}
	return n, nil
}

// serverPause is server-pause: SIGSTOP at Inject, SIGCONT at Heal.
type serverPause struct {
	spec Spec

	mu     sync.Mutex
	paused cluster.Node // paused by Inject and not continued yet
	window int
}

func (p *serverPause) check() error {
	switch {
	case p.spec.Duration <= 0:
		return fmt.Errorf("needs a duration: the server stays frozen until healed")
	case p.spec.Offset != 0 || p.spec.Rate != 0 || p.spec.Mode != "":
		return fmt.Errorf("takes no offset, rate or mode")
	}
	return nil
}

const pauseWhy = "freezes a server the harness does not own"

func (p *serverPause) Available(env *Env) error {
	_, err := processNode(env, p.spec, pauseWhy)
	return err
}

func (p *serverPause) Inject(ctx context.Context, env *Env) error {
	n, err := processNode(env, p.spec, pauseWhy)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := n.Pause(ctx); err != nil {
		// The SIGSTOP may have been sent even so: it must not outlive a failed Inject.
		_ = n.Resume(ctx)
		return err
	}
	p.paused = n
	p.window = spec.OpenWindow(env.Rec, p.spec, fmt.Sprintf("%s of %s %s (%s) for %s", cluster.How(n, cluster.ActPause), cluster.KindOf(n), n.Name(), n.Addr(), p.spec.Duration))
	return nil
}

// Heal continues the server. A failed SIGCONT is kept as not healed, so that the heal
// the schedule's Stop repeats tries again.
func (p *serverPause) Heal(ctx context.Context, env *Env) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		return nil
	}
	if err := p.paused.Resume(ctx); err != nil {
		return err
	}
	p.paused = nil
	spec.CloseWindow(env.Rec, &p.window)
	return nil
}

// serverCrash is server-crash: SIGKILL at Inject, restart at Heal, or within Inject when
// the duration is 0, so that a client held at a trigger continues against a server that
// is back (and has forgotten what it did not persist).
type serverCrash struct {
	spec Spec

	mu     sync.Mutex
	killed cluster.Node // killed by Inject and not restarted yet
	window int
}

func (c *serverCrash) check() error {
	if c.spec.Offset != 0 || c.spec.Rate != 0 || c.spec.Mode != "" {
		return fmt.Errorf("takes no offset, rate or mode")
	}
	return nil
}

const crashWhy = "kills a server the harness does not own, losing what it did not persist"

func (c *serverCrash) Available(env *Env) error {
	_, err := processNode(env, c.spec, crashWhy)
	return err
}

func (c *serverCrash) Inject(ctx context.Context, env *Env) error {
	n, err := processNode(env, c.spec, crashWhy)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	restart := "at once"
	if c.spec.Duration > 0 {
		restart = "after " + c.spec.Duration.String()
	}
	// The window opens before the kill: it spans the time the server is down.
	c.window = spec.OpenWindow(env.Rec, c.spec, fmt.Sprintf("%s of %s %s (%s), restart %s with its persistence", cluster.How(n, cluster.ActKill), cluster.KindOf(n), n.Name(), n.Addr(), restart))
	if err := n.Kill(ctx); err != nil {
		spec.CloseWindow(env.Rec, &c.window)
		return err
	}
	c.killed = n
	if c.spec.Duration == 0 {
		return c.restartLocked(ctx, env)
	}
	return nil
}

func (c *serverCrash) Heal(ctx context.Context, env *Env) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restartLocked(ctx, env)
}

// restartLocked restarts the killed server, if any. Caller holds mu.
func (c *serverCrash) restartLocked(ctx context.Context, env *Env) error {
	if c.killed == nil {
		return nil
	}
	if err := c.killed.Restart(ctx); err != nil {
		return err
	}
	c.killed = nil
	spec.CloseWindow(env.Rec, &c.window)
	return nil
}
