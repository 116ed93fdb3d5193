#!/usr/bin/env node
// node-redlock-auto: the npm package @sesamecare-oss/redlock 1.4.0 (a maintained fork of
// redlock v5: Redlock over N independent Redis servers, with using() and its automatic
// extension) over one ioredis client per server, driven by locklab over the subprocess
// protocol locklab-lock/1 (docs/subprocess-protocol.md; loop and environment in
// protocol.js). In locklab it is the implementation node-redlock-auto, on topology
// "nodes": LOCKLAB_ADDRS names every server. node-redlock (redlock.js, redlock 4.2.0) is
// the same algorithm with the automatic extension off. 1.4.0 is the release pinned in
// package.json, the one run by default and the one read below; node-redlock-auto@VERSION
// runs another, installed by locklab (protocol.js's lib).
//
// Every lease is held inside the library's using(), with automatic extension on, as its
// README shows:
//
//   redlock.using([key], ttl, async (signal, context) => { ...work... })
//
// using() acquires, calls the routine, extends the lock by the full ttl whenever
// automaticExtensionThreshold is left of its validity, and releases when the routine
// ends. The protocol's requests map onto it so:
//
//   acquire  using() is called with a routine that resolves the request with
//            context.lock (token: lock.value; validity_ms: lock.expiration - Date.now(),
//            the library's own) and then waits on a promise of its own, one per lease,
//            kept by token. If using() rejects before the routine runs, the acquire
//            failed (classified below).
//   release  resolves that promise: the routine returns, using() stops the extension
//            timer, waits for an extension in flight and releases (lock.release()); the
//            request's answer is how using() settled. A token this process does not
//            hold (a predecessor's lease, or one released already) is released with the
//            library's redlock.release(new Lock(redlock, [key], token, [], 0)): the
//            servers decide.
//   extend   not supported (hello "extend": false): using() extends by itself, and the
//            library has no call to extend a lease from outside the routine that would
//            not race its timer.
//
// A failed automatic extension (the keys gone, or the validity over before an extension
// got a quorum) aborts the routine's AbortSignal: the library's way to tell the routine
// that it no longer holds the lock. The protocol has no way for a client to say so
// between requests, so the holder goes on believing it holds the lease, and the lease
// may be lost silently: the checker judges what that does. The client logs the abort,
// and the release answers from what the release script found (fail when every server
// answered and fewer than a quorum still held our value).
//
// The library's settings are the plan's (LOCKLAB_OPTIONS, options.js; declared in
// lockimpl/subprocess/nodelibs.go): new Redlock(clients, { driftFactor, retryCount,
// retryDelay, retryJitter, automaticExtensionThreshold, db }) from drift_factor (0.01),
// retry_count (locklab's default 0: one attempt per acquire; the library's is 10),
// retry_delay (200 ms), retry_jitter (100 ms) and automatic_extension_threshold
// (locklab's default 100 ms: the library's 500 ms refuses every ttl under 600 ms).
// db is LOCKLAB_REDIS_DB (0 when unset): the library's scripts SELECT it themselves.
//
// What the library reports, read from src/index.ts 1.4.0:
//
//   - acquire, extend and release run one Lua script per server (acquire: 0 when the
//     key exists, whoever's value, else SET value PX ttl, 1; extend: 0 unless the key
//     holds our value, else SET value PX ttl, 1; release: compare-and-delete, the
//     count deleted). A reply other than 1 is a ResourceLockedError; a ResourceLockedError
//     and a command error alike are a vote against, emitted as an 'error' event.
//   - An attempt is decided as soon as a quorum (N/2+1) voted one way: the library does
//     NOT wait for the other servers. After a vote against it retries (retryCount,
//     retryDelay +- retryJitter apart), else rejects with ExecutionError "The operation
//     was unable to achieve a quorum during its retry window." whose attempts are
//     promises of each attempt's votes, settled once every server answered.
//   - acquire has no validity check: a quorum granted is a Lock, with expiration
//     start + ttl - (round(ttl * driftFactor) + 2) even when that has passed. After a
//     failed acquire it releases the value on every server (retryCount 0), its result
//     discarded.
//   - extend rejects at once, sending nothing, when the Lock's expiration has passed.
//   - using() throws before sending anything when ttl < automaticExtensionThreshold + 100.
//
// So an ExecutionError alone does not say whether the servers refused. Each ioredis
// client is watched through a Proxy that forwards every call unchanged and notes the
// replies and errors of the library's script commands (acquireLock, releaseLock), for
// the request that issued them (locklab sends one request at a time; an automatic
// extension in the background sends extendLock, which no request counts). Before it
// answers a rejection, the client waits until every command of the request settled:
//
//   acquire  Lock                                      ok
//   acquire  ExecutionError, every command answered    fail: a quorum refused (the key
//                                                      existed), and the clean-up
//                                                      deleted our value wherever it was
//   acquire  anything else (a command error, the       unknown: a server that did not
//            ttl refused by using(): nothing sent)     answer may hold our value
//   release  resolved                                  ok: deleted on a quorum
//   release  ExecutionError, every command answered    fail: fewer than a quorum held
//                                                      our value
//   release  anything else                             unknown
//
// ioredis sends each command at most once (protocol.atMostOnce): a resent lock script
// would find its own key and vote no.
"use strict";

