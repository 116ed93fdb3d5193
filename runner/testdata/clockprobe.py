# A lock client of the subprocess protocol that reads its wall clock through libc
# (time.time) and reports it as each lease's token: the test reads the tokens from the
# history to see whether a client-clock fault moved the clock the client itself reads.
# Its lock is in memory: the test runs one client.
import json
import sys
import time

print(json.dumps({"hello": "locklab-lock/1", "name": "clock probe (Python)", "fencing": False}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    ans = {"id": req["id"], "outcome": "ok"}
    if req["op"] in ("acquire", "extend"):
        ans["token"] = "t%d" % int(time.time() * 1000)
        ans["validity_ms"] = req["ttl_ms"]
    print(json.dumps(ans), flush=True)
