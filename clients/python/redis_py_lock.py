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
    from redis.exceptions import LockNotOwnedError
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


def connect():
    """The redis-py client for the environment: one server (LOCKLAB_ADDRS, with its
    access_options), or the primary followed through Sentinel (LOCKLAB_SENTINELS,
    LOCKLAB_MASTER, LOCKLAB_VIA)."""
    opts = connection_options(timeout_seconds())
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
    via = {}
    for pair in env_list("LOCKLAB_VIA"):
        frm, sep, to = pair.partition("=")
        if not sep or not frm or not to:
            raise ValueError(f"bad LOCKLAB_VIA entry {pair!r}: want from=to")
        via[join_addr(*parse_addr(frm))] = parse_addr(to)
    # The Sentinels get the same options (redis-py would give them only the socket_*
    # ones); a Sentinel that does not answer is skipped by discover_master, and no
    # primary found is MasterNotFoundError, a ConnectionError: unknown.
    sentinel = ViaSentinel([parse_addr(s) for s in sentinels], via, sentinel_kwargs=dict(opts), **opts)
    return sentinel.master_for(master)


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
        except Exception as err:
            if time.monotonic() + 0.05 >= deadline:
                log(f"not connected after {CONNECT_WAIT_S:g} s ({type(err).__name__}: {err}); saying hello anyway")
                return False
            time.sleep(0.05)


def main():
    try:
        options = parse_options(os.environ.get("LOCKLAB_OPTIONS", ""))
        log(f"options {json.dumps(options)}")
        r = connect()
    except Exception as err:
        log(f"fatal: {err}")
        return 1
    if redis.__version__ != TESTED_VERSION:
        log(f"warning: {LIBRARY}, locklab documents redis-py {TESTED_VERSION} (Debian bookworm's python3-redis)")
    wait_connected(r)
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
