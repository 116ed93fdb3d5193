// Package docker is the docker backend of package cluster: every Redis server and
// Sentinel a container of the locklab/redis image (scripts/build-docker-image.sh),
// started through testcontainers-go, so that each node is isolated as on a host of its
// own and faults strike at the container level: the cgroup freezer pauses it, a kill
// and a start crash and restart it, libfaketime inside it moves its clock, and a network
// disconnect cuts it off from the other servers while clients still reach it.
//
// Each backend makes two networks. On "peers", an internal network with addresses it
// assigns itself (so that they survive restarts and partitions), the servers reach each
// other: replication, Sentinel, what Sentinel tells clients. On "ports", whose
// containers cannot talk to each other, each server's port is published on the host, and
// clients (through their links of cluster.Net) dial that. Isolating a server takes it
// off "peers" only.
//
// A stopped node's container is kept for the next start of the same server, reset to
// what a fresh one is (pool.go): a campaign's runs then pay for containers once.
//
// Testcontainers' reaper is off (its image cannot be pulled where no registry is
// reachable): the backend removes its own containers and networks in Close, and New
// removes what a dead locklab process on this host left behind (labels name the owner).
package docker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/locklab/locklab/cluster"
)

// Image names.
const (
	// DefaultImage is what scripts/build-docker-image.sh tags last.
	DefaultImage = "locklab/redis:latest"
	// EnvImage overrides the image.
	EnvImage = "LOCKLAB_DOCKER_IMAGE"
)

// Labels on everything the backend makes: who made it (so that a later backend on the
// same host can remove what a dead process left) and which backend.
const (
	labelOwner   = "io.locklab.owner"   // "<hostname>/<pid>"
	labelBackend = "io.locklab.backend" // the backend's random id
)

// envRyuk turns testcontainers' reaper off; see the package comment.
const envRyuk = "TESTCONTAINERS_RYUK_DISABLED"

// Options configures New.
type Options struct {
	// Image is the image to run; "" means $LOCKLAB_DOCKER_IMAGE, then DefaultImage.
	Image string
	// Dir is where the backend makes its directory on this host (one subdirectory per
	// server, mounted as its /data when the engine is local: logs, data, clock file);
	// "" means the system's temp dir, removed by Close.
	Dir string
	// Idle is how many stopped nodes' containers the backend keeps running for reuse by
	// a later start of the same server (pool.go): 0 means DefaultIdle, a negative number
	// none (every start makes a container, every stop removes it).
	Idle int
}

// quiet silences testcontainers' own messages (its banner, each container made) once per
// process: its logger is process-wide, and setting it while another backend's containers
// log would race.
var quiet sync.Once

// Backend runs servers as containers of one Docker engine: the local one, or the one
// DOCKER_HOST names.
type Backend struct {
	serial  *serial
	logger  tclog.Logger
	cli     *testcontainers.DockerClient
	image   string
	id      string
	owner   string
	local   bool   // the engine runs on this host: bind mounts, loopback ports
	host    string // where clients dial the published ports
	root    string
	keepDir bool

	mu      sync.Mutex
	nets    *networks // made at the first StartNode
	nodes   []*Node   // started and not stopped
	idle    []*Node   // parked for reuse, oldest first (pool.go)
	idleMax int
	usedIP  map[netip.Addr]bool
	seq     int
	closed  bool
}

// networks are the backend's two networks.
type networks struct {
	ports, peers *testcontainers.DockerNetwork
	subnet       netip.Prefix // of peers
}

var (
	_ cluster.Backend         = (*Backend)(nil)
	_ cluster.SentinelBackend = (*Backend)(nil)
)

// New connects to the Docker engine (DOCKER_HOST, else the local socket), checks that the
// image is there and removes what dead locklab processes on this host left behind.
func New(ctx context.Context, opts Options) (*Backend, error) {
	if _, set := os.LookupEnv(envRyuk); !set {
		// Read by testcontainers when it first creates a container: the reaper's image
		// cannot be pulled here, and the backend removes its own containers.
		if err := os.Setenv(envRyuk, "true"); err != nil {
			return nil, fmt.Errorf("docker backend: %w", err)
		}
	}
	logger := tclog.NewNoopLogger()
	quiet.Do(func() { tclog.SetDefault(logger) })
	local, host, err := engineHost(os.Getenv("DOCKER_HOST"))
	if err != nil {
		return nil, err
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker backend: connect to the Docker engine (DOCKER_HOST=%q): %w", os.Getenv("DOCKER_HOST"), err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker backend: no Docker engine answers (DOCKER_HOST=%q; start one, e.g. scripts/docker-engine.sh start): %w", os.Getenv("DOCKER_HOST"), err)
	}
	image := opts.Image
	if image == "" {
		image = os.Getenv(EnvImage)
	}
	if image == "" {
		image = DefaultImage
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker backend: image %s is not on the Docker engine (no registry is asked): build it with `make docker-image`: %w", image, err)
	}
	b := &Backend{
		serial: newSerial(os.Getenv("DOCKER_HOST")),
		logger: logger,
		cli:    cli, image: image, id: randomID(), owner: Owner(os.Getpid()),
		local: local, host: host, keepDir: opts.Dir != "", usedIP: map[netip.Addr]bool{},
		idleMax: opts.Idle,
	}
	if b.idleMax == 0 {
		b.idleMax = DefaultIdle
	}
	if err := b.serial.do(func() error { return b.sweep(ctx) }); err != nil {
		cli.Close()
		return nil, errors.Join(err, b.serial.close())
	}
	if b.root, err = os.MkdirTemp(opts.Dir, "locklab-docker-"); err != nil {
		cli.Close()
		b.serial.close()
		return nil, fmt.Errorf("docker backend: make directory: %w", err)
	}
	return b, nil
}

