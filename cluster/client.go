package cluster

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster/exactlyonce"
)

// NodeOptions are exactlyonce.Options for n's own address with n's Access: the
// harness's own clients of a server (probes, checks, clean-up).
func NodeOptions(n Node, timeout time.Duration) *redis.Options {
	return AccessOf(n).Apply(exactlyonce.Options(n.Addr(), timeout))
}
