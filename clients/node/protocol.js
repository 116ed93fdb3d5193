// The locklab side of a Node.js lock client, shared by lock.js, seed-withlock.js,
// redlock.js and redis-semaphore.js: the environment locklab starts a client with, the
// ioredis connection options it implies (one server, the primary through Sentinel, N
// independent servers, or a Redis Cluster through ioredis's cluster client), and the loop of the subprocess protocol locklab-lock/1
// (docs/subprocess-protocol.md): a hello line, then one JSON request per line on stdin
// and one JSON answer per line on stdout; logs go to stderr.
//
// What a client does with Redis, and how its ioredis client retries, is the client's
// own: it passes its operations and its retry options in.
"use strict";

const readline = require("node:readline");
const path = require("node:path");
const { createRequire } = require("node:module");

// lib requires a library the client runs (ioredis, redlock, redis-semaphore, …, and
// their package.json). By default that is the pinned release, installed beside the
// clients (clients/node/node_modules). locklab sets LOCKLAB_NODE_MODULES, a node_modules
// folder, to run another release it installed in its cache (NAME@VERSION): every
// library, and the libraries they require, then come from there, so that a library and
// the ioredis it is handed are of the same install.
const libRequire = process.env.LOCKLAB_NODE_MODULES
  ? createRequire(path.join(path.resolve(process.env.LOCKLAB_NODE_MODULES), "..", "locklab-client.js"))
  : require;
function lib(name) {
  return libRequire(name);
}

const Redis = lib("ioredis");

const PROTOCOL = "locklab-lock/1";

