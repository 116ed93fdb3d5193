package subprocess

import (
	"fmt"
	"path/filepath"
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
)

// nodeLibraryCommand is nodeClientCommand for a client of a Node.js lock library: the
// library, module, must be installed beside it too, and the client gets args.
func nodeLibraryCommand(file, module string, args ...string) func() ([]string, error) {
	return func() ([]string, error) {
		argv, err := nodeCommand(file)
		if err != nil {
			return nil, err
		}
		script := argv[len(argv)-1]
		if !nodeModuleInstalled(filepath.Dir(script), module) {
			return nil, fmt.Errorf("the Node.js client %s lacks its dependency %s (no node_modules/%s next to it or above): run `npm ci --prefix clients/node` in the locklab checkout (`make deps` does it)",
				script, module, module)
		}
		return append(argv, args...), nil
	}
}
