#!/usr/bin/env node
// A locklab adapter for an existing Node.js lock, an ES module or a CommonJS module,
// which it loads with import() from its own path: the lock's file is not edited, and its
// bare imports and require()s ("ioredis") resolve from its own project's node_modules.
// See "Wrap an existing lock" in docs/subprocess-protocol.md.
//
//   node adapter.mjs /path/to/my-lock.{mjs,cjs,js} [--env 'REDIS_URL=redis://{addr}']...
//     [--export NAME] [--acquire acquire] [--release release] [--extend extend]
//     [--fencing] [--refusal REGEX]
//
// --env sets a variable the lock reads BEFORE it is loaded, so that a connection it
// opens when loaded goes where locklab says: {addr} {host} {port} {timeout_ms} {timeout_s},
// or any environment variable ({LOCKLAB_ADDRS}). The lock is its export --export (a
// class is instantiated, another function called), else the ES module itself when it
// exports the acquire function, else its default export (a CommonJS module's
// module.exports).
import net from "node:net";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    env: { type: "string", multiple: true, default: ["REDIS_URL=redis://{addr}"] },
    export: { type: "string" },
    acquire: { type: "string", default: "acquire" },
    release: { type: "string", default: "release" },
    extend: { type: "string", default: "extend" }, // no such function: the hello says "extend": false
    fencing: { type: "boolean", default: false }, // acquire answers {token, fence}
    refusal: { type: "string" }, // a throw whose "Name: message" matches is a definite refusal
  },
});

// The mapping: edit here if your lock's functions take other arguments. acquire gives a
// token (a string, or {token, fence}), or null or false when the lock is held; release
// and extend give true (done) or false (not ours). Anything else is "unknown".
const ops = {
  acquire: (lock, r) => lock[opt.acquire](r.key, r.ttl_ms),
  release: (lock, r) => lock[opt.release](r.key, r.token),
  extend: (lock, r) => lock[opt.extend](r.key, r.token, r.ttl_ms),
};

const refusal = opt.refusal ? new RegExp(opt.refusal) : null;
const timeoutMs = Number(process.env.LOCKLAB_TIMEOUT_MS || 2000);
const list = (name) => (process.env[name] || "").split(",").filter(Boolean);
const split = (addr) => {
  const i = addr.lastIndexOf(":");
  return { host: addr.slice(0, i).replace(/^\[(.*)\]$/, "$1"), port: Number(addr.slice(i + 1)) };
};

// Protocol lines only on stdout: whatever the lock prints goes to stderr, locklab's log.
const out = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);
const send = (obj) => out(JSON.stringify(obj) + "\n");

// ask asks a Sentinel where the primary is: its address, as the Sentinel names it.
function ask(sentinel, master) {
  return new Promise((resolve, reject) => {
    const cmd = ["SENTINEL", "get-master-addr-by-name", master];
    const sock = net.connect({ ...split(sentinel), timeout: timeoutMs }, () =>
      sock.write(cmd.reduce((s, a) => s + `$${Buffer.byteLength(a)}\r\n${a}\r\n`, "*3\r\n")));
    let reply = "";
    sock.setEncoding("utf8").on("data", (d) => {
      reply += d;
      const m = /^\*2\r\n\$\d+\r\n(.*)\r\n\$\d+\r\n(\d+)\r\n/.exec(reply);
      if (m) resolve(m[1].includes(":") ? `[${m[1]}]:${m[2]}` : `${m[1]}:${m[2]}`);
      else if (/^(-|\*-1)/.test(reply)) reject(new Error(reply.trim()));
      else return; // more to come
      sock.destroy();
    });
    sock.on("timeout", () => sock.destroy(new Error("timed out"))).on("error", reject);
    sock.on("close", () => reject(new Error("closed without an answer")));
  });
}

// server is where the lock connects: the one server, or the primary the Sentinels name
// at start (a lock that connects at import cannot follow a failover), dialled through
// this client's own link to it (LOCKLAB_VIA).
async function server() {
  if (!process.env.LOCKLAB_SENTINELS) return list("LOCKLAB_ADDRS")[0];
  const via = Object.fromEntries(list("LOCKLAB_VIA").map((p) => p.split("=")));
  for (const s of list("LOCKLAB_SENTINELS")) {
    const primary = await ask(s, process.env.LOCKLAB_MASTER).catch((err) => console.error(`sentinel ${s}:`, err.message));
    if (primary) return via[primary] ?? primary;
  }
  throw new Error("no Sentinel named the primary");
}

async function answer(lock, r) {
  let got;
  try {
    got = await ops[r.op](lock, r);
  } catch (err) {
    const why = `${err?.name}: ${err?.message ?? err}`; // a timeout, a lost connection...: it may have run
    return { id: r.id, outcome: refusal?.test(why) ? "fail" : "unknown", error: why };
  }
  if (got === null || got === false) return { id: r.id, outcome: "fail", error: `${r.op} answered ${got}` };
  if (r.op !== "acquire" && got === true) return { id: r.id, outcome: "ok" };
  const token = typeof got === "string" ? got : got?.token;
  const fence = opt.fencing ? got?.fence : 0;
  if (r.op === "acquire" && typeof token === "string" && token && Number.isSafeInteger(fence) && (fence > 0 || !opt.fencing)) {
    return { id: r.id, outcome: "ok", token, fence };
  }
  return { id: r.id, outcome: "unknown", error: `${r.op}: unexpected result ${JSON.stringify(got)}` };
}

try {
  if (!positionals[0]) throw new Error("usage: node adapter.mjs /path/to/lock.{mjs,cjs,js} [options]");
  const addr = await server();
  const vars = { addr, ...split(addr), timeout_ms: timeoutMs, timeout_s: timeoutMs / 1000 };
  for (const e of opt.env) {
    const [name, ...value] = e.split("=");
    process.env[name] = value.join("=").replace(/\{(\w+)\}/g, (m, k) => vars[k] ?? process.env[k] ?? m);
  }
  // import() gives an ES module's exports, and a CommonJS module's module.exports as its
  // default export (its named exports are copies of the properties Node found in its
  // source, so the lock is taken from module.exports itself, as require() would give it).
  const ns = await import(pathToFileURL(path.resolve(positionals[0])).href); // runs its top level now
  const own = typeof ns[opt.acquire] === "function" && ns[opt.acquire] !== ns.default?.[opt.acquire];
  let lock = opt.export ? (ns[opt.export] ?? ns.default?.[opt.export]) : own ? ns : ns.default;
  if (typeof lock === "function") lock = /^class\b/.test(String(lock)) ? new lock() : await lock();
  for (const f of [opt.acquire, opt.release]) {
    if (typeof lock?.[f] !== "function") throw new Error(`${positionals[0]}: the lock has no function ${f}`);
  }
  const extend = typeof lock[opt.extend] === "function";
  send({ hello: "locklab-lock/1", name: path.basename(positionals[0]), fencing: opt.fencing, extend });
  // One request at a time, until locklab closes stdin.
  for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    send(await answer(lock, JSON.parse(line)));
  }
  process.exit(0);
} catch (err) {
  console.error("adapter:", err?.stack ?? err);
  process.exit(1);
}
