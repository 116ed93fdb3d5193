#!/usr/bin/env node
// locklab's example lock client in Node.js: the textbook single-instance Redis lock
// (SET key token NX PX ttl; release and extend check the token in Lua) with ioredis,
// driven by locklab over the subprocess protocol locklab-lock/1
// (docs/subprocess-protocol.md): one JSON request per line on stdin, one JSON answer
// per line on stdout, logs on stderr.
//
// Outcomes: "ok" and "fail" only for a definite answer from Redis (SET's OK or nil, the
// script's 1 or 0). Anything else — a timeout, a dropped connection, a command ioredis
// refused to send while disconnected, an error reply — is "unknown": locklab must not
// be told "not held" about a lock that may still be held.
"use strict";

const crypto = require("node:crypto");
const readline = require("node:readline");
const { performance } = require("node:perf_hooks");
const Redis = require("ioredis");

const PROTOCOL = "locklab-lock/1";
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

function log(...args) {
  console.error(`[${NAME} ${process.pid}]`, ...args);
}

// parseAddr reads host:port, also [v6]:port.
function parseAddr(s) {
  const i = s.lastIndexOf(":");
  if (i <= 0) throw new Error(`bad address ${JSON.stringify(s)}: want host:port`);
  let host = s.slice(0, i);
  const port = Number(s.slice(i + 1));
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new Error(`bad port in address ${JSON.stringify(s)}`);
  }
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  return { host, port };
}

function list(name) {
  const v = process.env[name] || "";
  return v.split(",").map((s) => s.trim()).filter((s) => s !== "");
}

function config() {
  const timeout = Number(process.env.LOCKLAB_TIMEOUT_MS || "2000");
  if (!Number.isFinite(timeout) || timeout <= 0) {
    throw new Error(`bad LOCKLAB_TIMEOUT_MS ${JSON.stringify(process.env.LOCKLAB_TIMEOUT_MS)}`);
  }
  // Each command is sent at most once and fails rather than waits: no retries of a
  // request after a reconnect, no resending of commands in flight when the connection
  // dropped, no queue of commands while disconnected. Reconnecting in the background
  // is fine: a later request finds the connection back.
  const opts = {
    maxRetriesPerRequest: 0, // null would mean "wait forever"; 0 fails at the first disconnect
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    commandTimeout: timeout,
    connectTimeout: timeout,
    retryStrategy: (times) => Math.min(times * 50, 500),
  };
  const sentinels = list("LOCKLAB_SENTINELS");
  if (sentinels.length === 0) {
    const addrs = list("LOCKLAB_ADDRS");
    if (addrs.length !== 1) {
      throw new Error(`LOCKLAB_ADDRS must name exactly one server, got ${JSON.stringify(process.env.LOCKLAB_ADDRS)}`);
    }
    return { timeout, opts: { ...opts, ...parseAddr(addrs[0]) } };
  }
  // Replicated topology: follow the primary through Sentinel; addresses the Sentinels
  // name are rewritten to this client's links (LOCKLAB_VIA).
  const master = process.env.LOCKLAB_MASTER;
  if (!master) throw new Error("LOCKLAB_SENTINELS given without LOCKLAB_MASTER");
  const natMap = {};
  for (const pair of list("LOCKLAB_VIA")) {
    const [from, to] = pair.split("=");
    if (!from || !to) throw new Error(`bad LOCKLAB_VIA entry ${JSON.stringify(pair)}: want from=to`);
    natMap[from] = parseAddr(to);
  }
  return {
    timeout,
    opts: {
      ...opts,
      sentinels: sentinels.map(parseAddr),
      name: master,
      natMap,
      updateSentinels: false, // only the Sentinels (links) locklab gave
      failoverDetector: true, // drop the old primary when a Sentinel announces a new one
      sentinelCommandTimeout: timeout,
    },
  };
}

function answer(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

// unknown is the answer for anything but a definite reply from Redis.
function unknown(id, err) {
  return { id, outcome: "unknown", error: String((err && err.message) || err) };
}

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

async function handle(redis, line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    return unknown(null, `malformed request: ${err.message}`);
  }
  const op = OPS[req.op];
  if (!op) return unknown(req.id, `unknown op ${JSON.stringify(req.op)}`);
  if (typeof req.key !== "string") return unknown(req.id, "request without a key");
  if (req.op !== "release" && !(Number.isInteger(req.ttl_ms) && req.ttl_ms > 0)) {
    return unknown(req.id, `bad ttl_ms ${JSON.stringify(req.ttl_ms)}`);
  }
  try {
    return await op(redis, req);
  } catch (err) {
    return unknown(req.id, err); // timeout, disconnect, error reply: outcome not known
  }
}

// ready resolves once the client is connected, or after ms: hello is said either way,
// and requests before the connection is up get "unknown".
function ready(redis, ms) {
  return new Promise((resolve) => {
    if (redis.status === "ready") return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    redis.once("ready", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function main() {
  const { timeout, opts } = config();
  const redis = new Redis(opts);
  redis.on("error", (err) => log("redis:", err.message));
  // Connecting includes ioredis's handshake under the command timeout; a loaded machine
  // may need more than a short timeout for it, a server that is down will not answer in
  // any case: wait for the connection a bounded while, at least 5 s.
  const wait = Math.max(timeout, 5000);
  if (!(await ready(redis, wait))) log(`not connected after ${wait} ms; saying hello anyway`);

  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  // locklab sends one request at a time; the chain keeps answers in order regardless.
  let chain = Promise.resolve();
  rl.on("line", (line) => {
    chain = chain.then(async () => answer(await handle(redis, line)));
  });
  rl.on("close", () => {
    // locklab closed stdin: we are done.
    chain.finally(() => {
      redis.disconnect();
      process.exit(0);
    });
  });
  answer({ hello: PROTOCOL, name: NAME, fencing: false, extend: true, library: `ioredis@${require("ioredis/package.json").version}` });
}

main().catch((err) => {
  log("fatal:", (err && err.stack) || err);
  process.exit(1);
});
