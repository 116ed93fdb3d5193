#!/usr/bin/env python3
# A lock client of locklab's subprocess protocol (locklab-lock/1) in plain Python, with
# no library: the textbook SET NX PX lock and a compare-and-delete release, spoken in
# RESP over one socket. The test of --impl-cmd registers it from the command line.
import json, os, socket, sys, uuid

RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"

def connect():
    host, port = os.environ["LOCKLAB_ADDRS"].split(",")[0].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=int(os.environ.get("LOCKLAB_TIMEOUT_MS", "2000")) / 1000)
    return s, s.makefile("rb")

def command(conn, *args):
    sock, f = conn
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)
    line = f.readline()
    if line[:1] == b"+":
        return line[1:].strip().decode()
    if line[:1] == b":":
        return int(line[1:])
    if line[:1] == b"$":
        n = int(line[1:])
        return None if n < 0 else f.read(n + 2)[:-2].decode()
    raise RuntimeError("redis: " + line.decode().strip())

def main():
    print("minilock: started", file=sys.stderr, flush=True)
    print(json.dumps({"hello": "locklab-lock/1", "name": "minilock", "fencing": False, "extend": False}), flush=True)
    conn = connect()
    for line in sys.stdin:
        req = json.loads(line)
        ans = {"id": req["id"]}
        try:
            if req["op"] == "acquire":
                token = uuid.uuid4().hex
                ok = command(conn, "SET", req["key"], token, "NX", "PX", req["ttl_ms"]) == "OK"
                ans.update(outcome="ok" if ok else "fail", token=token if ok else "")
            elif req["op"] == "release":
                n = command(conn, "EVAL", RELEASE, 1, req["key"], req["token"])
                ans["outcome"] = "ok" if n == 1 else "fail"
            else:
                ans.update(outcome="unknown", error="unsupported op " + req["op"])
        except Exception as e:  # the command may have run: unknown, on a fresh connection
            ans.update(outcome="unknown", error=str(e))
            try:
                conn = connect()
            except OSError:
                pass
        print(json.dumps(ans), flush=True)

main()
