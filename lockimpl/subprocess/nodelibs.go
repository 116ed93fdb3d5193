package subprocess

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/locklab/locklab/lockimpl"
)

// The Node.js lock libraries locklab judges through clients of clients/node (their
// classification is in docs/libraries.md). The versions are the exact ones of
// clients/node/package.json and package-lock.json; a test holds them to it.
const (
	// nodeRedlockVersion is npm redlock's, run by clients/node/redlock.js (node-redlock).
	nodeRedlockVersion = "4.2.0"
	// redisSemaphoreVersion is npm redis-semaphore's, run by clients/node/redis-semaphore.js
	// (redis-semaphore-mutex, redis-semaphore-redlock).
	redisSemaphoreVersion = "5.8.0"
	// sesamecareRedlockVersion is npm @sesamecare-oss/redlock's (a maintained fork of
	// redlock v5, with using() and its automatic extension), run by
	// clients/node/redlock-auto.js (node-redlock-auto).
	sesamecareRedlockVersion = "1.4.0"
)

// The options of the Node.js libraries, as their users set them (impl_options); the
// clients read them from LOCKLAB_OPTIONS (clients/node/options.js). Durations reach the
// clients in milliseconds.

// redlockDriftFactor is driftFactor of both Redlocks (redlock 4.2.0 and
// @sesamecare-oss/redlock), written as users write it.
func redlockDriftFactor() lockimpl.Option {
	return lockimpl.Option{
		Name: "drift_factor", Kind: lockimpl.KindString, Default: "0.01", Values: []any{"0", "0.001", "0.01", "0.1"},
		Doc: "driftFactor (the library's default 0.01): the validity is ttl − (round(ttl × driftFactor) + 2 ms) − the time the grant took; " +
			"0 leaves 2 ms for the drift between the client's and the servers' clocks",
	}
}

// redlockRetryCount is retryCount of both Redlocks; what a retry is differs (doc).
func redlockRetryCount(doc string) lockimpl.Option {
	return lockimpl.Option{
		Name: "retry_count", Kind: lockimpl.KindInt, Default: 0, Values: []any{3, 10}, Min: 0, Max: 100, Neutral: true,
		Doc: "retryCount: attempts after a failed one, retryDelay ± retryJitter apart (locklab's default 0: every refusal is in the history; the library's is 10; " +
			"-1, forever, cannot be run: locklab gives up on an answer after LOCKLAB_TIMEOUT_MS + 1 s, replaces the client and records unknown). " + doc,
	}
}

func redlockRetryDelay() lockimpl.Option {
	return lockimpl.Option{
		Name: "retry_delay", Kind: lockimpl.KindDuration, Default: 200 * time.Millisecond, Values: []any{50 * time.Millisecond},
		Max: int64(5 * time.Second), Neutral: true,
		Doc: "retryDelay between attempts (the library's default)",
	}
}

func redlockRetryJitter() lockimpl.Option {
	return lockimpl.Option{
		Name: "retry_jitter", Kind: lockimpl.KindDuration, Default: 100 * time.Millisecond, Values: []any{time.Duration(0)},
		Max: int64(5 * time.Second), Neutral: true,
		Doc: "retryJitter: each delay is retryDelay plus a uniform random amount in ±retryJitter (the library's default)",
	}
}

// nodeRedlockOptions are node-redlock's: new Redlock(clients, settings) of redlock 4.2.0.
func nodeRedlockOptions() []lockimpl.Option {
	return []lockimpl.Option{
		redlockDriftFactor(),
		redlockRetryCount("4.2.0 retries lock and extend (each failed attempt first deletes our value everywhere, so an extend retried after a partial failure finds nothing left to extend); " +
			"the attempts run inside the request, whose recorded interval covers them, and the validity counts from the attempt that was granted: timing only"),
		redlockRetryDelay(),
		redlockRetryJitter(),
	}
}

// automaticExtensionThreshold is node-redlock-auto's using() setting. locklab's default
// is not the library's: with 500 ms using() refuses every ttl under 600 ms, and plans
// draw TTLs from 200 ms (generators) and 400 ms (the property test of correct locks).
func automaticExtensionThreshold() lockimpl.Option {
	return lockimpl.Option{
		Name: "automatic_extension_threshold", Kind: lockimpl.KindDuration, Default: 100 * time.Millisecond,
		Values: []any{time.Duration(0), 200 * time.Millisecond, 500 * time.Millisecond}, Max: int64(10 * time.Second),
		Doc: "automaticExtensionThreshold of using(): the lease is extended by the full ttl when this much is left of its validity; " +
			"using() refuses a ttl below threshold + 100 ms before sending anything (the acquire is unknown): the library's default 500ms refuses every ttl under 600 ms, " +
			"locklab's 100ms takes every ttl from 200 ms; an extension that does not land before the keys expire loses the lease silently; " +
			"0 extends when the validity is over, and the library's own clock check then gives the lease up",
	}
}

