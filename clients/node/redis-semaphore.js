#!/usr/bin/env node
// redis-semaphore's mutexes (5.8.0, or another release from 5.3.0 on), driven by locklab
// over the subprocess protocol locklab-lock/1 (docs/subprocess-protocol.md; loop and
// environment in protocol.js).
// 5.8.0 is the release pinned in package.json, the one run by default and the one read
// below; redis-semaphore-mutex@VERSION and redis-semaphore-redlock@VERSION run another,
// installed by locklab (protocol.js's lib). One argument picks the variant:
//
//   mutex    Mutex(client, key, options): one server (topology single; through
//            Sentinel on the replicated topology; on a Redis Cluster through ioredis's
//            cluster client, protocol.atMostOnceCluster). locklab: redis-semaphore-mutex.
//   redlock  RedlockMutex(clients, key, options): N independent servers (topology
//            nodes). locklab: redis-semaphore-redlock.
//
// The library is called as its README shows, with refresh on as by default:
//
//   acquire  new Mutex(..., key, { lockTimeout: ttl, acquireAttemptsLimit: 1,
//            onLockLost }).tryAcquire(): SET mutex:<key> <randomUUID> PX ttl NX (on
//            every server for RedlockMutex, granted on Math.round((N+1)/2)). The token
//            is the mutex's identifier. Once acquired the mutex refreshes itself every
//            refreshInterval (default 0.8 * lockTimeout) with a compare-and-PEXPIRE
//            script until release; a refresh that finds the key gone (on a quorum)
//            calls onLockLost and stops.
//
//            The mutex's options are the plan's (LOCKLAB_OPTIONS, options.js; declared
//            in lockimpl/subprocess/nodelibs.go): refreshInterval =
//            round(ttl * refresh_interval_percent / 100) (80: the library's default; 0
//            turns the refresh off), acquireAttemptsLimit = acquire_attempts_limit
//            (locklab's default 1, one attempt: the workload retries by itself),
//            acquireTimeout and retryInterval (the library's defaults, 10 s and 10 ms).
//   release  mutex.release(): stops the refresh, then a compare-and-delete script on
//            every server (nothing when the mutex already lost the lock).
//   extend   the README's "dynamically adjusting existing lock": a new mutex with
//            { identifier: token, acquiredExternally: true, lockTimeout: ttl } whose
//            tryAcquire() runs the refresh script with the new ttl and, on success,
//            refreshes from then on; the old mutex's refresh is stopped
//            (stopRefresh()). A token this process does not hold (its predecessor took
//            it) is released the same way, as the README's scheduler/handler example.
//
// The releases this client drives (the installed one's version is read from its
// package.json, through protocol.lib as the library itself is), and the form each
// takes a lock acquired elsewhere in (externalOptions):
//
//   >= 5.5.0        { identifier: token, acquiredExternally: true }, the README's form
//                   since 5.5.0. (5.5.0 – 5.8.0 still accept the older form,
//                   deprecated, and throw only when it is mixed with this one.)
//   5.3.0 – 5.4.x   { externallyAcquiredIdentifier: token }, the only form: 5.3.0
//                   introduced it. The refresh script of <= 5.3.0 re-creates a key
//                   that is gone (SET identifier, then PEXPIRE) and answers 1, so an
//                   extend after the lease ran out answers ok (swarthy/redis-semaphore
//                   #175, fixed in 5.3.1: docs/track-record.md).
//   < 5.3.0         refused when the client starts: a mutex cannot be made for a lock
//                   taken elsewhere, so neither extend nor a release by another process
//                   can be called as the library's users call them.
//
// The rest of what the client calls is the same from 5.3.0 on: tryAcquire (5.1.0),
// acquireAttemptsLimit (5.2.0), stopRefresh (5.3.0; _stopRefresh before), identifier,
// onLockLost. Up to 5.5.1 Mutex and RedlockMutex check that each client is an
// ioredis instance (instanceof the ioredis they require: the same install here, and
// the watch's Proxy passes the check); ioredis's cluster client is none, so on a Redis
// Cluster those releases are refused when the client starts (5.6.0 dropped the check).
// Before 5.8.0 the library declares ioredis ^4.1.0 || ^5 and is installed beside the
// clients' ioredis 6 with --legacy-peer-deps (releases/cache.go), which it is handed.
//
// What the library does not say, and how this client still answers honestly: the
// library's own result is a boolean for tryAcquire, nothing for release, and a loss
// callback. Mutex lets command errors through (a rejection). RedlockMutex catches every
// command error and counts it as a "no"; its release ignores every reply. So each mutex
// gets its ioredis clients through a watch (a Proxy that forwards every call unchanged
// and notes the replies and errors of set/eval/evalsha, leaving out NOSCRIPT, which the
// library answers by sending the script). With locklab sending one request at a time,
// the commands a mutex issued during a request are that request's:
//
//   acquire  true -> ok; false with every command answered -> fail (the servers held
//            the key; RedlockMutex deleted what it got); false after an error, or a
//            rejection -> unknown.
//   release  the mutex had lost the lock (onLockLost) -> fail when that loss was a
//            definite answer (Mutex: the refresh script said 0; RedlockMutex: no
//            command of the lock failed in the background), else unknown. Otherwise
//            by the delete script's replies: deleted on a quorum -> ok; too few could
//            have deleted even if every failed command had -> fail; else (or a
//            rejection) -> unknown.
//   extend   true -> ok; false with every command answered -> fail (RedlockMutex, from
//            5.3.1 on, then deleted the key everywhere); otherwise unknown.
//
// Two defaults of the library would end the process: onLockLost's default throws, and
// Mutex's refresh lets a command error reject inside a timer; in Node >= 15 either is an
// unhandled rejection, which exits the process. onLockLost is set (the README's usage),
// and this client logs unhandled rejections instead of dying, as a service that
// installs a handler would; the refresh goes on at its next interval.
//
// ioredis sends each command at most once (protocol.atMostOnce): a resent SET NX would
// answer nil for the client's own lock.
"use strict";

