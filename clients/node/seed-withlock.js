#!/usr/bin/env node
// seed-withlock: the Redis lock of a widely read blog post that measured a job queue in
// Node.js, reproduced as published (in our own words): acquireLock, releaseLock and
// withLock on one ioredis client with ioredis's default options. Require it to use the
// three functions; run it and locklab drives it over the subprocess protocol
// locklab-lock/1 (docs/subprocess-protocol.md, loop and environment in protocol.js).
// ioredis is the release pinned in package.json unless locklab runs
// seed-withlock@VERSION (protocol.js's lib).
//
//   acquireLock(key, ttlMs)   SET lock:<key> <crypto.randomUUID()> NX PX ttlMs: the
//                             token, or null when the lock is taken
//   releaseLock(key, token)   Lua compare-and-delete on lock:<key>: 1 deleted, 0 not ours
//   withLock(key, ttlMs, fn)  acquireLock; null -> {skipped: true}; else
//                             {skipped: false, result: await fn()}, releasing in a
//                             finally whose result is ignored
//
// The point of reproducing it is ioredis's defaults: a command in flight when the
// connection drops is resent after the reconnect (autoResendUnfulfilledCommands), one
// issued while disconnected waits in the offline queue, and either is retried for up to
// 20 reconnects (maxRetriesPerRequest). A SET NX that reached Redis but whose reply was
// lost is then sent again, and the second one answers nil: acquireLock says "taken"
// about a lock this very client holds, and withLock skips the job while the lock sits
// unused until its TTL runs out.
//
// Protocol answers: acquire is ok with the token, fail when acquireLock returned null
// (which the resent SET NX above can make a lie: that is what locklab is to expose),
// unknown when it threw; release is what the script answered (1 ok, 0 fail), unknown
// when it threw — withLock ignores that answer, locklab's checkers must not be told
// anything but the truth. No extend (the hello says so), no fencing, no validity_ms
// (the blog's lock does not measure it; locklab counts the lease from just before it
// sent the request).
"use strict";

const crypto = require("node:crypto");
const protocol = require("./protocol");
const Redis = protocol.lib("ioredis");

const NAME = "seed-withlock";

// KEYS[1] lock:<key>; ARGV[1] token. Deletes the lock only if it is ours: 1 deleted, 0 not ours.
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

// options are the client's ioredis options; protocol.js adds where the servers are.
//
// Retries are left at ioredis's defaults ON PURPOSE — maxRetriesPerRequest 20,
// enableOfflineQueue true, autoResendUnfulfilledCommands true, the default
// retryStrategy — because that is how the blog post's lock runs, and a resent SET NX is
// the behaviour under test. Unlike lock.js, do not turn them off here.
//
// Only the timeouts come from LOCKLAB_TIMEOUT_MS, as in lock.js (the blog sets none:
// ioredis's defaults are a 10 s connect timeout and no command timeout). The command
// timeout runs from a command's first send and is not restarted by a resend, so a
// resent command still answers within it, and a command that cannot be sent is
// "unknown" in time rather than a client locklab must kill as broken. A resend within
// the timeout — the reconnect after a reset takes ioredis 50–250 ms — behaves as with
// the defaults.
function options(timeout) {
  return {
    commandTimeout: timeout,
    connectTimeout: timeout,
  };
}

// redis is the module's one client, as in the blog post.
let redis = null;

// connect makes the module's client from ioredis options (default: the LOCKLAB_*
// environment with options above) and returns it.
function connect(opts) {
  redis = new Redis(opts || protocol.config(options).opts);
  return redis;
}

function client() {
  return redis || connect();
}

// acquireLock takes lock:<key> for ttlMs: the token, or null when it is taken.
async function acquireLock(key, ttlMs) {
  const token = crypto.randomUUID();
  const reply = await client().set(`lock:${key}`, token, "NX", "PX", ttlMs);
  if (reply === "OK") return token;
  if (reply === null) return null;
  // The blog returns null for anything but OK; Redis answers SET only with OK, nil or
  // an error, so this is unreachable there, and here it must not pass for "taken".
  throw new Error(`unexpected SET reply ${JSON.stringify(reply)}`);
}

// releaseLock deletes lock:<key> if it still holds token: the script's 1 or 0.
async function releaseLock(key, token) {
  return client().eval(RELEASE, 1, `lock:${key}`, token);
}

// withLock runs fn under the lock, or skips it when the lock is taken.
async function withLock(key, ttlMs, fn) {
  const token = await acquireLock(key, ttlMs);
  if (token === null) return { skipped: true };
  try {
    return { skipped: false, result: await fn() };
  } finally {
    await releaseLock(key, token); // its result is ignored, as published
  }
}

// The subprocess protocol's operations, on the functions above.
const OPS = {
  async acquire(_redis, req) {
    const token = await acquireLock(req.key, req.ttl_ms); // throws: unknown
    if (token === null) return { id: req.id, outcome: "fail", error: "lock is held (SET NX answered nil)" };
    return { id: req.id, outcome: "ok", token, fence: 0 };
  },
  async release(_redis, req) {
    const n = await releaseLock(req.key, req.token); // throws: unknown
    if (n === 1) return { id: req.id, outcome: "ok" };
    if (n === 0) return { id: req.id, outcome: "fail", error: "lock not held" };
    return protocol.unknown(req.id, `unexpected script reply ${JSON.stringify(n)}`);
  },
};

module.exports = { acquireLock, releaseLock, withLock, connect, options };

if (require.main === module) {
  protocol.serve({ name: NAME, options, ops: OPS, extend: false, connect });
}
