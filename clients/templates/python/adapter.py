#!/usr/bin/python3
"""A locklab adapter for an existing Python lock, which it imports by name or path with
importlib: the lock's file is not edited. See "Wrap an existing lock" in
docs/subprocess-protocol.md.

  python3 adapter.py my_pkg.locks[:Attr] | /path/to/my_lock.py[:Attr]
      [--env 'REDIS_URL=redis://{addr}']... [--path DIR]... [--acquire acquire]
      [--release release] [--extend extend] [--fencing] [--refusal REGEX]

--env sets a variable the lock reads BEFORE it is imported, so that a connection it
opens at import goes where locklab says: {addr} {host} {port} {timeout_ms} {timeout_s},
or any environment variable ({LOCKLAB_ADDRS}). The lock is the module, or its attribute
Attr (a class is instantiated with no arguments); a dotted name is found on --path,
PYTHONPATH and the usual sys.path. Run it with the interpreter that has the lock's
dependencies.
"""
import argparse
import importlib
import inspect
import json
import os
import re
import socket
import sys

ap = argparse.ArgumentParser()
ap.add_argument("target")
ap.add_argument("--env", action="append")
ap.add_argument("--path", action="append", default=[])  # folders to import from (as PYTHONPATH)
ap.add_argument("--acquire", default="acquire")
ap.add_argument("--release", default="release")
ap.add_argument("--extend", default="extend")  # no such method: the hello says "extend": false
ap.add_argument("--fencing", action="store_true")  # acquire answers a token and a fence
ap.add_argument("--refusal")  # an exception whose "Name: message" matches is a definite refusal
opt = ap.parse_args()


# The mapping: edit here if your lock's methods take other arguments. acquire gives a
# token (a str, or an object or dict with token and fence), or None or False when the
# lock is held; release and extend give True (done) or False (not ours). Anything else,
# and any exception, is "unknown".
OPS = {
    "acquire": lambda lock, r: getattr(lock, opt.acquire)(r["key"], r["ttl_ms"]),
    "release": lambda lock, r: getattr(lock, opt.release)(r["key"], r["token"]),
    "extend": lambda lock, r: getattr(lock, opt.extend)(r["key"], r["token"], r["ttl_ms"]),
}

TIMEOUT_MS = int(os.environ.get("LOCKLAB_TIMEOUT_MS", "2000"))
OUT, sys.stdout = sys.stdout, sys.stderr  # protocol lines only on stdout: the lock's prints go to the log


def env_list(name):
    return [s for s in os.environ.get(name, "").split(",") if s]


def send(obj):
    OUT.write(json.dumps(obj) + "\n")
    OUT.flush()


def split(addr):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


def server():
    """Where the lock connects: the one server, or the primary the Sentinels name at start
    (a lock that connects at import cannot follow a failover), dialled through this
    client's own link to it (LOCKLAB_VIA)."""
    if not os.environ.get("LOCKLAB_SENTINELS"):
        return env_list("LOCKLAB_ADDRS")[0]
    via = dict(pair.split("=", 1) for pair in env_list("LOCKLAB_VIA"))
    for s in env_list("LOCKLAB_SENTINELS"):
        try:
            with socket.create_connection(split(s), timeout=TIMEOUT_MS / 1000) as sock:
                args = [b"SENTINEL", b"get-master-addr-by-name", os.environ["LOCKLAB_MASTER"].encode()]
                sock.sendall(b"*3\r\n" + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
                reply = sock.makefile("rb")
                if reply.readline() != b"*2\r\n":
                    raise OSError("no primary")
                reply.readline()  # $len
                host = reply.readline().strip().decode()
                reply.readline()
                port = reply.readline().strip().decode()
                primary = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                return via.get(primary, primary)
        except OSError as err:
            print(f"sentinel {s}: {err}", file=sys.stderr)
    raise RuntimeError("no Sentinel named the primary")


def field(got, name):
    return got.get(name) if isinstance(got, dict) else getattr(got, name, None)


def answer(lock, r):
    try:
        got = OPS[r["op"]](lock, r)
    except Exception as err:  # a timeout, a lost connection...: it may have run
        why = f"{type(err).__name__}: {err}"
        refused = opt.refusal is not None and re.search(opt.refusal, why) is not None
        return {"id": r["id"], "outcome": "fail" if refused else "unknown", "error": why}
    if got is None or got is False:
        return {"id": r["id"], "outcome": "fail", "error": f"{r['op']} answered {got}"}
    if r["op"] != "acquire" and got is True:
        return {"id": r["id"], "outcome": "ok"}
    token = got if isinstance(got, str) else field(got, "token")
    fence = field(got, "fence") if opt.fencing else 0
    if r["op"] == "acquire" and isinstance(token, str) and token and type(fence) is int and (fence > 0 or not opt.fencing):
        return {"id": r["id"], "outcome": "ok", "token": token, "fence": fence}
    return {"id": r["id"], "outcome": "unknown", "error": f"{r['op']}: unexpected result {got!r}"}


def main():
    addr = server()
    host, port = split(addr)
    values = dict(addr=addr, host=host, port=port, timeout_ms=TIMEOUT_MS, timeout_s=TIMEOUT_MS / 1000)
    for e in opt.env or ["REDIS_URL=redis://{addr}"]:
        name, _, value = e.partition("=")
        os.environ[name] = re.sub(r"\{(\w+)\}", lambda m: str(values.get(m[1], os.environ.get(m[1], m[0]))), value)
    sys.path[:0] = opt.path
    module, _, attr = opt.target.partition(":")
    if module.endswith(".py"):  # a file: import it by name from its folder, as its siblings do
        sys.path.insert(0, os.path.dirname(os.path.abspath(module)))
        module = os.path.basename(module)[:-3]
    lock = importlib.import_module(module)  # runs its top level now
    lock = getattr(lock, attr) if attr else lock
    lock = lock() if inspect.isclass(lock) else lock
    for name in (opt.acquire, opt.release):
        if not callable(getattr(lock, name, None)):
            raise SystemExit(f"adapter: {opt.target}: the lock has no function {name}")
    extend = callable(getattr(lock, opt.extend, None))
    send({"hello": "locklab-lock/1", "name": os.path.basename(opt.target), "fencing": opt.fencing, "extend": extend})
    for line in sys.stdin:  # one request at a time, until locklab closes stdin
        send(answer(lock, json.loads(line)))


if __name__ == "__main__":
    main()
