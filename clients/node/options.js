// The options of a Node.js lock client, as the library's users set them: locklab passes
// the plan's impl_options in LOCKLAB_OPTIONS, a JSON object with every option the
// implementation declares (lockimpl/subprocess, nodelibs.go), defaults filled in,
// durations in milliseconds (docs/subprocess-protocol.md). locklab checks the values
// before it starts a client; the client still refuses, before its hello, anything it
// does not understand, so that a mistake is an error and never a silent default.
"use strict";

const KINDS = {
  bool: (v) => typeof v === "boolean",
  int: (v) => Number.isInteger(v),
  duration: (v) => typeof v === "number" && Number.isFinite(v) && v >= 0, // milliseconds
  string: (v) => typeof v === "string",
};

const WANT = { bool: "true or false", int: "an integer", duration: "milliseconds (a number, at least 0)", string: "a string" };

// parse reads LOCKLAB_OPTIONS (raw) against spec, { name: { kind, default[, values] } },
// and returns every option's value: the given one, else its default. An unset or empty
// variable gives the defaults (a client run by hand). It throws on anything else than a
// JSON object of known options with values of their kind (for a string, one of values).
function parse(raw, spec) {
  const out = {};
  for (const [name, s] of Object.entries(spec)) out[name] = s.default;
  if (raw === undefined || raw === "") return out;
  let given;
  try {
    given = JSON.parse(raw);
  } catch (err) {
    throw new Error(`bad LOCKLAB_OPTIONS ${JSON.stringify(raw)}: ${err.message}`);
  }
  if (given === null || typeof given !== "object" || Array.isArray(given)) {
    throw new Error(`bad LOCKLAB_OPTIONS ${JSON.stringify(raw)}: want a JSON object`);
  }
  const names = Object.keys(spec);
  for (const [name, v] of Object.entries(given)) {
    const s = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!s) {
      throw new Error(`LOCKLAB_OPTIONS: unknown option ${JSON.stringify(name)} (options: ${names.join(", ") || "none"})`);
    }
    if (!KINDS[s.kind](v) || (s.values && !s.values.includes(v))) {
      const want = s.values ? `one of ${s.values.map((x) => JSON.stringify(x)).join(", ")}` : WANT[s.kind];
      throw new Error(`LOCKLAB_OPTIONS: option ${name}: want ${want}, got ${JSON.stringify(v)}`);
    }
    out[name] = v;
  }
  return out;
}

// load is parse of the environment for the client name, whose values it logs on stderr
// ("options {...}", for the run's log): on an error it says why on stderr and exits with
// status 2, before the client's hello.
function load(name, spec) {
  let opts;
  try {
    opts = parse(process.env.LOCKLAB_OPTIONS, spec);
  } catch (err) {
    console.error(`[${name} ${process.pid}] fatal: ${err.message}`);
    process.exit(2);
  }
  console.error(`[${name} ${process.pid}] options ${JSON.stringify(opts)}`);
  return opts;
}

// REDLOCK are the options both Redlocks take (redlock 4.2.0, node-redlock, and
// @sesamecare-oss/redlock, node-redlock-auto; nodelibs.go's redlock* options).
const REDLOCK = {
  drift_factor: { kind: "string", default: "0.01", values: ["0", "0.001", "0.01", "0.1"] },
  retry_count: { kind: "int", default: 0 },
  retry_delay: { kind: "duration", default: 200 },
  retry_jitter: { kind: "duration", default: 100 },
};

// redlockSettings are a Redlock's settings from the REDLOCK options in opts.
function redlockSettings(opts) {
  return {
    driftFactor: Number(opts.drift_factor),
    retryCount: opts.retry_count,
    retryDelay: opts.retry_delay,
    retryJitter: opts.retry_jitter,
  };
}

module.exports = { parse, load, REDLOCK, redlockSettings };
