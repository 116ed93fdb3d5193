#!/usr/bin/python3
"""locklab's redis-py client: redis-py's own Lock (redis.lock.Lock), driven by locklab.

The lock is redis-py 4.3.4's, from Debian's package python3-redis, used as its users use
it: ``Redis(...).lock(name, timeout=ttl_seconds, sleep=..., blocking=...,
blocking_timeout=..., thread_local=...)``, then ``acquire()``, ``release()`` and
``extend(t, replace_ttl=True)`` on the same Lock object. sleep, blocking,
blocking_timeout and thread_local are the plan's (LOCKLAB_OPTIONS, a JSON object,
durations in milliseconds; declared in lockimpl/subprocess/python.go): by default one
try per acquire (blocking=False; the workload retries by itself), thread_local=True.
What the library sends (redis/lock.py):

  acquire  SET name <uuid1().hex> NX PX int(timeout*1000)
  release  EVALSHA of a compare-and-delete script (1 deleted, 0 not ours)
  extend   EVALSHA of a compare-and-PEXPIRE script (1 extended, 0 not ours, or no TTL)

(an EVALSHA answered NOSCRIPT -- the script was not run -- is followed by SCRIPT LOAD and
one more EVALSHA, redis-py's Script.__call__).

The Redis client is redis.Redis on one server, the primary of Sentinel().master_for on
the replicated topology, and redis.cluster.RedisCluster on a Redis Cluster, whose node
connections go through this client's links and send each command at most once (see
"Redis Cluster" below).

It speaks locklab's subprocess protocol locklab-lock/1 (docs/subprocess-protocol.md):
a hello line, then one JSON request per line on stdin and one JSON answer per line on
stdout; the log goes to stderr. Run it with Debian's interpreter, /usr/bin/python3, for
which python3-redis is installed.

Outcomes are honest, as for locklab's Go adapters (docs/libraries.md): "ok" and "fail"
only on a definite answer from Redis -- SET's OK or nil, the script's 1 or 0 (which
redis-py turns into True / False, or LockNotOwnedError). Anything else -- a timeout, a
connection error, an error reply, a LockError raised before anything was sent, an
exception of any other kind -- is "unknown": the command may or may not have run.
"""

import collections
import json
import logging
import math
import os
import ssl
import sys
import time

NAME = "redis-py"
PROTOCOL = "locklab-lock/1"

# How many Lock objects of granted leases the client keeps (oldest forgotten first). A
# lease that was never released (its holder gave up, crashed or stopped) would otherwise
# stay forever; a forgotten one is acted on through a rebuilt Lock (see Client.lock_for).
MAX_LEASES = 10000

# How long the client tries to reach its server before it says hello anyway (the
# protocol asks for a bounded wait; locklab waits LOCKLAB_TIMEOUT_MS + 10 s). One more
# command timeout may pass while the last PING runs.
CONNECT_WAIT_S = 5.0


def log(*args):
    print(f"[{NAME} {os.getpid()}]", *args, file=sys.stderr, flush=True)


try:
    import redis
    from redis.backoff import NoBackoff
    from redis.cluster import ClusterNode, RedisCluster
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import LockNotOwnedError, RedisClusterException
    from redis.exceptions import TimeoutError as RedisTimeoutError
    from redis.retry import Retry
    from redis.sentinel import Sentinel
except ImportError as err:
    log(
        f"redis-py is not installed for {sys.executable} ({err}): install Debian's "
        "python3-redis (apt-get install -y python3-redis; scripts/install-deps.sh does it) "
        "and run this client with /usr/bin/python3"
    )
    sys.exit(3)

LIBRARY = f"redis-py@{redis.__version__}"


class OneLine(logging.Formatter):
    """redis-py's own log records (RedisCluster logs every MOVED, ASK and connection
    error with log.exception) as one line each on stderr, the exception without its
    traceback."""

    def format(self, record):
        msg = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            err = record.exc_info[1]
            msg = f"{msg}: {type(err).__name__}: {err}"
        return f"[{NAME} {os.getpid()}] {record.name}: {msg}"