// engineHost says whether DOCKER_HOST names an engine on this host, and the host clients
// dial published ports on.
func engineHost(dockerHost string) (local bool, host string, err error) {
	if dockerHost == "" || strings.HasPrefix(dockerHost, "unix://") {
		return true, "127.0.0.1", nil
	}
	u, err := url.Parse(dockerHost)
	if err != nil || u.Hostname() == "" {
		return false, "", fmt.Errorf("docker backend: DOCKER_HOST=%q: want unix:///path, tcp://host:port or ssh://user@host", dockerHost)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && ip.IsLoopback() {
		return true, "127.0.0.1", nil
	}
	return false, u.Hostname(), nil
}

func randomID() string { return fmt.Sprintf("%08x", rand.Uint32()) }

// Name is "docker".
func (b *Backend) Name() string { return "docker" }

// Image is the image the backend runs.
func (b *Backend) Image() string { return b.image }

// ID is the backend's id, the value of its label io.locklab.backend on every container
// and network it makes.
func (b *Backend) ID() string { return b.id }

// ensureNetworks makes the backend's networks at the first start. Caller holds mu.
func (b *Backend) ensureNetworks(ctx context.Context) error {
	if b.nets != nil {
		return nil
	}
	return b.serial.do(func() error { return b.makeNetworks(ctx) })
}

func (b *Backend) makeNetworks(ctx context.Context) error {
	labels := map[string]string{labelOwner: b.owner, labelBackend: b.id}
	ports, err := tcnetwork.New(ctx,
		tcnetwork.WithDriver("bridge"), tcnetwork.WithLabels(labels),
		// Containers on it cannot talk to each other: servers meet only on peers.
		tcnetwork.CustomizeNetworkOption(func(req *client.NetworkCreateOptions) error {
			req.Options = map[string]string{"com.docker.network.bridge.enable_icc": "false"}
			return nil
		}))
	if err != nil {
		return fmt.Errorf("docker backend: make the ports network: %w", err)
	}
	// Addresses of our choosing need a subnet of our choosing: a /24 of 10.213.0.0/16
	// that no other network on the engine has.
	var errs []error
	for range 16 {
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 213, byte(rand.IntN(256)), 0}), 24)
		peers, err := tcnetwork.New(ctx,
			tcnetwork.WithDriver("bridge"), tcnetwork.WithInternal(), tcnetwork.WithLabels(labels),
			tcnetwork.WithIPAM(&network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: subnet}}}))
		if err == nil {
			b.nets = &networks{ports: ports, peers: peers, subnet: subnet}
			return nil
		}
		errs = append(errs, err)
		if !strings.Contains(err.Error(), "overlap") {
			break
		}
	}
	return errors.Join(fmt.Errorf("docker backend: make the peers network: %w", errors.Join(errs...)), ports.Remove(context.Background()))
}

// allocIP is the lowest free address of the peers network (from .10). Caller holds mu.
func (b *Backend) allocIP() (netip.Addr, error) {
	a := b.nets.subnet.Addr().As4()
	for host := 10; host < 255; host++ {
		a[3] = byte(host)
		ip := netip.AddrFrom4(a)
		if !b.usedIP[ip] {
			b.usedIP[ip] = true
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("docker backend: no free address on %s", b.nets.subnet)
}

// StartNode starts one Redis server and waits until it answers.
func (b *Backend) StartNode(ctx context.Context, cfg cluster.NodeConfig) (cluster.Node, error) {
	persist, err := cfg.Persistence.Args()
	if err != nil {
		return nil, err
	}
	if cfg.Faketime && !b.local {
		return nil, fmt.Errorf("start %s under libfaketime: the clock file reaches a container through a bind mount, which needs a local Docker engine (DOCKER_HOST=%q)", cfg.Name, os.Getenv("DOCKER_HOST"))
	}
	return b.start(ctx, spec{name: cfg.Name, mode: "server", port: redisPort, log: "redis.log",
		args: append(persist, cfg.ExtraArgs...), faketime: cfg.Faketime, clusterBus: cfg.ClusterBus})
}

// StartSentinel starts a Redis Sentinel. Its configuration file comes first on its command
// line (the image's entrypoint writes it at the first start): Sentinel rewrites it with
// what it learns.
func (b *Backend) StartSentinel(ctx context.Context, cfg cluster.SentinelConfig) (cluster.Node, error) {
	text, err := cfg.ConfigFile() // no announce-ip: each Sentinel's own peers address is right
	if err != nil {
		return nil, err
	}
	n, err := b.start(ctx, spec{name: cfg.Name, mode: "sentinel", port: sentinelPort, log: "sentinel.log", config: text, sentinel: &cfg})
	if err != nil {
		return nil, fmt.Errorf("start sentinel %s: %w", cfg.Name, err)
	}
	return n, nil
}

// Ports inside the containers.
const (
	redisPort    = 6379
	sentinelPort = 26379
)

// spec is what start needs to know of a server.
type spec struct {
	name, mode string
	port       int
	log        string   // the log's file name in /data
	args       []string // after the options every server runs with (command)
	config     string
	faketime   bool
	clusterBus bool                    // Redis Cluster mode: announce the peers address to the other nodes
	sentinel   *cluster.SentinelConfig // what a Sentinel monitors, to reset a reused one to
}

func (b *Backend) register(n *Node) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errBackendClosed
	}
	b.nodes = append(b.nodes, n)
	return nil
}

