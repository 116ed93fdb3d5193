package locks

import (
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/consensus"
	"github.com/locklab/locklab/lockimpl/libs"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// All is a fresh registry of every implementation locklab ships: the correct
// single-instance locks, the mutants, then the multi-node, renewing, third-party and
// subprocess locks, then the renewing locks out of process, then etcd (the consensus
// baseline) in and out of process, then ZooKeeper's lock recipe in and out of process.
func All() *lockimpl.Registry {
	r := lockimpl.NewRegistry()
	var all []lockimpl.Impl
	all = append(all, lockimpl.Impls()...)
	all = append(all, libs.Impls()...)
	all = append(all, subprocess.Impls()...)
	for _, i := range all {
		if err := r.Register(i); err != nil {
			panic(err) // a programming error in the lists
		}
	}
	// The renewing locks once more out of process, where a stop-the-world pause reaches
	// their renewals.
	for _, name := range []string{"watchdog", "rueidislock"} {
		impl, err := r.Get(name)
		if err == nil {
			err = r.Register(subprocess.OutOfProcess(impl))
		}
		if err != nil {
			panic(err) // a programming error in the lists
		}
	}
	// The consensus locks last, in process and out of process (their sessions renew in
	// the background, which only a stop-the-world pause freezes): etcd's, the baseline,
	// then ZooKeeper's.
	etcd, zookeeper := consensus.Etcd(), consensus.ZooKeeper()
	for _, impl := range []lockimpl.Impl{etcd, subprocess.OutOfProcess(etcd), zookeeper, subprocess.OutOfProcess(zookeeper)} {
		if err := r.Register(impl); err != nil {
			panic(err) // a programming error in the lists
		}
	}
	return r
}
