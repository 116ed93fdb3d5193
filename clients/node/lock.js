#!/usr/bin/env node
// locklab's example lock client in Node.js: the textbook single-instance Redis lock
// (SET key token NX PX ttl; release and extend check the token in Lua) with ioredis,
// driven by locklab over the subprocess protocol locklab-lock/1
// (docs/subprocess-protocol.md): one JSON request per line on stdin, one JSON answer
// per line on stdout, logs on stderr. The protocol loop and the environment are
// protocol.js's, shared with seed-withlock.js. ioredis is the release pinned in
// package.json unless locklab runs node-ioredis@VERSION (protocol.js's lib).
//
// Outcomes: "ok" and "fail" only for a definite answer from Redis (SET's OK or nil, the
// script's 1 or 0). Anything else — a timeout, a dropped connection, a command ioredis
// refused to send while disconnected, an error reply — is "unknown": locklab must not
// be told "not held" about a lock that may still be held.
"use strict";

const crypto = require("node:crypto");
const { performance } = require("node:perf_hooks");
const { serve, unknown, atMostOnce, atMostOnceCluster } = require("./protocol");

const NAME = "node-ioredis";

// KEYS[1] lock; ARGV[1] token. Deletes the lock only if it is ours: 1 deleted, 0 not ours.
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

// KEYS[1] lock; ARGV[1] token, ARGV[2] ttl ms. Resets the expiry only if the lock is ours.
const EXTEND = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;

async function acquire(redis, req) {
  const token = crypto.randomBytes(16).toString("hex");
  const start = performance.now(); // before the send: validity never overstates the grant
  const reply = await redis.set(req.key, token, "PX", req.ttl_ms, "NX");
  const elapsed = performance.now() - start;
  if (reply === "OK") {
    return { id: req.id, outcome: "ok", token, fence: 0, validity_ms: Math.max(0, Math.floor(req.ttl_ms - elapsed)) };
  }
  if (reply === null) return { id: req.id, outcome: "fail", error: "lock is held" };
  return unknown(req.id, `unexpected SET reply ${JSON.stringify(reply)}`);
}

async function release(redis, req) {
  const n = await redis.eval(RELEASE, 1, req.key, req.token);
  if (n === 1) return { id: req.id, outcome: "ok" };
  if (n === 0) return { id: req.id, outcome: "fail", error: "lock not held" };
  return unknown(req.id, `unexpected script reply ${JSON.stringify(n)}`);
}

async function extend(redis, req) {
  const start = performance.now();
  const n = await redis.eval(EXTEND, 1, req.key, req.token, req.ttl_ms);
  const elapsed = performance.now() - start;
  if (n === 1) {
    return { id: req.id, outcome: "ok", token: req.token, validity_ms: Math.max(0, Math.floor(req.ttl_ms - elapsed)) };
  }
  if (n === 0) return { id: req.id, outcome: "fail", error: "lock not held" };
  return unknown(req.id, `unexpected script reply ${JSON.stringify(n)}`);
}

const OPS = { acquire, release, extend };

// Each command is sent at most once and fails rather than waits (protocol.atMostOnce): a
// resent SET NX would answer nil for the client's own lock. On a Redis Cluster
// (LOCKLAB_CLUSTER=1) the same lock runs on ioredis's cluster client, which follows MOVED
// and ASK but resends nothing whose outcome is open (protocol.atMostOnceCluster): each
// command names one key, so it goes to the primary of that key's slot.
serve({ name: NAME, options: atMostOnce, cluster: atMostOnceCluster, ops: OPS, extend: true });
