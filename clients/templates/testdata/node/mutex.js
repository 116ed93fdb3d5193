// An existing lock, as its team wrote it (locklab test data, wrapped unedited by
// clients/templates/node/adapter.mjs): a CommonJS class that connects to
// REDIS_HOST:REDIS_PORT when it is constructed, and throws LockedError when the lock is
// taken.
"use strict";

const crypto = require("node:crypto");
const Redis = require("ioredis");

class LockedError extends Error {
  constructor(key) {
    super(`${key} is locked`);
    this.name = "LockedError";
  }
}

const UNLOCK = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const REFRESH = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

class RedisMutex {
  constructor() {
    this.redis = new Redis({
      host: process.env.REDIS_HOST || "127.0.0.1",
      port: Number(process.env.REDIS_PORT || 6379),
      commandTimeout: Number(process.env.REDIS_TIMEOUT_MS || 5000),
      maxRetriesPerRequest: 1,
    });
  }

  // lock takes key for ttlMs and returns its token; LockedError when it is taken.
  async lock(key, ttlMs) {
    const token = crypto.randomBytes(16).toString("hex");
    if ((await this.redis.set(key, token, "PX", ttlMs, "NX")) !== "OK") throw new LockedError(key);
    return token;
  }

  // unlock frees key if token still holds it: whether it did.
  async unlock(key, token) {
    return (await this.redis.eval(UNLOCK, 1, key, token)) === 1;
  }

  // refresh gives a lock token still holds ttlMs more: whether it did.
  async refresh(key, token, ttlMs) {
    return (await this.redis.eval(REFRESH, 1, key, token, ttlMs)) === 1;
  }
}

module.exports = { RedisMutex, LockedError };
