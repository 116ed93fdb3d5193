// Package releases holds the lock libraries' releases: which library each implementation
// runs (one table, Libraries), the versions its registry serves (Versions), and building
// or installing one release on demand into a cache (Cache.Prepare), so that every
// command takes NAME@VERSION wherever it takes an implementation (Resolver, for
// lockimpl.Registry.SetResolver).
//
// A release of a Go library is locklab-lockserve built from the locklab source tree
// against that release (go get into a copy of go.mod), run out of process; a release of
// an npm library is the Node.js clients' package.json with that one dependency
// replaced, installed by npm, from which the client requires its libraries
// (LOCKLAB_NODE_MODULES); Python's redis-py is Debian's python3-redis, whose installed
// version alone is served. The network (the Go module proxy, the npm registry, through
// the go and npm commands) is used only to build or install a release and to list
// versions, never to run one that is in the cache.
//
// It builds on lockimpl, lockimpl/subprocess and cluster/faketime (whose CacheDir is
// locklab's cache folder); only the CLI imports it.
package releases