const protocol = require("./protocol");
const options = require("./options");
const { Redlock, Lock, ExecutionError } = protocol.lib("@sesamecare-oss/redlock");

const NAME = "node-redlock-auto";
const LIBRARY = `@sesamecare-oss/redlock@${protocol.lib("@sesamecare-oss/redlock/package.json").version} (ioredis@${protocol.lib("ioredis/package.json").version})`;

const log = protocol.logger(NAME);

// OPTIONS are the plan's settings (the defaults are nodelibs.go's).
const OPTIONS = options.load(NAME, {
  ...options.REDLOCK,
  automatic_extension_threshold: { kind: "duration", default: 100 },
});

// db is the database the library's scripts select (LOCKLAB_REDIS_DB): it takes 0 to 15
// and silently uses 0 for anything else, so anything else is refused here.
function database() {
  const raw = process.env.LOCKLAB_REDIS_DB || "0";
  const db = Number(raw);
  if (!Number.isInteger(db) || db < 0 || db > 15) {
    log(`fatal: LOCKLAB_REDIS_DB ${JSON.stringify(raw)}: the library selects databases 0 to 15 only`);
    process.exit(2);
  }
  return db;
}

// SETTINGS are the Redlock's, from OPTIONS.
const SETTINGS = {
  ...options.redlockSettings(OPTIONS),
  automaticExtensionThreshold: OPTIONS.automatic_extension_threshold,
  db: database(),
};

// The script commands whose replies a request counts, by request kind.
const COUNTED = {
  acquire: new Set(["acquireLock", "releaseLock"]), // the lock and its clean-up
  release: new Set(["releaseLock"]),
};

// current is the request in progress: { kind, key, cmds } (null between requests);
// cmds are promises of { reply } or { error }, one per script command it sent.
let current = null;

// watch is client with the script commands of the request in progress noted.
function watch(client) {
  return new Proxy(client, {
    get: (c, prop) => {
      const v = Reflect.get(c, prop, c);
      if (typeof v !== "function" || !(prop === "acquireLock" || prop === "extendLock" || prop === "releaseLock")) return v;
      return (...args) => {
        const op = current;
        const p = v.apply(c, args); // (numKeys, ...keys, ...args)
        if (op && COUNTED[op.kind].has(prop) && args[0] === 1 && args[1] === op.key) {
          op.cmds.push(Promise.resolve(p).then((reply) => ({ reply }), (error) => ({ error })));
        }
        return p;
      };
    },
  });
}

// redlock is the one Redlock of the process, over watched clients.
let redlock = null;