const protocol = require("./protocol");
const options = require("./options");
const { Mutex, RedlockMutex } = protocol.lib("redis-semaphore");

const VARIANTS = {
  mutex: { name: "redis-semaphore-mutex", nodes: false, Lock: Mutex },
  redlock: { name: "redis-semaphore-redlock", nodes: true, Lock: RedlockMutex },
};

const variant = VARIANTS[process.argv[2]];
if (!variant) {
  console.error(`usage: redis-semaphore.js ${Object.keys(VARIANTS).join("|")}`);
  process.exit(2);
}

const VERSION = protocol.lib("redis-semaphore/package.json").version;
const LIBRARY = `redis-semaphore@${VERSION} (ioredis@${protocol.lib("ioredis/package.json").version})`;
const log = protocol.logger(variant.name);

// semver is [major, minor, patch] of a version string (a pre-release counts as its release).
function semver(v) {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(String(v));
  if (!m) return null;
  return m.slice(1, 4).map(Number);
}

// atLeast reports whether version v is at least min ([major, minor, patch]).
function atLeast(v, min) {
  for (let i = 0; i < 3; i++) if (v[i] !== min[i]) return v[i] > min[i];
  return true;
}

// refuse ends the process before its hello: locklab quotes this line as the reason.
function refuse(why) {
  console.error(`[${variant.name} ${process.pid}] cannot drive redis-semaphore ${VERSION}: ${why}`);
  process.exit(2);
}

const V = semver(VERSION);
if (!V) refuse("its package.json version is not major.minor.patch");
if (!atLeast(V, [5, 3, 0])) {
  refuse(
    "this client drives 5.3.0 and later: before 5.3.0 a mutex cannot take over a lock acquired elsewhere " +
      "(externallyAcquiredIdentifier came in 5.3.0), so extend cannot be called",
  );
}
if (!variant.nodes && protocol.onCluster() && !atLeast(V, [5, 6, 0])) {
  refuse("up to 5.5.1 Mutex takes only a plain ioredis client (instanceof Redis), not ioredis's cluster client: a Redis Cluster needs 5.6.0 or later");
}

