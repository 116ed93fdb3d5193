#!/usr/bin/env node
// node-redlock: the npm package redlock 4.2.0 (Mike Marcacci's Redlock for Node.js) over
// N independent Redis servers, one ioredis client per server, driven by locklab over the
// subprocess protocol locklab-lock/1 (docs/subprocess-protocol.md; loop and environment
// in protocol.js). In locklab it is the implementation node-redlock, on topology
// "nodes": LOCKLAB_ADDRS names every server. 4.2.0 is the release pinned in
// package.json, the one run by default and the one read below; node-redlock@VERSION runs
// another, installed by locklab (protocol.js's lib).
//
// The library is called as its README shows: one Redlock over the clients,
// redlock.lock(key, ttl) -> Lock, lock.unlock(), lock.extend(ttl). 4.2.0 has no
// automatic extension (that is v5's using(): node-redlock-auto, redlock-auto.js); its
// disposer() only releases.
//
// Its settings are the plan's (LOCKLAB_OPTIONS, options.js; declared in
// lockimpl/subprocess/nodelibs.go): new Redlock(clients, { driftFactor, retryCount,
// retryDelay, retryJitter }) from drift_factor (the library's default 0.01), retry_count
// (locklab's default 0: one attempt per acquire, the workload retries by itself, and
// the library's retries would hide refusals from the history; the library's is 10),
// retry_delay and retry_jitter (the library's 200 and 100 ms).
//
// What the library reports, read from redlock.js 4.2.0:
//
//   - lock, unlock and extend send one Lua script to every server and count the servers
//     that answered "done" (votes). A command error is not a vote; the library emits it
//     as a 'clientError' event and goes on.
//   - lock and extend resolve when a quorum (N/2+1) voted and the validity
//     start + ttl - (ttl*driftFactor + 2 ms) has not passed (Date.now()); otherwise they
//     unlock the value on every server (errors again only emitted), try again up to
//     retryCount times (retryDelay +- retryJitter apart; same value, new start) and
//     finally reject with LockError "Exceeded <retryCount> attempts ...".
//   - unlock resolves on a quorum of deletes, else rejects with LockError.
//   - extend rejects with LockError at once, sending nothing, when the Lock's own
//     expiration has passed (attempts 0).
//
// So a LockError alone does not say whether the servers refused: it is also what every
// timeout or connection error gives. This client listens to 'clientError' (the
// library's documented hook) during each operation: locklab sends one request at a
// time, and every command of an operation, its clean-up included, has answered or
// failed before the library settles its promise.
//
//   resolved                                  ok
//   LockError, no clientError during the call fail: every server answered every
//                                             command; fewer than a quorum granted (or
//                                             the validity ran out), and the clean-up
//                                             deleted our value wherever it was
//   extend's LockError with attempts 0        fail: the Lock expired by the library's
//                                             own clock; nothing was sent
//   anything else (a clientError, another     unknown: a command may have taken effect
//   error)                                    on a server that did not answer
//
// The client keeps the Lock objects it got, by token, as the library's users keep
// them (extend checks the Lock's expiration). A token it does not hold (a lease taken by
// a predecessor process, or one released already) gets a Lock rebuilt with the
// library's constructor, with no expiration of its own: the servers decide.
//
// ioredis sends each command at most once (protocol.atMostOnce): a resent lock script
// would find its own key and vote no.
"use strict";

const protocol = require("./protocol");
const options = require("./options");
const Redlock = protocol.lib("redlock");

const NAME = "node-redlock";
const LIBRARY = `redlock@${protocol.lib("redlock/package.json").version} (ioredis@${protocol.lib("ioredis/package.json").version})`;

const log = protocol.logger(NAME);

// OPTIONS are the plan's settings (the defaults are nodelibs.go's).
const OPTIONS = options.load(NAME, options.REDLOCK);

// SETTINGS are the Redlock's, from OPTIONS.
const SETTINGS = options.redlockSettings(OPTIONS);

// redlock is the one Redlock of the process, over the clients serve made.
let redlock = null;
// current collects the clientErrors of the operation in progress (null between them).
let current = null;
// held maps a token to the Lock the library returned for it.
const held = new Map();

function lib(clients) {
  if (redlock === null) {
    redlock = new Redlock(clients, SETTINGS);
    redlock.on("clientError", (err) => {
      log("clientError:", err && err.message);
      if (current !== null) current.push(err);
    });
  }
  return redlock;
}

// run calls f with the clientErrors of this call collected: {value} or {error, clientErrors}.
async function run(f) {
  const errors = [];
  current = errors;
  try {
    return { value: await f(), clientErrors: errors };
  } catch (error) {
    return { error, clientErrors: errors };
  } finally {
    current = null;
  }
}

// refused reports whether a rejection is a definite refusal: the library's LockError
// with every command of the call answered.
function refused(r) {
  return r.error instanceof Redlock.LockError && r.clientErrors.length === 0;
}

// unsure is the unknown answer for a rejection, naming the servers' errors.
function unsure(id, r) {
  const why = r.clientErrors.map((e) => (e && e.message) || String(e));
  const msg = (r.error && r.error.message) || String(r.error);
  return protocol.unknown(id, why.length > 0 ? `${msg} (server errors: ${why.join("; ")})` : msg);
}

// validity is what is left of a Lock by the library's clock, at most ttl.
function validity(lock, ttl) {
  return Math.max(0, Math.floor(Math.min(ttl, lock.expiration - Date.now())));
}

// lockFor is the Lock of token: the one the library returned, or one rebuilt with its
// constructor (no expiration: the servers decide).
function lockFor(r, key, token) {
  const lock = held.get(token);
  if (lock && lock.resource === key) return lock;
  return new Redlock.Lock(r, key, token, Number.POSITIVE_INFINITY, 0, 0);
}

async function acquire(clients, req) {
  const r = await run(() => lib(clients).lock(req.key, req.ttl_ms));
  if (!r.error) {
    const lock = r.value;
    held.set(lock.value, lock);
    return { id: req.id, outcome: "ok", token: lock.value, fence: 0, validity_ms: validity(lock, req.ttl_ms) };
  }
  if (refused(r)) return { id: req.id, outcome: "fail", error: r.error.message };
  return unsure(req.id, r);
}

async function release(clients, req) {
  const lock = lockFor(lib(clients), req.key, req.token);
  held.delete(req.token);
  const r = await run(() => lock.unlock());
  if (!r.error) return { id: req.id, outcome: "ok" };
  if (refused(r)) return { id: req.id, outcome: "fail", error: r.error.message };
  return unsure(req.id, r);
}

async function extend(clients, req) {
  const lock = lockFor(lib(clients), req.key, req.token);
  const r = await run(() => lock.extend(req.ttl_ms));
  if (!r.error) {
    held.set(req.token, lock);
    return { id: req.id, outcome: "ok", token: req.token, validity_ms: validity(lock, req.ttl_ms) };
  }
  if (r.error instanceof Redlock.LockError && r.error.attempts === 0) {
    held.delete(req.token);
    return { id: req.id, outcome: "fail", error: `${r.error.message} (redlock's own clock; nothing sent)` };
  }
  if (refused(r)) {
    held.delete(req.token); // the library unlocked it everywhere
    return { id: req.id, outcome: "fail", error: r.error.message };
  }
  return unsure(req.id, r); // the Lock stays: the caller releases it
}

protocol.serve({
  name: NAME,
  options: protocol.atMostOnce,
  ops: { acquire, release, extend },
  extend: true,
  nodes: true,
  library: LIBRARY,
});