// nodeRedlockAutoOptions are node-redlock-auto's: new Redlock(clients, settings) of
// @sesamecare-oss/redlock 1.4.0.
func nodeRedlockAutoOptions() []lockimpl.Option {
	return []lockimpl.Option{
		redlockDriftFactor(),
		redlockRetryCount("1.4.0 retries every operation: the acquire (without deleting a partial grant in between: the lock script refuses a key that exists, ours too), " +
			"each automatic extension, and the release; timing only, but a release that finds the lease gone takes every retry before it answers"),
		redlockRetryDelay(),
		redlockRetryJitter(),
		automaticExtensionThreshold(),
	}
}

// redisSemaphoreOptions are the options of redis-semaphore's mutexes (Mutex and
// RedlockMutex take the same ones); lockTimeout is the request's ttl.
func redisSemaphoreOptions() []lockimpl.Option {
	return []lockimpl.Option{
		{
			Name: "refresh_interval_percent", Kind: lockimpl.KindInt, Default: 80, Values: []any{0, 50, 150}, Min: 0, Max: 1000,
			Doc: "refreshInterval as a percentage of lockTimeout (the request's ttl): round(ttl × p / 100); 80 is the library's default (0.8 × lockTimeout), " +
				"0 turns the refresh off (refreshInterval: 0: the lock expires one ttl after it was taken), above 100 refreshes only after the key expired",
		},
		{
			Name: "acquire_attempts_limit", Kind: lockimpl.KindInt, Default: 1, Values: []any{3, 10}, Min: 1, Max: 1000, Neutral: true,
			Doc: "acquireAttemptsLimit (locklab's default 1: every refusal is in the history; the library's is unlimited, bounded by acquireTimeout); " +
				"the attempts run inside the request, retryInterval apart: timing only",
		},
		{
			Name: "acquire_timeout", Kind: lockimpl.KindDuration, Default: 10 * time.Second, Values: []any{100 * time.Millisecond},
			Min: int64(time.Millisecond), Max: int64(time.Hour), Neutral: true,
			Doc: "acquireTimeout (the library's default 10s): no attempt starts after it; " +
				"attempts that outlast LOCKLAB_TIMEOUT_MS + 1 s get the client replaced and the acquire recorded unknown",
		},
		{
			Name: "retry_interval", Kind: lockimpl.KindDuration, Default: 10 * time.Millisecond, Values: []any{50 * time.Millisecond},
			Max: int64(5 * time.Second), Neutral: true,
			Doc: "retryInterval: the sleep after each refused attempt, the last one included (the library's default)",
		},
	}
}

// renewsByItself is impl for a client that keeps its leases alive in the background and
// cannot extend on request (its hello says "extend": false): locklab never sends an
// extend (lockimpl.Impl.NoExtend).
func renewsByItself(impl lockimpl.Impl) lockimpl.Impl {
	impl.NoExtend = true
	return refreshing(impl)
}

// refreshing is impl for a client that keeps its leases alive in the background,
// recording no extends (lockimpl.Impl.Renews).
func refreshing(impl lockimpl.Impl) lockimpl.Impl {
	impl.Renews = true
	return impl
}

// nodeLibraryCommand is nodeClientCommand for a client of a Node.js lock library: the
// library, module, must be installed beside it (or in nodeModules) too, and the client
// gets args.
func nodeLibraryCommand(nodeModules, file, module string, args ...string) func() ([]string, error) {
	return func() ([]string, error) {
		argv, err := nodeCommand(nodeModules, file)
		if err != nil {
			return nil, err
		}
		script := argv[len(argv)-1]
		if nodeModules != "" {
			if !isFile(filepath.Join(nodeModules, module, "package.json")) {
				return nil, fmt.Errorf("the Node.js client %s lacks its dependency %s in %s (%s)", script, module, nodeModules, EnvNodeModules)
			}
			return append(argv, args...), nil
		}
		if !nodeModuleInstalled(filepath.Dir(script), module) {
			return nil, fmt.Errorf("the Node.js client %s lacks its dependency %s (no node_modules/%s next to it or above): run `npm ci --prefix clients/node` in the locklab checkout (`make deps` does it)",
				script, module, module)
		}
		return append(argv, args...), nil
	}
}

// EnvNodeModules is a node_modules folder from which a Node.js client of clients/node
// takes its libraries (protocol.js's lib) instead of its own node_modules: a release of
// a library other than the pinned one, installed elsewhere. locklab passes it only to
// the clients of NodeRelease and never passes on a value it inherited.
const EnvNodeModules = "LOCKLAB_NODE_MODULES"

// NodeRelease is the Node.js client name of Impls (node-ioredis, node-redlock, …) as
// name@version: the same client and options, its libraries taken from nodeModules
// (EnvNodeModules), where that release of its library is installed. Its description is
// the pinned client's, for the caller to replace.
func NodeRelease(name, version, nodeModules string) (lockimpl.Impl, error) {
	if nodeModules == "" {
		return lockimpl.Impl{}, fmt.Errorf("%s@%s: no node_modules folder given", name, version)
	}
	for _, impl := range nodeImpls(nodeModules, "@"+version) {
		if impl.Name == name+"@"+version {
			return impl, nil
		}
	}
	return lockimpl.Impl{}, fmt.Errorf("%s is not a Node.js client of locklab's", name)
}