// externalOptions are the options of a mutex for token, a lock acquired elsewhere
// (the header: identifier and acquiredExternally from 5.5.0, externallyAcquiredIdentifier
// in 5.3.0 – 5.4.x).
const externalOptions = atLeast(V, [5, 5, 0])
  ? (token) => ({ identifier: token, acquiredExternally: true })
  : (token) => ({ externallyAcquiredIdentifier: token });

// OPTIONS are the plan's settings (the defaults are nodelibs.go's).
const OPTIONS = options.load(variant.name, {
  refresh_interval_percent: { kind: "int", default: 80 },
  acquire_attempts_limit: { kind: "int", default: 1 },
  acquire_timeout: { kind: "duration", default: 10000 },
  retry_interval: { kind: "duration", default: 10 },
});

// mutexOptions are the options of a mutex that holds the lock for ttl ms.
function mutexOptions(ttl) {
  return {
    lockTimeout: ttl,
    refreshInterval: Math.round((ttl * OPTIONS.refresh_interval_percent) / 100),
    acquireAttemptsLimit: OPTIONS.acquire_attempts_limit,
    acquireTimeout: OPTIONS.acquire_timeout,
    retryInterval: OPTIONS.retry_interval,
  };
}

process.on("unhandledRejection", (err) => log("unhandled rejection (the library's refresh):", (err && err.message) || err));

// The commands whose replies the watch notes: SET NX (acquire) and the scripts.
const WATCHED = new Set(["set", "eval", "evalsha"]);

// holder is one mutex and what its commands answered.
class Holder {
  // clients: the one client (Mutex) or the array (RedlockMutex) protocol.serve made.
  constructor(clients, key, options) {
    clients = Array.isArray(clients) ? clients : [clients];
    this.key = key;
    this.n = clients.length;
    this.op = null; // the counters of the request in progress, null between requests
    this.background = 0; // errors of commands issued between requests (the refresh's)
    this.lost = null; // set by onLockLost: { definite }
    this.mutex = new variant.Lock(this.target(clients.map((c) => this.watch(c))), key, {
      ...options,
      onLockLost: (err) => this.onLost(err),
    });
  }

  // target is what the library's constructor takes: one client or the array.
  target(clients) {
    return variant.nodes ? clients : clients[0];
  }

  // watch is client with the replies of WATCHED commands noted in the counters of the
  // request that issued them.
  watch(client) {
    return new Proxy(client, {
      get: (c, prop) => {
        const v = Reflect.get(c, prop, c);
        if (typeof v !== "function" || !WATCHED.has(prop)) return v;
        return (...args) => {
          const op = this.op; // the request that issues it, when it settles later
          if (op) op.sent++;
          const failed = (err) => {
            if (String((err && err.message) || err).startsWith("NOSCRIPT")) return; // answered by EVAL
            if (op) op.errors.push(err);
            else this.background++;
          };
          let p;
          try {
            p = v.apply(c, args);
          } catch (err) {
            failed(err);
            throw err;
          }
          return Promise.resolve(p).then(
            (reply) => {
              if (op && prop !== "set" && +reply === 1) op.ones++;
              return reply;
            },
            (err) => {
              failed(err);
              throw err;
            },
          );
        };
      },
    });
  }

  onLost(err) {
    // Mutex loses a lock only on the refresh script's 0; RedlockMutex also after errors.
    const definite = !variant.nodes || this.background === 0;
    this.lost = { definite };
    log(`${err.message} (${definite ? "definite" : "after command errors"})`);
  }

  // run calls f with this holder's commands counted: { value | error, errors, ones }.
  async run(f) {
    const op = { errors: [], ones: 0, sent: 0 };
    this.op = op;
    try {
      op.value = await f(this.mutex);
    } catch (error) {
      op.error = error;
    } finally {
      this.op = null;
      this.background = 0; // a loss after this request is judged on what follows it
    }
    return op;
  }

  get quorum() {
    return Math.round((this.n + 1) / 2); // the library's getQuorum
  }
}

// held maps a token to the holder of its mutex, while this process holds it.
const held = new Map();

