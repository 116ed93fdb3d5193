// Package zookeeper is what locklab needs of a ZooKeeper server to run an ensemble as a
// lock service: finding Java and the jar, a member's zoo.cfg and command line, whether it
// serves and as what (the four-letter word srvr), and making lock-0 the leader. cluster
// runs the members as processes (cluster/zookeeper.go); this package knows ZooKeeper.
package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster/serverlog"
)

// Kind is what cluster.KindOf says of a member.
const Kind = "zookeeper"

// EnvJar names the ZooKeeper jar to run instead of DefaultJar, Debian's. Its manifest's
// Class-Path must name its dependencies, as Debian's does.
const EnvJar = "LOCKLAB_ZOOKEEPER_JAR"

// DefaultJar is the jar of Debian's package zookeeper (3.8 in bookworm).
const DefaultJar = "/usr/share/java/zookeeper.jar"

// LogBinding is slf4j's simple logger, from libslf4j-java (a dependency of Debian's
// zookeeper). The jar's manifest names slf4j's API but no binding, so without one the
// server logs nothing: with it, the server logs to its stderr, which the process backend
// appends to the member's log across restarts.
const LogBinding = "/usr/share/java/slf4j-simple.jar"

// ZooKeeper's timings are a twentieth of its defaults (tickTime 2 s), as etcd's Raft
// timings are a tenth of etcd's, so that a session expiry or a leader election fits in a
// run: a follower that hears nothing from its leader for SyncLimit ticks (500 ms) gives
// up on it, as does a leader on a follower, and a new leader is elected within a second
// or so; a session may be as short as MinSession. Five ticks apart still, so that a
// loaded 2-core machine does not see spurious elections. ZooKeeper counts session
// timeouts in milliseconds and expires sessions once per tick.
const (
	Tick       = 100 * time.Millisecond
	InitLimit  = 10               // ticks a new leader waits for a quorum to connect and sync: 1 s
	SyncLimit  = 5                // ticks of silence before leader or follower gives up on the other
	MinSession = 2 * Tick         // ZooKeeper's own least: two ticks
	MaxSession = 60 * time.Second // ZooKeeper's default would be 20 ticks (2 s): let clients ask for more
)

// ExpiryLag is how late a leader may free an expired session's znodes: it expires
// sessions in buckets a tick wide, each at the tick after its deadline
// (ExpiryQueue.roundToNextInterval, 3.8), then commits the session's close by quorum
// before the znodes go; a tick more for that commit on a loaded machine.
const ExpiryLag = 2 * Tick

// LeaderPatience is how long a follower dials its new leader, which opens its quorum port
// only once elected, while the follower, elected at the same instant, dials at once: it
// is refused and dials again, five tries 100 ms apart within InitLimit ticks (ZooKeeper
// 3.8, Learner.connectToLeader). A link to a quorum port must be as patient
// (netproxy.Net.PatientLink): a plain link takes the connection and closes it, the
// follower takes that for a failed leader and votes again, and the leader waits InitLimit
// ticks for a quorum that does not come, election after election (measured through plain
// links: 1 to 4 s more for an election that needs that follower).
const LeaderPatience = 400 * time.Millisecond

// Why a ZooKeeper ensemble refuses a server clock under libfaketime, and Redis's
// persistence options (cluster.Refuses). libfaketime does reach a JVM's wall
// clock (System.currentTimeMillis, through libc: tried with Java 17), but not what counts.
const (
	NoFaketime = "ZooKeeper times sessions, elections and syncs by the monotonic clock (System.nanoTime), which locklab's libfaketime leaves alone: a clock fault would move nothing a ZooKeeper lock depends on"
	Durable    = "a ZooKeeper member always writes its transactions to its log and fsyncs it before it acknowledges"
)

// Runtime is how to run ZooKeeper on this machine.
type Runtime struct {
	Java      string // the java binary
	ClassPath string // the jar and LogBinding
}