def log_redis():
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLine())
    logger = logging.getLogger("redis")
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False
TESTED_VERSION = "4.3.4"


# ---- environment -------------------------------------------------------------------


def parse_addr(s):
    """host:port, also [v6]:port, as (host, port)."""
    host, sep, port = s.rpartition(":")
    if not sep or not host:
        raise ValueError(f"bad address {s!r}: want host:port")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bad port in address {s!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def join_addr(host, port):
    """The host:port form locklab writes (Go's net.JoinHostPort)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def env_list(name):
    return [s.strip() for s in os.environ.get(name, "").split(",") if s.strip()]


def timeout_seconds():
    """LOCKLAB_TIMEOUT_MS, the per-command network timeout (2000 when unset), in seconds."""
    raw = os.environ.get("LOCKLAB_TIMEOUT_MS", "2000")
    try:
        ms = float(raw)
    except ValueError:
        ms = -1
    if not math.isfinite(ms) or ms <= 0:
        raise ValueError(f"bad LOCKLAB_TIMEOUT_MS {raw!r}")
    return ms / 1000


def connection_options(timeout_s):
    """The options of every connection, to the servers and to the Sentinels.

    Each command is sent at most once, and gives up after LOCKLAB_TIMEOUT_MS:

    - socket_timeout: the bound on every read and write of a command (redis-py's default,
      None, waits forever); socket_connect_timeout: the bound on the connect (default:
      socket_timeout's).
    - No retries. redis-py 4.3.4 retries nothing by default (retry_on_timeout=False,
      retry_on_error=None give each connection Retry(NoBackoff(), 0)); it is spelled out
      here so that it stays so on a redis-py whose defaults differ (newer releases
      retry timeouts and connection errors by default): a SET NX resent after a timeout
      could answer nil for the lock the first one took. After a timeout or connection error redis-py disconnects the
      connection (so no stale reply is read later) and raises; the next command opens a
      new one from the pool.
    - health_check_interval=0 (the default): no PING before commands.
    """
    return dict(
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry_on_timeout=False,
        retry=Retry(NoBackoff(), 0),
        health_check_interval=0,
    )


def access_options():
    """How to use servers that need more than a plain connection (external ones), from
    the environment only (secrets never reach the command line or a protocol line):
    LOCKLAB_REDIS_USERNAME, LOCKLAB_REDIS_PASSWORD, LOCKLAB_REDIS_DB, and
    LOCKLAB_REDIS_TLS=1 with LOCKLAB_REDIS_CA (the CA bundle to trust) and
    LOCKLAB_REDIS_TLS_SERVERNAME (the name to check the certificate against: the address
    dialled is locklab's link, not the server's name). The connection options to add,
    and the TLS server name (None without TLS)."""
    opts = {}
    if os.environ.get("LOCKLAB_REDIS_USERNAME"):
        opts["username"] = os.environ["LOCKLAB_REDIS_USERNAME"]
    if os.environ.get("LOCKLAB_REDIS_PASSWORD"):
        opts["password"] = os.environ["LOCKLAB_REDIS_PASSWORD"]
    db = os.environ.get("LOCKLAB_REDIS_DB", "")
    if db:
        if not db.isdigit():
            raise ValueError(f"bad LOCKLAB_REDIS_DB {db!r}")
        opts["db"] = int(db)
    tls = os.environ.get("LOCKLAB_REDIS_TLS", "")
    if tls in ("", "0"):
        return opts, None
    if tls != "1":
        raise ValueError(f"bad LOCKLAB_REDIS_TLS {tls!r}: want 1 or unset")
    names = env_list("LOCKLAB_REDIS_TLS_SERVERNAME")
    if len(names) != 1:
        raise ValueError(f"LOCKLAB_REDIS_TLS_SERVERNAME must name exactly one server, got {len(names)}")
    return opts, names[0]


def tls_connection(server_name, cafile):
    """A redis-py connection class that speaks TLS to its address and checks the server's
    certificate (chain against cafile, or the system's CAs, and host name) against
    server_name. redis-py 4.3.4's SSLConnection checks the certificate against the address
    it dials, which is locklab's link on 127.0.0.1."""

    class NamedTLSConnection(redis.connection.Connection):
        def _connect(self):
            sock = super()._connect()  # TCP, with its timeouts
            context = ssl.create_default_context(cafile=cafile)  # CERT_REQUIRED, host name checked
            return context.wrap_socket(sock, server_hostname=server_name)

    return NamedTLSConnection


class ViaSentinel(Sentinel):
    """redis-py's Sentinel client, dialling the primary it discovers through this client's
    own link to it (LOCKLAB_VIA: from=to), where locklab injects network faults."""

    def __init__(self, sentinels, via, **kwargs):
        super().__init__(sentinels, **kwargs)
        self.via = via

    def discover_master(self, service_name):
        host, port = super().discover_master(service_name)
        return self.via.get(join_addr(host, port), (host, port))


def parse_via():
    """LOCKLAB_VIA, from=to[,from=to...]: each address a server names (Sentinel its
    primary, a Redis Cluster node itself), as join_addr writes it, to this client's link
    to it, (host, port)."""
    via = {}
    for pair in env_list("LOCKLAB_VIA"):
        frm, sep, to = pair.partition("=")
        if not sep or not frm or not to:
            raise ValueError(f"bad LOCKLAB_VIA entry {pair!r}: want from=to")
        via[join_addr(*parse_addr(frm))] = parse_addr(to)
    return via


def on_cluster():
    """Whether locklab gave a Redis Cluster (LOCKLAB_CLUSTER=1)."""
    v = os.environ.get("LOCKLAB_CLUSTER", "")
    if v not in ("", "0", "1"):
        raise ValueError(f"bad LOCKLAB_CLUSTER {v!r}: want 1 or unset")
    return v == "1"


def connect():
    """The redis-py client for the environment: one server (LOCKLAB_ADDRS, with its
    access_options), the primary followed through Sentinel (LOCKLAB_SENTINELS,
    LOCKLAB_MASTER, LOCKLAB_VIA), or a Redis Cluster (LOCKLAB_CLUSTER=1, see
    connect_cluster)."""
    opts = connection_options(timeout_seconds())
    if on_cluster():
        return connect_cluster(opts)
    sentinels = env_list("LOCKLAB_SENTINELS")
    if not sentinels:
        addrs = env_list("LOCKLAB_ADDRS")
        if len(addrs) != 1:
            raise ValueError(f"LOCKLAB_ADDRS must name exactly one server, got {os.environ.get('LOCKLAB_ADDRS')!r}")
        host, port = parse_addr(addrs[0])
        extra, server_name = access_options()
        if server_name is None:
            return redis.Redis(host=host, port=port, **opts, **extra)
        cls = tls_connection(server_name, os.environ.get("LOCKLAB_REDIS_CA") or None)
        return redis.Redis(connection_pool=redis.ConnectionPool(connection_class=cls, host=host, port=port, **opts, **extra))
    master = os.environ.get("LOCKLAB_MASTER", "")
    if not master:
        raise ValueError("LOCKLAB_SENTINELS given without LOCKLAB_MASTER")
    # The Sentinels get the same options (redis-py would give them only the socket_*
    # ones); a Sentinel that does not answer is skipped by discover_master, and no
    # primary found is MasterNotFoundError, a ConnectionError: unknown.
    sentinel = ViaSentinel([parse_addr(s) for s in sentinels], parse_via(), sentinel_kwargs=dict(opts), **opts)
    return sentinel.master_for(master)


# ---- Redis Cluster -----------------------------------------------------------------
#
# On a Redis Cluster (LOCKLAB_CLUSTER=1) the Lock runs on redis-py's own cluster client,
# redis.cluster.RedisCluster, seeded with LOCKLAB_ADDRS (this client's links to the
# nodes); it sends each command to the primary of its key's slot. redis-py 4.3.4 needs
# two things done here, both in the one connection class of the nodes (cluster_connection):
#
# 1. Dial this client's links. The nodes announce their own addresses (CLUSTER SLOTS,
#    MOVED, ASK) and 4.3.4's RedisCluster has no address_remap (later releases do). A
#    connection to a node announced as host:port dials LOCKLAB_VIA[host:port] instead,
#    while the ClusterNode keeps the announced name, which the slot map, MOVED and ASK
#    go by. The seeds are links themselves and are dialled as they are; any other
#    address is refused (Unmappable), never dialled. The hook is the connection class
#    because it is the one place every connection of RedisCluster is made -- to the
#    seeds, in every slot-map refresh, to a node a MOVED names, and for the COMMAND that
#    RedisCluster's constructor sends. 4.3.4 gives its nodes' pools a connection_class
#    only when it is built from a URL (NodesManager.create_redis_node: from_url gives
#    ConnectionPool(**kwargs), else Redis(host, port, **kwargs), which takes none), so
#    it is built with url= the first seed. A NodesManager subclass overriding
#    create_redis_node would be the other hook, but RedisCluster.__init__ builds its
#    NodesManager itself and sends COMMAND through it (to an announced address) before
#    returning: replacing rc.nodes_manager afterwards comes too late.
#
# 2. Send a command at most once. What 4.3.4 resends, and what is done about it:
#
#    _execute_command   after a ConnectionError or TimeoutError -- the connection closed
#                       or the reply did not come in socket_timeout, so the command may
#                       have been executed -- sleeps 0.25 s and sends the command again to
#                       the same node, up to 5 times; no option turns that off
#                       (RedisClusterRequestTTL bounds the MOVED and ASK hops as well).
#                       So once the command was written on a connection, the connection
#                       raises SentOnce instead of those errors: a RedisClusterException,
#                       which _execute_command raises at once and execute_command does
#                       not retry. An error before anything of the command was written
#                       (connecting) is left to redis-py: trying again resends nothing.
#    execute_command    runs the whole command again after ConnectionError, TimeoutError
#                       or ClusterDownError, cluster_error_retry_attempts times (3): 1
#                       here (SentOnce is not among them; 1 bounds the time a call takes
#                       when a node cannot be connected, and CLUSTERDOWN is an error
#                       reply, unknown, as on one server).
#    MOVED, ASK, TRYAGAIN  followed (at most RedisClusterRequestTTL, 16, hops): definite
#                       refusals, the command was not executed there.
#    per node           retry=Retry(NoBackoff(), 0), retry_on_timeout=False
#                       (connection_options), as on one server.
#
# redis-py refreshes its slot map after the fifth connection error in a row on a node,
# which the client, answering after the first, never reaches: it refreshes the map
# instead before the command that follows a SentOnce (a killed primary's link still
# accepts connections, then closes them; without the refresh the client would go on
# sending to the dead node and never find its replica, promoted). And when the node of
# a command turns out, before anything is written, to have closed the idle connection
# the pool kept to it (NodeClosed), the map is read again and the command run once more
# on it: nothing of it was sent, and a client that had used the dead node finds the
# promoted one without an unknown.


class SentOnce(RedisClusterException):
    """A command was written to a node and its outcome is unknown: the connection failed
    or timed out before its reply. It is not sent again."""


class NodeClosed(RedisClusterException):
    """Before a command was written: the node had closed this client's idle connection
    to it (it went away, or the link was reset), so the slot map may be stale."""


class Unmappable(RedisClusterException):
    """The cluster named a node this client has no link to (not in LOCKLAB_VIA)."""


class Flight:
    """The command the cluster client is executing (its arguments, as written), the
    connection it was written on while its reply is awaited, and the node, if any, that
    was found to have closed an idle connection since the command started."""

    def __init__(self):
        self.args = None
        self.conn = None
        self.closed = None


def cluster_dialer(seeds, via):
    """dial(host, port): where to connect for the node announced as host:port -- its
    link, via[host:port]; a seed (one of this client's links) is itself. Anything else
    raises Unmappable."""

    def dial(host, port):
        name = join_addr(host, port)
        if name in via:
            return via[name]
        if name in seeds:
            return host, port
        mapped = ", ".join(sorted(via)) or "nothing"
        raise Unmappable(f"the Redis Cluster names node {name}, which LOCKLAB_VIA does not map to a link "
                         f"of this client (it maps {mapped}): not dialled")

    return dial


def cluster_connection(dial, flight):
    """The connection class of every node of the cluster client (see above): it dials
    dial(host, port), and raises SentOnce for flight's command once the command was
    written on it and no reply can be read."""

    class ViaConnection(redis.connection.Connection):
        def __init__(self, host="localhost", port=6379, **kwargs):
            self.node = join_addr(host, port)
            link_host, link_port = dial(host, port)
            super().__init__(host=link_host, port=link_port, **kwargs)

        def lost(self, err):
            flight.conn = None
            return SentOnce(f"{type(err).__name__}: {err} (node {self.node}); not sent again")

        def can_read(self, timeout=0):
            # The pool asks this of a connection before it hands it out; an idle one
            # the node closed raises (and the pool connects anew).
            try:
                return super().can_read(timeout)
            except (RedisConnectionError, OSError):
                flight.closed = self.node
                raise

        def send_command(self, *args, **kwargs):
            if flight.args is None or args != flight.args:  # ASKING, INFO, CLUSTER SLOTS
                return super().send_command(*args, **kwargs)
            if flight.closed == self.node:
                flight.closed = None
                raise NodeClosed(f"node {self.node} had closed an idle connection; not sent, the slot map is read again first")
            self.connect()  # writes nothing of the command; its errors are redis-py's
            flight.conn = self
            try:
                super().send_command(*args, **kwargs)
            except (RedisConnectionError, RedisTimeoutError) as err:
                raise self.lost(err) from err  # some of it may have gone out
            return None

        def read_response(self, *args, **kwargs):
            if flight.conn is not self:
                return super().read_response(*args, **kwargs)
            try:
                response = super().read_response(*args, **kwargs)
            except (RedisConnectionError, RedisTimeoutError) as err:
                raise self.lost(err) from err
            except BaseException:  # a reply (MOVED, ASK, any error reply): settled
                flight.conn = None
                raise
            flight.conn = None
            return response

    return ViaConnection


class AtMostOnceCluster(RedisCluster):
    """RedisCluster whose connections are cluster_connection(..., flight): each command
    is flight's while it runs; after a SentOnce the slot map is refreshed before the next
    command."""

    def __init__(self, flight, **kwargs):
        self._flight = flight
        self._refresh = False
        super().__init__(**kwargs)  # sends COMMAND: flight is set

    def execute_command(self, *args, **kwargs):
        for last in (False, True):
            if self._refresh:
                self.nodes_manager.initialize()  # raises before anything of this command is sent
                self._refresh = False
            flight = self._flight
            outer = flight.args, flight.conn, flight.closed
            flight.args, flight.conn, flight.closed = args, None, None
            try:
                return super().execute_command(*args, **kwargs)
            except SentOnce:
                self._refresh = True
                raise
            except NodeClosed:  # nothing was written: once more, on a fresh slot map
                self._refresh = True
                if last:
                    raise
            finally:
                flight.args, flight.conn, flight.closed = outer
        raise AssertionError("unreachable")


class LazyCluster:
    """The cluster client, built on first use: building it asks the seeds for the slot
    map (INFO, CLUSTER SLOTS; then COMMAND), which fails while no seed answers. A request
    meanwhile answers unknown, and the next one builds again."""

    def __init__(self, build):
        self.build = build
        self.rc = None

    def get(self):
        if self.rc is None:
            self.rc = self.build()
        return self.rc

    def ping(self):
        self.get()  # the slot map came from a node: connected

    def lock(self, *args, **kwargs):
        return self.get().lock(*args, **kwargs)

    def close(self):
        if self.rc is not None:
            self.rc.close()


def connect_cluster(opts):
    """The cluster client of the environment (LOCKLAB_CLUSTER=1; see above): the seeds
    are LOCKLAB_ADDRS, the links to the announced addresses LOCKLAB_VIA; a user and
    password are taken, a database other than 0 and TLS are refused."""
    if env_list("LOCKLAB_SENTINELS"):
        raise ValueError("LOCKLAB_SENTINELS given with LOCKLAB_CLUSTER=1")
    addrs = env_list("LOCKLAB_ADDRS")
    if not addrs:
        raise ValueError(f"LOCKLAB_ADDRS must name at least one node of the Redis Cluster, got {os.environ.get('LOCKLAB_ADDRS')!r}")
    extra, server_name = access_options()
    if server_name is not None:
        raise ValueError("TLS to a Redis Cluster is not supported")
    if extra.pop("db", 0) != 0:
        raise ValueError("a Redis Cluster has database 0 only")
    seeds = [parse_addr(a) for a in addrs]
    dial = cluster_dialer({join_addr(*s) for s in seeds}, parse_via())
    flight = Flight()
    node_opts = dict(opts)
    # Not among the options RedisCluster hands its nodes (it would drop it); 0, no
    # health-check PINGs, is the connections' default.
    node_opts.pop("health_check_interval")

    def build():
        rc = AtMostOnceCluster(
            flight,
            url="redis://" + join_addr(*seeds[0]),  # see above: connection_class reaches the nodes
            startup_nodes=[ClusterNode(host, port) for host, port in seeds[1:]],
            connection_class=cluster_connection(dial, flight),
            cluster_error_retry_attempts=1,
            **node_opts,
            **extra,
        )
        for node in rc.get_nodes():  # every node of the slot map has a link
            dial(node.host, node.port)
        return rc

    return LazyCluster(build)


# ---- options -----------------------------------------------------------------------

# The Lock's parameters a plan sets, with locklab's defaults (python.go's): kind, default.
# Durations arrive in milliseconds.
OPTIONS = {
    "blocking": ("bool", False),
    "blocking_timeout": ("duration", 500.0),
    "sleep": ("duration", 100.0),
    "thread_local": ("bool", True),
}


def parse_options(raw):
    """LOCKLAB_OPTIONS (raw) as every option's value: the given one, else its default. An
    unset or empty variable gives the defaults (a client run by hand). locklab checks the
    values before it starts the client; anything but a JSON object of known options with
    values of their kind is refused all the same (ValueError), never silently defaulted."""
    out = {name: default for name, (_, default) in OPTIONS.items()}
    if not raw:
        return out
    try:
        given = json.loads(raw)
    except ValueError as err:
        raise ValueError(f"bad LOCKLAB_OPTIONS {raw!r}: {err}") from None
    if not isinstance(given, dict):
        raise ValueError(f"bad LOCKLAB_OPTIONS {raw!r}: want a JSON object")
    for name, value in given.items():
        if name not in OPTIONS:
            raise ValueError(f"LOCKLAB_OPTIONS: unknown option {name!r} (options: {', '.join(OPTIONS)})")
        kind = OPTIONS[name][0]
        if kind == "bool":
            ok = isinstance(value, bool)
        else:  # duration: milliseconds
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
        if not ok:
            want = "true or false" if kind == "bool" else "milliseconds (a number, at least 0)"
            raise ValueError(f"LOCKLAB_OPTIONS: option {name}: want {want}, got {json.dumps(value)}")
        out[name] = value
    return out


# ---- the lock ----------------------------------------------------------------------


def unknown(req_id, err):
    msg = f"{type(err).__name__}: {err}" if isinstance(err, BaseException) else str(err)
    return {"id": req_id, "outcome": "unknown", "error": msg}


def validity_ms(asked_ms, sent_ms, start):
    """What is left of the lease: the TTL redis-py actually sent (int(seconds*1000), which
    may be 1 ms below what was asked), minus the time since just before the send."""
    elapsed_ms = (time.monotonic() - start) * 1000
    return max(0, math.floor(min(asked_ms, sent_ms) - elapsed_ms))


class Client:
    """The lock operations, on one redis-py client, with the Lock object of every lease
    this process was granted (by key and token), as a user keeps the Lock it acquired.

    Every request is handled on the main thread: the Lock's token lives in thread-local
    storage (thread_local=True, the default), which only the thread that acquired sees;
    with thread_local=False in a plain attribute, which changes nothing here.
    """

    def __init__(self, r, options):
        self.r = r
        self.options = options
        self.leases = collections.OrderedDict()  # (key, token) -> Lock

    def new_lock(self, key, ttl_s):
        o = self.options
        return self.r.lock(key, timeout=ttl_s, sleep=o["sleep"] / 1000, blocking=o["blocking"],
                           blocking_timeout=o["blocking_timeout"] / 1000, thread_local=o["thread_local"])

    def remember(self, key, token, lock):
        self.leases[(key, token)] = lock
        self.leases.move_to_end((key, token))
        while len(self.leases) > MAX_LEASES:
            self.leases.popitem(last=False)

    def lock_for(self, key, token, ttl_s):
        """The Lock of a lease: the one acquire returned, or -- for a lease this process
        does not hold (its predecessor took it before it was replaced, or it was already
        released or forgotten) -- a new Lock that carries the request's token. redis-py
        has no call to adopt a token; the Lock keeps it in ``local.token``, which acquire
        sets, and release and extend send. Either way the server decides."""
        lock = self.leases.get((key, token))
        if lock is None:
            lock = self.new_lock(key, ttl_s)
            lock.local.token = lock.redis.get_encoder().encode(token)
        return lock

    def acquire(self, req):
        key, ttl_ms = req["key"], req["ttl_ms"]
        lock = self.new_lock(key, ttl_ms / 1000)
        sent_ms = int(lock.timeout * 1000)  # the PX do_acquire sends
        # A blocking acquire tries SET NX every `sleep` until granted or blocking_timeout;
        # the validity counts from just before the try that was granted, so the Lock's
        # do_acquire (one SET) is timed: the library's own method, called unchanged.
        tries = []
        do_acquire = lock.do_acquire

        def timed_do_acquire(token):
            tries.append(time.monotonic())  # before the send: the validity never overstates the grant
            return do_acquire(token)

        lock.do_acquire = timed_do_acquire
        got = lock.acquire()  # blocking, blocking_timeout and sleep: the Lock's
        start = tries[-1] if tries else time.monotonic()
        if got is True:
            token = lock.local.token.decode()
            self.remember(key, token, lock)
            return {"id": req["id"], "outcome": "ok", "token": token, "fence": 0,
                    "validity_ms": validity_ms(ttl_ms, sent_ms, start)}
        if got is False:  # SET NX answered nil, every try
            tried = f" ({len(tries)} tries)" if len(tries) > 1 else ""
            return {"id": req["id"], "outcome": "fail", "error": f"lock is held{tried}"}
        return unknown(req["id"], f"unexpected acquire result {got!r}")

    def release(self, req):
        key, token = req["key"], req["token"]
        lock = self.lock_for(key, token, None)
        # Whatever happens, this Lock is done: release() clears its token before it sends
        # the script, so a second release() of it would raise LockError ("Cannot release
        # an unlocked lock") without asking Redis. A later request for the lease (after
        # an unknown release) gets a rebuilt Lock and asks.
        self.leases.pop((key, token), None)
        try:
            lock.release()
        except LockNotOwnedError as err:  # the script answered 0
            return {"id": req["id"], "outcome": "fail", "error": str(err)}
        return {"id": req["id"], "outcome": "ok"}

    def extend(self, req):
        key, token, ttl_ms = req["key"], req["token"], req["ttl_ms"]
        lock = self.lock_for(key, token, ttl_ms / 1000)
        sent_ms = int(ttl_ms / 1000 * 1000)  # the PEXPIRE do_extend sends
        start = time.monotonic()
        try:
            done = lock.extend(ttl_ms / 1000, replace_ttl=True)
        except LockNotOwnedError as err:  # the script answered 0: not ours (or no TTL)
            self.leases.pop((key, token), None)
            return {"id": req["id"], "outcome": "fail", "error": str(err)}
        # An exception other than LockNotOwnedError leaves the Lock as it was (extend
        # keeps the token): the lease may still be ours.
        if done is not True:
            return unknown(req["id"], f"unexpected extend result {done!r}")
        self.remember(key, token, lock)
        return {"id": req["id"], "outcome": "ok", "token": token,
                "validity_ms": validity_ms(ttl_ms, sent_ms, start)}

    def handle(self, line):
        """One request line to its answer. Any exception is unknown."""
        try:
            req = json.loads(line)
        except ValueError as err:
            return unknown(None, f"malformed request: {err}")
        if not isinstance(req, dict):
            return unknown(None, f"malformed request: {line[:100]!r}")
        req_id, op = req.get("id"), req.get("op")
        ops = {"acquire": self.acquire, "release": self.release, "extend": self.extend}
        if op not in ops:
            return unknown(req_id, f"unknown op {op!r}")
        if not isinstance(req.get("key"), str):
            return unknown(req_id, "request without a key")
        if op != "release":
            ttl = req.get("ttl_ms")
            if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
                return unknown(req_id, f"bad ttl_ms {ttl!r}")
        if op != "acquire" and not isinstance(req.get("token"), str):
            return unknown(req_id, "request without a token")
        try:
            return ops[op](req)
        except Exception as err:  # timeout, connection error, error reply, LockError: not known
            return unknown(req_id, err)


# ---- the protocol loop -------------------------------------------------------------


def answer(obj):
    sys.stdout.buffer.write(json.dumps(obj).encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def wait_connected(r):
    """PING until the server (through Sentinel: the primary) answers, at most
    CONNECT_WAIT_S; hello is said either way, and requests meanwhile answer unknown."""
    deadline = time.monotonic() + CONNECT_WAIT_S
    while True:
        try:
            r.ping()
            return True
        except Unmappable:
            raise
        except Exception as err:
            if time.monotonic() + 0.05 >= deadline:
                log(f"not connected after {CONNECT_WAIT_S:g} s ({type(err).__name__}: {err}); saying hello anyway")
                return False
            time.sleep(0.05)


def main():
    log_redis()
    try:
        options = parse_options(os.environ.get("LOCKLAB_OPTIONS", ""))
        log(f"options {json.dumps(options)}")
        r = connect()
    except Exception as err:
        log(f"fatal: {err}")
        return 1
    if redis.__version__ != TESTED_VERSION:
        log(f"warning: {LIBRARY}, locklab documents redis-py {TESTED_VERSION} (Debian bookworm's python3-redis)")
    try:
        wait_connected(r)
    except Unmappable as err:
        log(f"fatal: {err}")
        return 1
    client = Client(r, options)
    answer({"hello": PROTOCOL, "name": NAME, "fencing": False, "extend": True, "library": LIBRARY})
    # locklab sends one request at a time and waits for its answer; EOF on stdin: done.
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            break
        if not line.strip():
            continue
        answer(client.handle(line))
    r.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