// release forgets a node whose container is gone: its address is free again.
func (b *Backend) release(n *Node) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.usedIP, n.peer.Addr())
	b.nodes = slices.DeleteFunc(b.nodes, func(m *Node) bool { return m == n })
}

var errBackendClosed = errors.New("docker backend closed")

// Close removes every container and both networks the backend made, and its directory
// (unless the caller chose it). It is idempotent.
func (b *Backend) Close() error {
	b.mu.Lock()
	nodes, idle, nets := slices.Clone(b.nodes), b.idle, b.nets
	already := b.closed
	b.closed, b.nets, b.idle = true, nil, nil
	b.mu.Unlock()
	if already {
		return nil
	}
	ctx := context.Background()
	errs := []error{cluster.StopAll(ctx, nodes)}
	for _, n := range idle {
		errs = append(errs, n.discard(ctx))
	}
	if nets != nil {
		errs = append(errs, b.serial.do(func() error {
			return errors.Join(ignoreNotFound(nets.peers.Remove(ctx)), ignoreNotFound(nets.ports.Remove(ctx)))
		}))
	}
	if !b.keepDir && b.root != "" {
		errs = append(errs, os.RemoveAll(b.root))
	}
	errs = append(errs, b.cli.Close(), b.serial.close())
	return errors.Join(errs...)
}

// sweep removes the containers and networks that a locklab process on this host made and
// did not remove because it died (SIGKILL: no Close ran).
func (b *Backend) sweep(ctx context.Context) error {
	host, _, _ := strings.Cut(b.owner, "/")
	found, err := listLabelled(ctx, b.cli, labelOwner)
	if err != nil {
		return fmt.Errorf("docker backend: %w", err)
	}
	var errs []error
	for _, l := range found {
		h, pid, ok := strings.Cut(l.labels[labelOwner], "/")
		if p, err := strconv.Atoi(pid); !ok || h != host || err != nil || p <= 0 || !errors.Is(syscall.Kill(p, 0), syscall.ESRCH) {
			continue // not this host's, or its process lives
		}
		if l.network {
			_, err = b.cli.NetworkRemove(ctx, l.id, client.NetworkRemoveOptions{})
		} else {
			_, err = b.cli.ContainerRemove(ctx, l.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
		errs = append(errs, ignoreNotFound(err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("docker backend: remove what a dead locklab process left: %w", err)
	}
	return nil
}

// labelled is a container or a network that carries a label of locklab's.
type labelled struct {
	network  bool
	id, name string
	labels   map[string]string
}

// listLabelled lists the containers, then the networks, that carry label ("key" or
// "key=value").
func listLabelled(ctx context.Context, cli *testcontainers.DockerClient, label string) ([]labelled, error) {
	filter := client.Filters{}.Add("label", label)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var out []labelled
	for _, c := range cs.Items {
		out = append(out, labelled{id: c.ID, name: strings.Join(c.Names, ","), labels: c.Labels})
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range ns.Items {
		out = append(out, labelled{network: true, id: n.ID, name: n.Name, labels: n.Labels})
	}
	return out, nil
}

func ignoreNotFound(err error) error {
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "no such") {
		return nil
	}
	return err
}

// Owner is the value of the owner label on what the process with pid on this host makes.
func Owner(pid int) string {
	hostname, _ := os.Hostname()
	return hostname + "/" + strconv.Itoa(pid)
}

// Leftovers names the containers and networks on the engine that carry owner as their
// owner label ("" for any locklab owner): what is left of backends not closed.
func Leftovers(ctx context.Context, owner string) ([]string, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to the Docker engine: %w", err)
	}
	defer cli.Close()
	label := labelOwner
	if owner != "" {
		label += "=" + owner
	}
	found, err := listLabelled(ctx, cli, label)
	if err != nil {
		return nil, err
	}
	return names(found), nil
}

// names are "container NAME" and "network NAME" for each of found.
func names(found []labelled) []string {
	out := make([]string, len(found))
	for i, l := range found {
		out[i] = "container " + l.name
		if l.network {
			out[i] = "network " + l.name
		}
	}
	return out
}
