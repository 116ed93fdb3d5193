package cluster

import (
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ExactlyOnce are go-redis options under which every command is sent once, and only the
// commands asked for reach the server. Lock clients, the store's clients and the
// harness's own probes all use them, because a retried command can misreport its
// outcome: a retried SET NX whose first attempt succeeded but whose reply was lost
// answers "not acquired" to the lock's own holder. Dial failures are not retried either
// (nothing was sent, and the time stays bounded). No CLIENT SETINFO or maintenance
// handshake; RESP2 so that replies have one shape. A caller's context deadline also
// bounds each command. Callers change what they need (pool size, dialer) on the result.
func ExactlyOnce(addr string, timeout time.Duration) *redis.Options {
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

// NodeOptions are ExactlyOnce options for n's own address with n's Access: the
// harness's own clients of a server (probes, checks, clean-up).
func NodeOptions(n Node, timeout time.Duration) *redis.Options {
	return AccessOf(n).Apply(ExactlyOnce(n.Addr(), timeout))
}
