package docker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/faketime"
)

// Timings of the containers' life.
const (
	readyTimeout = 15 * time.Second
	pollInterval = 10 * time.Millisecond
	killWait     = 10 * time.Second
	portAttempts = 5
)

// Node is one server of the docker backend: a container.
type Node struct {
	b          *Backend
	name, mode string
	id         string // the container's id
	addr       string // host:port clients dial (the published port)
	peer       netip.AddrPort
	dir        string // on this host; the container's /data when the engine is local
	logPath    string
	clock      *faketime.Clock   // set when the server runs under libfaketime
	key        string            // what a reuse must match (spec.poolKey); "" never reused
	base       map[string]string // the fresh server's configuration, to reset to (pool.go)
	cluster    bool              // a Redis Cluster node

	mu       sync.Mutex
	running  bool
	paused   bool
	isolated bool
	stopped  bool
}

var (
	_ cluster.ClockNode      = (*Node)(nil)
	_ cluster.PeerNode       = (*Node)(nil)
	_ cluster.IsolatableNode = (*Node)(nil)
)

// start creates, connects and starts one container and waits until its server answers,
// again on another host port when that one was taken meanwhile.
func (b *Backend) start(ctx context.Context, s spec) (*Node, error) {
	var reuseErr error
	if kept := b.take(s.poolKey()); kept != nil {
		n, err := b.reuse(ctx, kept, s)
		if err == nil {
			return n, nil
		}
		reuseErr = err // a fresh container, then, and the reason if that fails too
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errBackendClosed
	}
	if err := b.ensureNetworks(ctx); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	ip, err := b.allocIP()
	b.seq++
	seq := b.seq
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(b.root, s.name+"-")
	if err != nil {
		return nil, fmt.Errorf("make directory for %s: %w", s.name, err)
	}
	n := &Node{b: b, name: s.name, mode: s.mode, peer: netip.AddrPortFrom(ip, uint16(s.port)), dir: dir, key: s.poolKey(), cluster: s.clusterBus}
	if s.clusterBus {
		// The container is on two networks; its peers must know it by the one a partition
		// cuts (the bus keeps its default port, 16379, on that network).
		s.args = append(slices.Clip(s.args), "--cluster-announce-ip", ip.String())
	}
	if b.local {
		n.logPath = filepath.Join(dir, s.log)
	}
	if s.faketime {
		n.clock = faketime.NewClock(filepath.Join(dir, "faketime.rc"))
	}
	if err := b.register(n); err != nil {
		return nil, err
	}
	var errs []error
	for attempt := range portAttempts {
		port, err := b.hostPort()
		if err != nil {
			return nil, err
		}
		// Under the node's lock (taken before the engine's, as everywhere): a Close meanwhile
		// either finds the container to remove or keeps a new one from being made.
		n.mu.Lock()
		if n.stopped {
			n.mu.Unlock()
			return nil, errBackendClosed
		}
		n.addr = net.JoinHostPort(b.host, strconv.Itoa(port))
		err = n.b.serial.do(func() error { return n.create(ctx, s, seq, attempt, port) })
		n.mu.Unlock()
		if err == nil {
			err = n.startAndAwait(ctx)
		}
		if err == nil {
			if err := n.baseline(ctx); err != nil {
				n.key = "" // started and fine; only never reused
			}
			return n, nil
		}
		errs = append(errs, err)
		n.mu.Lock()
		_ = n.remove(context.Background())
		n.mu.Unlock()
		if !portTaken(err) {
			break
		}
	}
	b.release(n)
	return nil, fmt.Errorf("start %s on the docker backend: %w", s.name, errors.Join(append(errs, reuseErr)...))
}

// hostPort is a port for a container's published port: one the kernel says is free on a
// local engine, a random high one on a remote engine (start retries on a clash).
func (b *Backend) hostPort() (int, error) {
	if b.local {
		return cluster.FreePort()
	}
	return 30000 + rand.IntN(20000), nil
}

