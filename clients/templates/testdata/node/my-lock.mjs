// An existing lock, as its team wrote it (locklab test data, wrapped unedited by
// clients/templates/node/adapter.mjs): an ES module that connects to Redis when it
// is imported, configured by environment variables, and says so on stdout.
import { randomUUID } from "node:crypto";
import Redis from "ioredis";

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
console.log(`my-lock: connecting to ${url}`);

export const redis = new Redis(url, {
  commandTimeout: Number(process.env.REDIS_COMMAND_TIMEOUT_MS ?? 5000),
  maxRetriesPerRequest: 1,
});

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const EXTEND = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

// acquire takes the lock for ttlMs: its token, or null when someone else holds it.
export async function acquire(key, ttlMs) {
  const token = randomUUID();
  return (await redis.set(key, token, "PX", ttlMs, "NX")) === "OK" ? token : null;
}

// release gives the lock up if it is still ours.
export async function release(key, token) {
  return (await redis.eval(RELEASE, 1, key, token)) === 1;
}

// extend makes a lock that is still ours last ttlMs from now.
export async function extend(key, token, ttlMs) {
  return (await redis.eval(EXTEND, 1, key, token, ttlMs)) === 1;
}