function lib(clients) {
  if (redlock === null) {
    redlock = new Redlock(clients.map(watch), SETTINGS);
    redlock.on("error", (err) => {
      if (err && err.name === "ResourceLockedError") return; // a refusal: counted, not logged
      log("server error:", (err && err.message) || err);
    });
  }
  return redlock;
}

// run calls f as request kind on key: { value } or { error }, and the replies of its
// commands once every one of them settled (only when f rejected: an ok answers at once,
// as the library does).
async function run(kind, key, f) {
  const op = { kind, key, cmds: [] };
  current = op;
  let r;
  try {
    r = { value: await f() };
  } catch (error) {
    r = { error };
  } finally {
    current = null;
  }
  if (r.error) r.results = await Promise.all(op.cmds);
  return r;
}

// definite reports whether a rejection was the library's ExecutionError with every
// command of the request answered by its server (a number: the script ran).
function definite(r) {
  return r.error instanceof ExecutionError && r.results.length > 0 && r.results.every((x) => typeof x.reply === "number");
}

// unsure is the unknown answer for a rejection, naming the servers' errors.
function unsure(id, r) {
  const results = r.results || [];
  const why = results.filter((x) => x.error).map((x) => (x.error && x.error.message) || String(x.error));
  const msg = (r.error && r.error.message) || String(r.error);
  if (results.length === 0) return protocol.unknown(id, `${msg} (nothing sent)`);
  return protocol.unknown(id, why.length > 0 ? `${msg} (server errors: ${why.join("; ")})` : msg);
}

// held maps a token to its lease: { key, finish, done, signal, context }. finish ends
// the routine; done is using()'s promise.
const held = new Map();

// validity is what is left of a Lock by the library's clock, 0 to ttl.
function validity(lock, ttl) {
  return Math.max(0, Math.floor(Math.min(ttl, lock.expiration - Date.now())));
}

async function acquire(clients, req) {
  const r = lib(clients);
  const lease = { key: req.key };
  const finished = new Promise((resolve) => {
    lease.finish = resolve;
  });
  const res = await run("acquire", req.key, () =>
    new Promise((granted, failed) => {
      lease.done = r.using([req.key], req.ttl_ms, async (signal, context) => {
        lease.signal = signal;
        lease.context = context;
        signal.addEventListener("abort", () =>
          log(`automatic extension of ${JSON.stringify(req.key)} (${context.lock.value}) failed after ${context.extensions} extensions: ${(signal.error && signal.error.message) || "aborted"}; the holder is not told`),
        );
        granted(context.lock);
        await finished;
      });
      lease.done.catch(failed); // before the routine: the acquire failed
    }),
  );
  if (res.error) {
    if (definite(res)) return { id: req.id, outcome: "fail", error: res.error.message };
    return unsure(req.id, res);
  }
  const lock = res.value;
  held.set(lock.value, lease);
  return { id: req.id, outcome: "ok", token: lock.value, fence: 0, validity_ms: validity(lock, req.ttl_ms) };
}

async function release(clients, req) {
  const r = lib(clients);
  const lease = held.get(req.token);
  let res;
  if (lease && lease.key === req.key) {
    held.delete(req.token);
    res = await run("release", req.key, () => {
      lease.finish();
      return lease.done;
    });
  } else {
    res = await run("release", req.key, () => r.release(new Lock(r, [req.key], req.token, [], 0)));
  }
  const lost = lease && lease.signal && lease.signal.aborted ? ` (the automatic extension had failed: ${(lease.signal.error && lease.signal.error.message) || "aborted"})` : "";
  if (!res.error) return { id: req.id, outcome: "ok" };
  if (definite(res)) return { id: req.id, outcome: "fail", error: `lock not held on a quorum: ${res.error.message}${lost}` };
  const u = unsure(req.id, res);
  u.error += lost;
  return u;
}

protocol.serve({
  name: NAME,
  options: protocol.atMostOnce,
  ops: { acquire, release },
  extend: false,
  nodes: true,
  library: LIBRARY,
});