// portTaken reports whether a start failed because another process had the host port.
func portTaken(err error) bool {
	s := err.Error()
	return strings.Contains(s, "port is already allocated") || strings.Contains(s, "address already in use")
}

// create makes the container, on the ports network with its port published, and connects
// it to the peers network with its own address. It does not start it.
func (n *Node) create(ctx context.Context, s spec, seq, attempt, hostPort int) error {
	b := n.b
	env := map[string]string{}
	if s.config != "" {
		env["LOCKLAB_CONFIG"] = s.config
	}
	if n.clock != nil {
		env["LOCKLAB_FAKETIME"] = "/data/faketime.rc"
	}
	bindIP := netip.IPv4Unspecified()
	if b.local {
		bindIP = netip.MustParseAddr("127.0.0.1") // nothing published beyond this host
	}
	inner := network.MustParsePort(strconv.Itoa(s.port) + "/tcp")
	req := testcontainers.ContainerRequest{
		Image:        b.image,
		Name:         fmt.Sprintf("locklab-%s-%d-%s-%d", b.id, seq, s.name, attempt),
		Cmd:          s.command(b.local),
		Env:          env,
		Labels:       map[string]string{labelOwner: b.owner, labelBackend: b.id, "io.locklab.node": s.name},
		ExposedPorts: []string{inner.String()},
		Networks:     []string{b.nets.ports.Name},
		ConfigModifier: func(c *container.Config) {
			c.Hostname = s.name
			if b.local {
				// The server writes the mounted directory as the user running locklab.
				c.User = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
			}
		},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{inner: {{HostIP: bindIP, HostPort: strconv.Itoa(hostPort)}}}
			if b.local {
				hc.Binds = []string{n.dir + ":/data"}
			}
		},
	}
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: false, Logger: b.logger})
	if c != nil {
		n.id = c.GetContainerID()
	}
	if err != nil {
		return fmt.Errorf("create container: %w", err)
	}
	return n.connectPeers(ctx)
}

// command is the entrypoint's arguments: the mode, then the options every server runs
// with (reachable on all of the container's addresses, its data and log in /data, where a
// local engine mounts the node's directory), then the server's own.
func (s spec) command(local bool) []string {
	cmd := []string{s.mode, "--port", strconv.Itoa(s.port), "--bind", "0.0.0.0", "--protected-mode", "no", "--daemonize", "no", "--dir", "/data"}
	if local {
		cmd = append(cmd, "--logfile", "/data/"+s.log)
	}
	return append(cmd, s.args...)
}

// connectPeers puts the container on the peers network with its address.
func (n *Node) connectPeers(ctx context.Context) error {
	_, err := n.b.cli.NetworkConnect(ctx, n.b.nets.peers.ID, client.NetworkConnectOptions{
		Container:      n.id,
		EndpointConfig: &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: n.peer.Addr()}, Aliases: []string{n.name}},
	})
	if err != nil {
		return fmt.Errorf("connect %s to the peers network as %s: %w", n.name, n.peer.Addr(), err)
	}
	return nil
}