function errorText(op) {
  const msgs = op.errors.map((e) => (e && e.message) || String(e));
  if (op.error) msgs.unshift((op.error && op.error.message) || String(op.error));
  return msgs.join("; ");
}

async function acquire(clients, req) {
  const h = new Holder(clients, req.key, mutexOptions(req.ttl_ms));
  const start = performance.now(); // before the send: validity never overstates the grant
  const op = await h.run((m) => m.tryAcquire());
  const elapsed = performance.now() - start;
  if (op.error) return protocol.unknown(req.id, errorText(op));
  if (op.value === true) {
    const token = h.mutex.identifier;
    held.set(token, h);
    return { id: req.id, outcome: "ok", token, fence: 0, validity_ms: Math.max(0, Math.floor(req.ttl_ms - elapsed)) };
  }
  if (op.errors.length > 0) return protocol.unknown(req.id, `not acquired after command errors: ${errorText(op)}`);
  if (op.sent === 0) return protocol.unknown(req.id, "tryAcquire returned false without sending anything (acquireTimeout)");
  return { id: req.id, outcome: "fail", error: "lock is held (tryAcquire returned false)" };
}

// holderOf is the holder of token for key, or a mutex that takes the lock over as
// acquired elsewhere (the library's acquiredExternally) with ttl.
function holderOf(clients, req, ttl) {
  const h = held.get(req.token);
  if (h && h.key === req.key) return h;
  return new Holder(clients, req.key, { ...externalOptions(req.token), lockTimeout: ttl || 10000 });
}

async function release(clients, req) {
  const h = holderOf(clients, req);
  held.delete(req.token);
  const op = await h.run((m) => m.release());
  if (h.lost) {
    if (h.lost.definite) return { id: req.id, outcome: "fail", error: "lock lost: the mutex's refresh found it gone (onLockLost)" };
    return protocol.unknown(req.id, "lock lost by the mutex's refresh after command errors: it may remain on the servers");
  }
  if (op.error) return protocol.unknown(req.id, errorText(op));
  if (op.ones >= h.quorum) return { id: req.id, outcome: "ok" };
  if (op.ones + op.errors.length < h.quorum) {
    return { id: req.id, outcome: "fail", error: `lock not held (deleted on ${op.ones} of ${h.n} servers)` };
  }
  return protocol.unknown(req.id, `deleted on ${op.ones} of ${h.n} servers, errors: ${errorText(op)}`);
}

async function extend(clients, req) {
  const old = held.get(req.token);
  const h = new Holder(clients, req.key, { ...mutexOptions(req.ttl_ms), ...externalOptions(req.token) });
  const start = performance.now();
  const op = await h.run((m) => m.tryAcquire());
  const elapsed = performance.now() - start;
  if (op.error) return protocol.unknown(req.id, errorText(op)); // the old mutex goes on refreshing
  if (op.value === true) {
    if (old) old.mutex.stopRefresh(); // the new mutex refreshes with the new ttl
    held.set(req.token, h);
    return { id: req.id, outcome: "ok", token: req.token, validity_ms: Math.max(0, Math.floor(req.ttl_ms - elapsed)) };
  }
  // Not ours on a quorum any more (RedlockMutex >= 5.3.1 deleted it everywhere): the
  // old mutex stops, and a release of this token answers from what this extend learnt.
  const definite = op.errors.length === 0;
  if (old) old.mutex.stopRefresh();
  h.lost = { definite };
  held.set(req.token, h);
  if (definite) return { id: req.id, outcome: "fail", error: "lock not held (the refresh script refused)" };
  return protocol.unknown(req.id, `not extended after command errors: ${errorText(op)}`);
}

protocol.serve({
  name: variant.name,
  options: protocol.atMostOnce,
  // Mutex takes any ioredis client, so also the cluster client: its commands (SET NX,
  // EVALSHA/EVAL of one key) go to the primary of mutex:<key>'s slot.
  cluster: variant.nodes ? undefined : protocol.atMostOnceCluster,
  ops: { acquire, release, extend },
  extend: true,
  nodes: variant.nodes,
  library: LIBRARY,
});
