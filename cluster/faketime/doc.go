// Package faketime is the libfaketime machinery of the process backend: it finds
// libfaketime (FindLibfaketime) and the redis-server to run under it (FindFaketimeServer,
// in CacheDir), builds such a server's environment (Setup.Environ), and keeps the
// per-server control file that libfaketime reads the wall clock's offset and rate from
// (Clock).
//
// Debian's redis-server (jemalloc) hangs under libfaketime: jemalloc reads the clock while
// libfaketime is still resolving its own symbols. The servers run a build of the same
// Redis without jemalloc instead, made by scripts/build-redis-libc.sh.
//
// It knows nothing of nodes, backends or topologies: cluster's ProcessNode (FakeClock,
// SetClock, ClockOffset) and Options.ServerClock are built on it, and its tests that
// run Redis under libfaketime live there. It must not import cluster or any other
// locklab package.
package faketime