// startAndAwait starts the container and waits until its server answers; on failure the
// error carries the end of its log.
func (n *Node) startAndAwait(ctx context.Context) error {
	if n.clock != nil {
		// libfaketime takes its start time when the server starts (see faketime.Clock).
		if err := n.clock.Started(time.Now()); err != nil {
			return fmt.Errorf("start %s: %w", n.name, err)
		}
	}
	err := n.b.serial.do(func() error {
		_, err := n.b.cli.ContainerStart(ctx, n.id, client.ContainerStartOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("start container of %s: %w", n.name, err)
	}
	n.mu.Lock()
	n.running = true
	n.mu.Unlock()
	if err := n.awaitReady(ctx); err != nil {
		return fmt.Errorf("%s on %s: %w%s", n.name, n.addr, err, n.logTail(20))
	}
	return nil
}

// awaitReady probes the server through its published port until it answers, the
// container exits or readyTimeout passes.
func (n *Node) awaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		last := cluster.Probe(ctx, n.addr, 0)
		if last == nil {
			return nil
		}
		if st, err := n.b.cli.ContainerInspect(ctx, n.id, client.ContainerInspectOptions{}); err == nil && st.Container.State != nil && !st.Container.State.Running {
			return fmt.Errorf("container exited (code %d) before its server was ready", st.Container.State.ExitCode)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last probe: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// logTail is the end of the server's log, for errors; "" without one.
func (n *Node) logTail(lines int) string {
	if n.logPath == "" {
		return ""
	}
	data, err := os.ReadFile(n.logPath)
	if err != nil || len(data) == 0 {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	all = all[max(0, len(all)-lines):]
	return fmt.Sprintf("\n--- %s (last %d lines) ---\n%s", n.logPath, len(all), strings.Join(all, "\n"))
}

// Name is the name given at start.
func (n *Node) Name() string { return n.name }

// Addr is the published port, on 127.0.0.1 for a local engine.
func (n *Node) Addr() string { return n.addr }

// PeerAddr is the server's address on the peers network: what the other servers use.
func (n *Node) PeerAddr() string { return n.peer.String() }

// LogPath is the server's log on this host ("" with a remote engine).
func (n *Node) LogPath() string { return n.logPath }

// Kind is "redis" (a Sentinel is a Redis server in Sentinel mode).
func (n *Node) Kind() string { return "redis" }

// How names what the backend does for act (cluster.How).
func (n *Node) How(act string) string {
	if act == cluster.ActPause {
		return "docker pause (cgroup freezer)"
	}
	return "docker kill (SIGKILL)"
}

// ContainerID is the container's id.
func (n *Node) ContainerID() string { return n.id }

// Pause freezes the container (the cgroup freezer): connections stay open, nothing is
// answered.
func (n *Node) Pause(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return fmt.Errorf("pause %s on %s: not running", n.name, n.addr)
	}
	if _, err := n.b.cli.ContainerPause(ctx, n.id, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause %s (docker pause): %w", n.name, err)
	}
	n.paused = true
	return nil
}

// Resume thaws a paused container.
func (n *Node) Resume(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return fmt.Errorf("resume %s on %s: not running", n.name, n.addr)
	}
	if _, err := n.b.cli.ContainerUnpause(ctx, n.id, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("resume %s (docker unpause): %w", n.name, err)
	}
	n.paused = false
	return nil
}

// Kill crashes the server (SIGKILL to the container) and waits until the container has
// stopped. Its data stays, for Restart.
func (n *Node) Kill(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return fmt.Errorf("kill %s on %s: not running", n.name, n.addr)
	}
	return n.killLocked()
}

// killLocked SIGKILLs the container and waits for it to stop, bounded by killWait rather
// than a caller's ctx. Caller holds mu.
func (n *Node) killLocked() error {
	return n.b.serial.do(n.kill)
}

func (n *Node) kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	wait := n.b.cli.ContainerWait(ctx, n.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	if n.paused {
		// The engine kills no frozen container: thaw it and kill it at once (a process
		// SIGKILLed while stopped never runs again; here it may for a moment).
		if _, err := n.b.cli.ContainerUnpause(ctx, n.id, client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("kill %s: thaw it first (docker unpause): %w", n.name, err)
		}
	}
	if _, err := n.b.cli.ContainerKill(ctx, n.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("kill %s (docker kill): %w", n.name, err)
	}
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		return fmt.Errorf("kill %s: waiting for the container to stop: %w", n.name, err)
	}
	n.running, n.paused = false, false
	return nil
}

