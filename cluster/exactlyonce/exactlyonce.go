// Package exactlyonce has the go-redis options under which every command is sent once:
// what every client of locklab's, a lock's or the harness's own, is built from. It is a
// leaf, so that the packages below cluster (clustermode, replication) use it too.
package exactlyonce

import (
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Options are go-redis options under which every command is sent once, and only the
// commands asked for reach the server. Lock clients, the store's clients and the
// harness's own probes all use them, because a retried command can misreport its
// outcome: a retried SET NX whose first attempt succeeded but whose reply was lost
// answers "not acquired" to the lock's own holder. Dial failures are not retried either
// (nothing was sent, and the time stays bounded). No CLIENT SETINFO or maintenance
// handshake; RESP2 so that replies have one shape. A caller's context deadline also
// bounds each command. Callers change what they need (pool size, dialer) on the result.
func Options(addr string, timeout time.Duration) *redis.Options {
	return &redis.Options{
		Addr:                     addr,
		Protocol:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		MaxRetries:               -1,
		DialerRetries:            1,
		DialTimeout:              timeout,
		ReadTimeout:              timeout,
		WriteTimeout:             timeout,
		ContextTimeoutEnabled:    true,
	}
}

// OneConnection is a client of addr on Options with a pool of one connection: the
// harness's administration of a server, one command at a time.
func OneConnection(addr string, timeout time.Duration) *redis.Client {
	opts := Options(addr, timeout)
	opts.PoolSize = 1
	return redis.NewClient(opts)
}
