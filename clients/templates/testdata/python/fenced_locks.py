"""An existing lock, as its team wrote it (locklab test data, wrapped unedited by
clients/templates/python/adapter.py): a redis-py client made when the module is
imported, from REDIS_URL, and a lock class on it that grants fencing tokens."""
import collections
import os
import uuid

import redis

print("fenced_locks: connecting to", os.environ.get("REDIS_URL"))  # on stdout, as some do
client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://localhost:6379/0"))

Grant = collections.namedtuple("Grant", "token fence")

# KEYS[1] lock, KEYS[2] fence counter; ARGV[1] token, ARGV[2] ttl ms: the new fence, or 0.
LOCK = """if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0"""
UNLOCK = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
EXTEND = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"


class FencedLock:
    def __init__(self, r=None):
        self.r = r or client

    def lock(self, name, ttl_ms):
        """A Grant (token, fence) for name, or None when it is held."""
        token = uuid.uuid4().hex
        fence = self.r.eval(LOCK, 2, name, "fence:" + name, token, ttl_ms)
        return Grant(token, fence) if fence else None

    def unlock(self, name, token):
        return self.r.eval(UNLOCK, 1, name, token) == 1

    def extend(self, name, token, ttl_ms):
        return self.r.eval(EXTEND, 1, name, token, ttl_ms) == 1