// Restart starts a killed server's container again: the same published port, peers
// address (unless it is isolated) and data.
func (n *Node) Restart(ctx context.Context) error {
	n.mu.Lock()
	switch {
	case n.stopped:
		n.mu.Unlock()
		return fmt.Errorf("restart %s on %s: node was stopped", n.name, n.addr)
	case n.running:
		n.mu.Unlock()
		return fmt.Errorf("restart %s on %s: still running (Kill it first)", n.name, n.addr)
	}
	n.mu.Unlock()
	return n.startAndAwait(ctx)
}

// Stop ends the node for good: its container is kept for reuse by a later start of the
// same server when it can be (pool.go), else removed (also a paused or killed one).
// Idempotent.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return nil
	}
	n.stopped = true
	if n.b.park(ctx, n) {
		n.b.mu.Lock()
		n.b.nodes = slices.DeleteFunc(n.b.nodes, func(m *Node) bool { return m == n })
		n.b.mu.Unlock()
		return nil
	}
	err := n.remove(ctx)
	n.b.release(n)
	return err
}

// remove force-removes the container, if one was made. Caller holds mu.
func (n *Node) remove(ctx context.Context) error {
	if n.id == "" {
		return nil
	}
	if n.paused {
		_, _ = n.b.cli.ContainerUnpause(ctx, n.id, client.ContainerUnpauseOptions{})
	}
	err := n.b.serial.do(func() error {
		_, err := n.b.cli.ContainerRemove(context.WithoutCancel(ctx), n.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		return ignoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("remove container of %s: %w", n.name, err)
	}
	n.id, n.running, n.paused = "", false, false
	return nil
}

// Isolate disconnects the container from the peers network: the other servers cannot
// reach it nor it them; clients still reach its published port.
func (n *Node) Isolate(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return fmt.Errorf("isolate %s on %s: node was stopped", n.name, n.addr)
	}
	if n.isolated {
		return nil
	}
	err := n.b.serial.do(func() error {
		_, err := n.b.cli.NetworkDisconnect(ctx, n.b.nets.peers.ID, client.NetworkDisconnectOptions{Container: n.id, Force: true})
		return err
	})
	if err != nil {
		return fmt.Errorf("isolate %s (docker network disconnect): %w", n.name, err)
	}
	n.isolated = true
	return nil
}

// Rejoin connects an isolated container to the peers network again, with its address.
func (n *Node) Rejoin(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return fmt.Errorf("rejoin %s on %s: node was stopped", n.name, n.addr)
	}
	if !n.isolated {
		return nil
	}
	err := n.b.serial.do(func() error {
		err := n.connectPeers(ctx)
		if err != nil && strings.Contains(err.Error(), "already exists in network") {
			// Docker 20.10 can keep the endpoint of a forced disconnect in the network's
			// store (measured once in a split-brain heal, 6 s after the disconnect): a second
			// forced disconnect removes it, and the connect goes through.
			if _, derr := n.b.cli.NetworkDisconnect(ctx, n.b.nets.peers.ID, client.NetworkDisconnectOptions{Container: n.id, Force: true}); derr == nil {
				err = n.connectPeers(ctx)
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	n.isolated = false
	return nil
}

// Isolated reports whether the container is off the peers network.
func (n *Node) Isolated() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.isolated
}

// FakeClock reports whether the server runs under libfaketime.
func (n *Node) FakeClock() bool { return n.clock != nil }

// SetClock implements cluster.ClockNode: the clock file sits in the mounted directory.
func (n *Node) SetClock(offset time.Duration, rate float64) error {
	return cluster.SetClock(n.clock, n.name, n.addr, offset, rate)
}

// ClockOffset implements cluster.ClockNode.
func (n *Node) ClockOffset() time.Duration { return cluster.ClockOffset(n.clock) }

// CalibrateClock implements cluster.ClockNode.
func (n *Node) CalibrateClock(lag time.Duration) error {
	return cluster.CalibrateClock(n.clock, n.name, n.addr, lag)
}
