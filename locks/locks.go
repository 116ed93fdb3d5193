package locks

import (
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/libs"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// All is a fresh registry of every implementation locklab ships: the correct
// single-instance locks, the mutants, then the multi-node, renewing, third-party and
// subprocess locks, then the renewing locks out of process, then etcd (the consensus
// baseline) in and out of process.
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
	// The consensus baseline last, in process and out of process (its session renews
	// the lease in the background, which only a stop-the-world pause freezes).
	etcd := libs.Etcd()
	for _, impl := range []lockimpl.Impl{etcd, subprocess.OutOfProcess(etcd)} {
		if err := r.Register(impl); err != nil {
			panic(err) // a programming error in the lists
		}
	}
	return r
}
