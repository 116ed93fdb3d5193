// Package locks is the registry of every lock implementation locklab ships: locklab's
// own locks (lockimpl), the third-party library adapters (lockimpl/libs) and the
// subprocess clients (lockimpl/subprocess), in that order.
//
// It sits above the implementations: lockimpl, lockimpl/libs and lockimpl/subprocess
// must not import it, and neither must anything the runner builds on (plan, runner,
// faults, workload, cluster, histories, ...), which take a *lockimpl.Registry instead.
// The CLI, the packages that choose implementations by default (campaign, matrix,
// tla/bridge) and tests import it.
package locks
