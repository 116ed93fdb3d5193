package libs

import (
	"fmt"

	"github.com/locklab/locklab/lockimpl"
)

// This file lists the adapters for third-party Go lock libraries. Each adapter calls its
// library the way the library's users do, unchanged (no fork, no internal access), and
// maps every library error honestly: a definite refusal wraps ErrNotAcquired/ErrNotHeld
// (keeping the library's text), anything after which the lock may or may not be held is
// an unknown error. The per-library tables are in redsync.go, bsmredislock.go and
// rueidislock.go, and in docs/libraries.md.

// Impls lists the third-party adapters, in the order locks.All registers them.
func Impls() []lockimpl.Impl {
	return []lockimpl.Impl{
		{
			Name:        "redsync",
			Description: "github.com/go-redsync/redsync/v4 " + redsyncVersion + " (Redlock over N independent servers, go-redis v9 pools), one try per acquire",
			Topology:    "nodes",
			Steps:       []string{lockimpl.StepGranted},
			Options:     redsyncOptions(),
			Cluster:     true,
			New:         newRedsync,
		},
		{
			Name:        "redislock",
			Description: "github.com/bsm/redislock " + bsmRedislockVersion + " (single instance, Lua obtain/refresh/release), no retry",
			Topology:    "single",
			Steps:       []string{lockimpl.StepGranted},
			Options:     redislockOptions(),
			Cluster:     true,
			New:         newBSMRedislock,
		},
		{
			Name:        "rueidislock",
			Description: "github.com/redis/rueidis/rueidislock " + rueidisVersion + " (majority of 3 keys on one server, client-side caching, renews by itself)",
			Topology:    "single",
			Steps:       []string{lockimpl.StepGranted},
			NoExtend:    true,
			Renews:      true,
			Options:     rueidisOptions(),
			Cluster:     true,
			New:         newRueidisLock,
		},
	}
}

// refusal wraps a library error that is a definite refusal in kind (ErrNotAcquired or
// ErrNotHeld), keeping the library's own text in the message.
func refusal(kind, libErr error) error { return fmt.Errorf("%w: %w", kind, libErr) }
