package lockimpl

import "github.com/redis/go-redis/v9"

// Lua scripts run atomically on the server, so a check and the action it guards cannot be
// separated by another client's command.
const (
	// KEYS[1] lock; ARGV[1] token. Deletes the lock only if it is ours: 1 deleted, 0 not ours.
	releaseSrc = `if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0`

	// KEYS[1] lock; ARGV[1] token, ARGV[2] ttl ms. Resets the expiry only if the lock is
	// ours: 1 done, 0 not ours.
	extendSrc = `if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`

	// KEYS[1] lock, KEYS[2] fence counter (no expiry, so fences never go back while the
	// server keeps its data); ARGV[1] token, ARGV[2] ttl ms. Returns the new fence, or 0
	// when the lock is taken.
	fencedAcquireSrc = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return redis.call('INCR', KEYS[2])
end
return 0`
)

// scripts are the loaded forms of the sources (EVALSHA, falling back to EVAL once after a
// server lost its script cache, which is safe: NOSCRIPT means nothing ran).
type scripts struct {
	release, extend, fencedAcquire *redis.Script
}

func newScripts() scripts {
	return scripts{
		release:       redis.NewScript(releaseSrc),
		extend:        redis.NewScript(extendSrc),
		fencedAcquire: redis.NewScript(fencedAcquireSrc),
	}
}