// logger is a log function for stderr, prefixed with the client's name and pid.
function logger(name) {
  return (...args) => console.error(`[${name} ${process.pid}]`, ...args);
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

// list reads a comma-separated environment variable.
function list(name) {
  const v = process.env[name] || "";
  return v.split(",").map((s) => s.trim()).filter((s) => s !== "");
}

// timeoutMs is LOCKLAB_TIMEOUT_MS, the per-command network timeout (2000 when unset).
function timeoutMs() {
  const timeout = Number(process.env.LOCKLAB_TIMEOUT_MS || "2000");
  if (!Number.isFinite(timeout) || timeout <= 0) {
    throw new Error(`bad LOCKLAB_TIMEOUT_MS ${JSON.stringify(process.env.LOCKLAB_TIMEOUT_MS)}`);
  }
  return timeout;
}

// access reads how to use servers that need more than a plain connection (external
// ones): LOCKLAB_REDIS_USERNAME, LOCKLAB_REDIS_PASSWORD, LOCKLAB_REDIS_DB, and for TLS
// LOCKLAB_REDIS_TLS=1 with LOCKLAB_REDIS_CA (the CA bundle) and
// LOCKLAB_REDIS_TLS_SERVERNAME (one name per address of LOCKLAB_ADDRS, to check each
// server's certificate against: the address dialled is locklab's link, not the server's
// name). It returns a function of an address's index that gives the ioredis options
// for it. Secrets come only from the environment and are never logged.
function access(count) {
  const env = process.env;
  const base = {};
  if (env.LOCKLAB_REDIS_USERNAME) base.username = env.LOCKLAB_REDIS_USERNAME;
  if (env.LOCKLAB_REDIS_PASSWORD) base.password = env.LOCKLAB_REDIS_PASSWORD;
  if (env.LOCKLAB_REDIS_DB) {
    const db = Number(env.LOCKLAB_REDIS_DB);
    if (!Number.isInteger(db) || db < 0) throw new Error(`bad LOCKLAB_REDIS_DB ${JSON.stringify(env.LOCKLAB_REDIS_DB)}`);
    base.db = db;
  }
  const tls = env.LOCKLAB_REDIS_TLS || "";
  if (tls !== "" && tls !== "0" && tls !== "1") throw new Error(`bad LOCKLAB_REDIS_TLS ${JSON.stringify(tls)}: want 1 or unset`);
  if (tls !== "1") return () => ({ ...base });
  const names = list("LOCKLAB_REDIS_TLS_SERVERNAME");
  if (names.length !== count) {
    throw new Error(`LOCKLAB_REDIS_TLS_SERVERNAME names ${names.length} servers for the ${count} of LOCKLAB_ADDRS`);
  }
  const ca = env.LOCKLAB_REDIS_CA ? require("node:fs").readFileSync(env.LOCKLAB_REDIS_CA) : undefined;
  return (i) => ({ ...base, tls: { servername: names[i], ...(ca ? { ca } : {}) } });
}

// via reads LOCKLAB_VIA, from=to[,from=to...], as an ioredis natMap: an address the
// servers name (Sentinel its primary, a Redis Cluster its nodes) is dialled as the
// client's own link to it.
function via() {
  const natMap = {};
  for (const pair of list("LOCKLAB_VIA")) {
    const [from, to] = pair.split("=");
    if (!from || !to) throw new Error(`bad LOCKLAB_VIA entry ${JSON.stringify(pair)}: want from=to`);
    natMap[from] = parseAddr(to);
  }
  return natMap;
}

// onCluster reports whether locklab gave a Redis Cluster (LOCKLAB_CLUSTER=1).
function onCluster() {
  const v = process.env.LOCKLAB_CLUSTER || "";
  if (v !== "" && v !== "0" && v !== "1") throw new Error(`bad LOCKLAB_CLUSTER ${JSON.stringify(v)}: want 1 or unset`);
  return v === "1";
}

// config reads the environment: the timeout, and the ioredis options that reach the
// servers — one server (LOCKLAB_ADDRS, with its access), or the primary followed through Sentinel
// (LOCKLAB_SENTINELS, LOCKLAB_MASTER, LOCKLAB_VIA) — merged over the client's own
// options, base(timeout). On a Redis Cluster (LOCKLAB_CLUSTER=1) it returns cluster
// instead of opts (see configCluster); a client that gives no clusterBase refuses one.
function config(base, clusterBase) {
  const timeout = timeoutMs();
  if (onCluster()) {
    if (!clusterBase) throw new Error("LOCKLAB_CLUSTER=1: this client does not run on a Redis Cluster");
    return { timeout, cluster: configCluster(base(timeout), clusterBase(timeout)) };
  }
  const opts = base(timeout);
  const sentinels = list("LOCKLAB_SENTINELS");
  if (sentinels.length === 0) {
    const addrs = list("LOCKLAB_ADDRS");
    if (addrs.length !== 1) {
      throw new Error(`LOCKLAB_ADDRS must name exactly one server, got ${JSON.stringify(process.env.LOCKLAB_ADDRS)}`);
    }
    return { timeout, opts: { ...opts, ...access(1)(0), ...parseAddr(addrs[0]) } };
  }
  // Replicated topology: follow the primary through Sentinel; addresses the Sentinels
  // name are rewritten to this client's links (LOCKLAB_VIA).
  const master = process.env.LOCKLAB_MASTER;
  if (!master) throw new Error("LOCKLAB_SENTINELS given without LOCKLAB_MASTER");
  return {
    timeout,
    opts: {
      ...opts,
      sentinels: sentinels.map(parseAddr),
      name: master,
      natMap: via(),
      updateSentinels: false, // only the Sentinels (links) locklab gave
      failoverDetector: true, // drop the old primary when a Sentinel announces a new one
      sentinelCommandTimeout: timeout,
    },
  };
}

// configCluster is the Redis Cluster of the environment (LOCKLAB_CLUSTER=1) as
// new Redis.Cluster(seeds, opts) takes it: the seeds are LOCKLAB_ADDRS (the client's
// links to the nodes, at least one), and the addresses the nodes announce (CLUSTER
// SLOTS, MOVED, ASK) are dialled as LOCKLAB_VIA says (natMap). opts are the client's
// cluster options, clusterOpts, with its connection options, nodeOpts (and the access:
// a user and password; a database or TLS is refused), as redisOptions: ioredis makes
// one connection per node from them.
function configCluster(nodeOpts, clusterOpts) {
  if (list("LOCKLAB_SENTINELS").length > 0) throw new Error("LOCKLAB_SENTINELS given with LOCKLAB_CLUSTER=1");
  const addrs = list("LOCKLAB_ADDRS");
  if (addrs.length === 0) {
    throw new Error(`LOCKLAB_ADDRS must name at least one node of the Redis Cluster, got ${JSON.stringify(process.env.LOCKLAB_ADDRS)}`);
  }
  if ((process.env.LOCKLAB_REDIS_TLS || "") === "1") throw new Error("TLS to a Redis Cluster is not supported");
  const acc = access(addrs.length)(0);
  if (acc.db) throw new Error("a Redis Cluster has database 0 only");
  return {
    seeds: addrs.map(parseAddr),
    opts: { ...clusterOpts, natMap: via(), redisOptions: { ...nodeOpts, ...acc } },
  };
}

// configNodes reads the environment of a lock over N independent servers (topology
// "nodes", as Redlock): the timeout, and one set of ioredis options per address of
// LOCKLAB_ADDRS (at least one), each the client's own options, base(timeout), plus the
// address and its access (see access). Sentinels are refused: these servers are
// independent, not one primary.
function configNodes(base) {
  const timeout = timeoutMs();
  if (onCluster()) throw new Error("LOCKLAB_CLUSTER=1 given to a client of N independent servers (topology nodes)");
  if (list("LOCKLAB_SENTINELS").length > 0) {
    throw new Error("LOCKLAB_SENTINELS given to a client of N independent servers (topology nodes): it does not follow a primary");
  }
  const addrs = list("LOCKLAB_ADDRS");
  if (addrs.length === 0) {
    throw new Error(`LOCKLAB_ADDRS must name at least one server, got ${JSON.stringify(process.env.LOCKLAB_ADDRS)}`);
  }
  const opts = base(timeout);
  const acc = access(addrs.length);
  return { timeout, nodes: addrs.map((a, i) => ({ ...opts, ...acc(i), ...parseAddr(a) })) };
}

// atMostOnce are ioredis options that send each command at most once and fail rather
// than wait: no retry of a request after a reconnect, no resending of commands in
// flight when the connection dropped, no queue while disconnected; commandTimeout and
// connectTimeout are the protocol's timeout. ioredis reconnects in the background, so a
// later request finds the connection back. A client whose outcomes must be exact (a
// resent SET NX answers nil for the client's own lock) uses them.
function atMostOnce(timeout) {
  return {
    maxRetriesPerRequest: 0, // null would mean "wait forever"; 0 fails at the first disconnect
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    commandTimeout: timeout,
    connectTimeout: timeout,
    retryStrategy: (times) => Math.min(times * 50, 500),
  };
}

// atMostOnceCluster are the ioredis cluster options of a client that uses atMostOnce for
// its connections: a command is sent on to another node only after a node's definite
// refusal, MOVED or ASK (it was not executed: ioredis follows them, up to
// maxRedirections), and never after a failure that leaves its outcome open.
//
//   retryDelayOnFailover: 0     the cluster's default (100) sends a command whose
//                               connection closed ("Connection is closed.", also with
//                               the command in flight) again, to a random node after
//                               100 ms: the resend of a SET NX that may have been
//                               executed. 0 fails it.
//   clusterNodeRetryStrategy: null  a node's connection is not reconnected (so
//                               nothing in flight is resent on it); the cluster makes a
//                               new one when a command or the slot map needs the node.
//   retryDelayOnClusterDown: 0  CLUSTERDOWN is an error reply (unknown), not retried:
//                               a retry waits in a queue and would go out even after
//                               the command timed out and was answered unknown.
//   retryDelayOnTryAgain: 0     TRYAGAIN (multi-key commands during a resharding;
//                               the client sends single-key ones) retried at once.
//   enableOfflineQueue: false   no command waits for the cluster to be ready: the
//                               cluster's queue has no timeout.
//   slotsRefreshTimeout         the protocol's timeout (the default, 1 s, is short on a
//                               loaded machine).
//
// A command that timed out (commandTimeout) is answered unknown; sendOnce (serve)
// keeps a redirection that arrives later from sending it anew.
function atMostOnceCluster(timeout) {
  return {
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 0,
    retryDelayOnTryAgain: 0,
    retryDelayOnMoved: 0,
    maxRedirections: 16,
    clusterNodeRetryStrategy: null,
    enableOfflineQueue: false,
    slotsRefreshTimeout: timeout,
  };
}

// sendOnce keeps the node connections of an ioredis cluster client from writing a
// command that is already settled: ioredis follows a MOVED or ASK reply, and runs its
// delayed retries, without looking whether the command has timed out meanwhile; a
// command answered unknown would then be sent, and executed, after its answer.
function sendOnce(cluster) {
  cluster.on("+node", (node) => {
    const send = node.sendCommand;
    node.sendCommand = function (command, stream) {
      if (command.isSettled) return command.promise;
      return send.call(this, command, stream);
    };
  });
}

// answer writes one protocol line on stdout.
function answer(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

// unknown is the answer for anything but a definite reply from Redis.
function unknown(id, err) {
  return { id, outcome: "unknown", error: String((err && err.message) || err) };
}

// handle checks one request line and runs it with ops[req.op](redis, req) (redis: the
// client, or the array of clients of a client of N servers). An op that throws answers
// unknown: a timeout, a disconnect, an error reply leave the outcome open.
async function handle(redis, ops, line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    return unknown(null, `malformed request: ${err.message}`);
  }
  const op = Object.hasOwn(ops, req.op) ? ops[req.op] : undefined;
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
// and requests before the connection is up get whatever the client's options make of
// them.
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

// serve runs a client over the protocol until locklab closes stdin.
//
//   name     the client's name, for the hello line and the log;
//   options  timeout => the client's own ioredis options (retries, timeouts);
//   cluster  optional: timeout => the client's ioredis cluster options (e.g.
//            atMostOnceCluster): the client also runs on a Redis Cluster
//            (LOCKLAB_CLUSTER=1), through new Redis.Cluster (see configCluster), and
//            ops get the cluster client; without it the client refuses a cluster;
//   ops      { acquire, release[, extend] }: async (redis, req) => answer;
//   extend   whether the client extends (the hello's "extend");
//   connect  optional: opts => the ioredis client (default new Redis(opts)); not on a
//            Redis Cluster, whose client is always new Redis.Cluster;
//   nodes    optional: a client of N independent servers (topology "nodes"): one
//            ioredis client per address of LOCKLAB_ADDRS, and ops get their array;
//   library  optional: the hello's "library" (default ioredis's name and version).
async function serve({ name, options, cluster, ops, extend, connect, nodes, library }) {
  const log = logger(name);
  try {
    const make = (opts) => (connect ? connect(opts) : new Redis(opts));
    let timeout, redis, clients;
    if (nodes) {
      const c = configNodes(options);
      timeout = c.timeout;
      redis = clients = c.nodes.map(make);
    } else {
      const c = config(options, cluster);
      timeout = c.timeout;
      if (c.cluster) {
        // lazyConnect: sendOnce must see every node connection, the seeds' too.
        redis = new Redis.Cluster(c.cluster.seeds, { ...c.cluster.opts, lazyConnect: true });
        sendOnce(redis);
        redis.on("node error", (err, node) => log(`redis node ${node}:`, err.message));
        redis.connect().catch((err) => log("redis cluster:", err.message));
      } else {
        redis = make(c.opts);
      }
      clients = [redis];
    }
    clients.forEach((client, i) => client.on("error", (err) => log(nodes ? `redis ${i}:` : "redis:", err.message)));
    // Connecting includes ioredis's handshake under the command timeout; a loaded
    // machine may need more than a short timeout for it, a server that is down will not
    // answer in any case: wait for the connections a bounded while, at least 5 s.
    const wait = Math.max(timeout, 5000);
    const up = await Promise.all(clients.map((client) => ready(client, wait)));
    if (!up.every(Boolean)) log(`not connected to every server after ${wait} ms; saying hello anyway`);

    const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
    // locklab sends one request at a time; the chain keeps answers in order regardless.
    let chain = Promise.resolve();
    rl.on("line", (line) => {
      chain = chain.then(async () => answer(await handle(redis, ops, line)));
    });
    rl.on("close", () => {
      // locklab closed stdin: we are done.
      chain.finally(() => {
        clients.forEach((client) => client.disconnect());
        process.exit(0);
      });
    });
    library = library || `ioredis@${lib("ioredis/package.json").version}`;
    // Which release ran, in the run's log of this client.
    log(`library ${library}${process.env.LOCKLAB_NODE_MODULES ? ` from ${process.env.LOCKLAB_NODE_MODULES}` : ""}`);
    answer({ hello: PROTOCOL, name, fencing: false, extend, library });
  } catch (err) {
    log("fatal:", (err && err.stack) || err);
    process.exit(1);
  }
}

module.exports = { PROTOCOL, lib, logger, parseAddr, list, timeoutMs, access, via, onCluster, config, configCluster, configNodes, atMostOnce, atMostOnceCluster, sendOnce, answer, unknown, handle, ready, serve };