// Find looks for Java, the jar (EnvJar, else DefaultJar) and LogBinding, saying what to
// install when one is missing.
func Find() (Runtime, error) {
	jar, from := os.Getenv(EnvJar), "$"+EnvJar
	if jar == "" {
		jar, from = DefaultJar, "Debian's place"
	}
	if !isFile(jar) {
		return Runtime{}, fmt.Errorf("ZooKeeper jar %s (%s) not found: install Debian's ZooKeeper with `apt-get install zookeeper`, or set %s to a zookeeper jar whose manifest names its dependencies", jar, from, EnvJar)
	}
	if !isFile(LogBinding) {
		return Runtime{}, fmt.Errorf("%s not found, which ZooKeeper logs through: `apt-get install libslf4j-java` (Debian's zookeeper depends on it)", LogBinding)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return Runtime{}, fmt.Errorf("java not found on PATH (%v): `apt-get install zookeeper` brings Debian's default Java", err)
	}
	return Runtime{Java: java, ClassPath: jar + string(os.PathListSeparator) + LogBinding}, nil
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

// Args is the java command line of m (a member whose Config is written).
func (r Runtime) Args(m Member) []string {
	return []string{
		// These flags cut a member's JVM start and footprint on a small machine: the
		// serial collector (no GC threads to start or share the cores with), the client
		// compiler only (C2's compilations of a start-up cost more than they return in a
		// short run), a heap small enough for locks (the default would allow a quarter of
		// the memory), no hsperfdata file left in /tmp. Measured on the 2-core machine,
		// idle, an ensemble of 3 started by cluster.Start, five times each: ready in 1.77 s
		// on average instead of 2.09 s, 65 MB resident per member instead of 75 MB. (An
		// ensemble of 1 starts in 0.7 to 0.9 s, of 5 in 2.6 to 2.8 s: the JVMs warming up
		// on two cores take most of it.)
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx128m", "-XX:-UsePerfData",
		// IPv4 only, so that the wildcard address a member binds its peer ports to
		// (Config) is not an IPv6 socket too.
		"-Djava.net.preferIPv4Stack=true",
		// A member that cannot bind its election port exits at once, rather than after
		// three attempts a second apart, so that a port clash is retried sooner.
		"-Dzookeeper.electionPortBindRetry=1",
		// A member that finds no quorum sends its vote again after 200 ms, then twice as
		// long each time up to 60 s by default, so that a partition healed after some
		// seconds would go unnoticed for as long: from 100 ms up to a second.
		"-Dzookeeper.fastleader.minNotificationInterval=100",
		"-Dzookeeper.fastleader.maxNotificationInterval=1000",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
		// Not a line for each four-letter word: the harness's probes (srvr) would fill
		// the log.
		"-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.server.NIOServerCnxn=warn",
		// Names the process as ours: `pgrep -af locklab.member`.
		"-Dlocklab.member=" + m.Name,
		"-cp", r.ClassPath,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", m.ConfigFile(),
	}
}

// Member is one member of an ensemble.
type Member struct {
	ID   int // its myid, 1..N
	Name string
	Dir  string // its directory: zoo.cfg, zookeeper.log, and its data in Dir/data
	// ClientPort serves clients on 127.0.0.1; the leader takes its followers'
	// connections on QuorumPort; members vote on their ElectionPorts.
	ClientPort, QuorumPort, ElectionPort int
	// Peers are the addresses it dials each other member's ports by (its links to them,
	// or their own addresses), by the other's name.
	Peers map[string]Peer
}

// Peer is how a member dials another one's quorum and election ports: host:port each,
// on one host, since a server line of zoo.cfg has one.
type Peer struct{ Quorum, Election string }

// ClientAddr is where the member serves clients.
func (m Member) ClientAddr() string { return "127.0.0.1:" + strconv.Itoa(m.ClientPort) }

// QuorumAddr and ElectionAddr are the member's own peer ports on the loopback.
func (m Member) QuorumAddr() string   { return "127.0.0.1:" + strconv.Itoa(m.QuorumPort) }
func (m Member) ElectionAddr() string { return "127.0.0.1:" + strconv.Itoa(m.ElectionPort) }

// ConfigFile is the member's zoo.cfg, LogFile its log (stdout and stderr of its JVM),
// DataDir its snapshots and transaction log.
func (m Member) ConfigFile() string { return filepath.Join(m.Dir, "zoo.cfg") }
func (m Member) LogFile() string    { return filepath.Join(m.Dir, "zookeeper.log") }
func (m Member) DataDir() string    { return filepath.Join(m.Dir, "data") }

// NewMembers are the n members of a new ensemble, named lock-0 … lock-N-1, with a fresh
// client port from port and fresh peer ports from peerPort (PeerPort); reach says how
// member from dials member to's ports. lock-0 has the highest id, N: an election among
// members with equal histories goes to the highest id, so lock-0 is the first leader, as
// etcd's lock-0 is (Lead).
func NewMembers(n int, port, peerPort func() (int, error), reach func(from, to Member) (Peer, error)) ([]Member, error) {
	members := make([]Member, n)
	for i := range members {
		m := &members[i]
		m.ID, m.Name, m.Peers = n-i, fmt.Sprintf("lock-%d", i), map[string]Peer{}
		var err error
		if m.ClientPort, err = port(); err == nil {
			if m.QuorumPort, err = peerPort(); err == nil {
				m.ElectionPort, err = peerPort()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("ports of %s: %w", m.Name, err)
		}
	}
	for _, from := range members {
		for _, to := range members {
			if to.ID == from.ID {
				continue
			}
			p, err := reach(from, to)
			if err != nil {
				return nil, fmt.Errorf("how %s reaches %s: %w", from.Name, to.Name, err)
			}
			from.Peers[to.Name] = p
		}
	}
	return members, nil
}

// PeerPort is a port for a member's quorum or election port that nobody holds now, below
// the kernel's range of ephemeral ports. A follower's quorum port stays closed until it
// leads, maybe minutes into a run; a port of the ephemeral range could meanwhile become
// the local port of one of the run's outgoing connections, and the new leader could not
// bind it. Only a process that asks for a port by its number takes one below the range.
func PeerPort() (int, error) {
	low := 32768 // Linux's default start of the range
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const least = 10000 // above the ports services of a machine are usually given
	if low <= least {
		return 0, fmt.Errorf("peer port: the ephemeral ports start at %d, leaving none above %d below them", low, least)
	}
	for range 100 {
		p := least + rand.IntN(low-least)
		// The wildcard address, as the member binds it (Config).
		if l, err := net.Listen("tcp4", "0.0.0.0:"+strconv.Itoa(p)); err == nil {
			l.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("peer port: 100 ports between %d and %d tried, none free", least, low)
}

// Config is m's zoo.cfg in the ensemble of members. ZooKeeper reads the server lines both
// to bind a member's own peer ports and to dial the others, so each member has its own:
// its own line has its own ports, the others' lines the addresses m dials them by (m.Peers:
// its links to them). Its own host is the wildcard address because a member that opens
// an election connection sends its own line's address, and a peer of higher id drops the
// connection and dials back to that address, past the link; a wildcard address it
// ignores, and dials by its own zoo.cfg, through its link (ZooKeeper 3.8,
// QuorumCnxManager.handleConnection). The price: a member's peer ports listen on every
// interface, not the loopback alone, for as long as it runs; its client port does not.
//
// So every byte between members flows through the links: followers dial the leader's
// quorum port; a pair of members votes on one connection, which the member of higher id
// opens to the other's election port. A link for each member and each peer port it
// dials (cluster.QuorumLink, cluster.ElectionLink), rather than one shared by all who
// dial a member (etcd's), because of that: a shared link cannot keep the member of
// highest id out of elections (its votes travel on the others' links), so a leader cut
// off that way keeps winning elections it cannot serve, and no other member leads.
//
// A single member runs as a quorum of one, not standalone, so that every ensemble has a
// leader and serves alike.
func (m Member) Config(members []Member) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s (myid %d) of a locklab ensemble of %d\n", m.Name, m.ID, len(members))
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", Tick.Milliseconds(), InitLimit, SyncLimit)
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", MinSession.Milliseconds(), MaxSession.Milliseconds())
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", m.DataDir(), m.ClientPort)
	// Every client connects from 127.0.0.1, which ZooKeeper's default would hold to 60
	// connections.
	b.WriteString("maxClientCnxns=0\n")
	b.WriteString("admin.enableServer=false\n4lw.commands.whitelist=srvr,conf,ruok,mntr\n")
	b.WriteString("standaloneEnabled=false\nreconfigEnabled=false\n")
	for _, p := range members {
		line := fmt.Sprintf("0.0.0.0:%d:%d", p.QuorumPort, p.ElectionPort)
		if p.ID != m.ID {
			peer := m.Peers[p.Name]
			qhost, qport, err := net.SplitHostPort(peer.Quorum)
			if err != nil {
				return "", fmt.Errorf("zoo.cfg of %s: quorum address of %s: %w", m.Name, p.Name, err)
			}
			ehost, eport, err := net.SplitHostPort(peer.Election)
			if err != nil || ehost != qhost {
				return "", fmt.Errorf("zoo.cfg of %s: election address %q of %s: want a port on %s, the host of its quorum address (%v)", m.Name, peer.Election, p.Name, qhost, err)
			}
			line = qhost + ":" + qport + ":" + eport
		}
		fmt.Fprintf(&b, "server.%d=%s\n", p.ID, line)
	}
	return b.String(), nil
}

// WriteConfig writes m's zoo.cfg (Config) and its data directory's myid.
func (m Member) WriteConfig(members []Member) error {
	cfg, err := m.Config(members)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(m.DataDir(), 0o755); err != nil {
		return fmt.Errorf("data directory of %s: %w", m.Name, err)
	}
	if err := os.WriteFile(filepath.Join(m.DataDir(), "myid"), []byte(strconv.Itoa(m.ID)+"\n"), 0o644); err != nil {
		return fmt.Errorf("myid of %s: %w", m.Name, err)
	}
	if err := os.WriteFile(m.ConfigFile(), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("zoo.cfg of %s: %w", m.Name, err)
	}
	return nil
}

// ErrNotServing is srvr's answer from a member that runs but serves no clients: it has
// no quorum, or is not yet in sync with its leader.
var ErrNotServing = errors.New("not serving")

// The modes srvr reports of a serving member of an ensemble.
const (
	Leader   = "leader"
	Follower = "follower"
)

// fourLetterTimeout bounds a four-letter word (less when ctx ends sooner), so that a
// hung member fails a probe rather than holding it for as long as the caller waits.
const fourLetterTimeout = time.Second

// fourLetter sends the four-letter word cmd to the server at addr and returns its answer
// (the server closes the connection after it).
func fourLetter(ctx context.Context, addr, cmd string) (string, error) {
	deadline := time.Now().Add(fourLetterTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	d := net.Dialer{Deadline: deadline}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s of %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return "", fmt.Errorf("%s of %s: %w", cmd, addr, err)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("%s of %s: %w", cmd, addr, err)
	}
	out, err := io.ReadAll(io.LimitReader(conn, 64<<10))
	if err != nil {
		return "", fmt.Errorf("%s of %s: %w", cmd, addr, err)
	}
	return string(out), nil
}

// Mode is what the member at addr is, as srvr says: Leader or Follower; ErrNotServing
// while it serves no clients.
func Mode(ctx context.Context, addr string) (string, error) {
	out, err := fourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	if strings.Contains(out, "not currently serving") {
		return "", fmt.Errorf("%w: %s says %q", ErrNotServing, addr, strings.TrimSpace(out))
	}
	for line := range strings.Lines(out) {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("srvr of %s answered %q, which names no mode", addr, out)
}

// Serving checks that the member at addr serves clients.
func Serving(ctx context.Context, addr string) error {
	_, err := Mode(ctx, addr)
	return err
}

// ElectionListening is what a member's log says once it has bound its election port.
// One that cannot bind it exits, but a second later: it may serve meanwhile.
const ElectionListening = "is accepting connections now, my election bind port"

// Ready checks that m serves clients, by its own word: srvr says it serves, and conf
// names m's data directory, since another run's member may hold the port m failed to
// bind; and that it takes its peers' votes: what its log grew by since logStart (its size
// before this run) says so.
func (m Member) Ready(ctx context.Context, logStart int64) error {
	if err := Serving(ctx, m.ClientAddr()); err != nil {
		return err
	}
	conf, err := fourLetter(ctx, m.ClientAddr(), "conf")
	if err != nil {
		return err
	}
	if !strings.Contains(conf, "\ndataDir="+m.DataDir()+string(filepath.Separator)) {
		return fmt.Errorf("a member serves on %s, but not %s: its data directory is not %s", m.ClientAddr(), m.Name, m.DataDir())
	}
	listens, err := serverlog.Grew(m.LogFile(), logStart, ElectionListening)
	if err != nil {
		return fmt.Errorf("log of %s: %w", m.Name, err)
	}
	if !listens {
		return fmt.Errorf("%s serves, but its log does not say it listens on its election port %d", m.Name, m.ElectionPort)
	}
	return nil
}
