// Package libs holds the adapters of third-party Go lock libraries to lockimpl.Locker:
// redsync (redsync.go), bsm/redislock (bsmredislock.go) and rueidislock
// (rueidislock.go), which Impls lists in the order locks.All registers them, etcd's
// concurrency.Mutex (etcd.go, Etcd), the consensus baseline, and ZooKeeper's lock recipe
// through github.com/go-zookeeper/zk (zookeeper.go, ZooKeeper). The per-library error
// tables are in those files and in docs/libraries.md.
//
// It builds on lockimpl only (Config and its clients, CheckArgs, CallStep, the errors).
// It must not import locks, which imports it, nor lockimpl/subprocess.
package libs
