//go:build !redsync_v4pre7 && !redsync_v4pre12

package libs

import (
	"errors"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// The redsync adapter against v4.12.0 and later (the pinned release among them): the
// library's own go-redis v9 pool, its Until, its typed errors (redsync.go's table).

func redsyncPool(c redis.UniversalClient) redsyncredis.Pool { return goredis.NewPool(c) }

// redsyncUntil is the end of the validity redsync computed for m's last successful call.
func redsyncUntil(m *redsync.Mutex, _ time.Time, _ time.Duration) time.Time { return m.Until() }

func redsyncSetNXOnExtendOption() (redsync.Option, error) { return redsync.WithSetNXOnExtend(), nil }

// redsyncRefused reports whether err is a definite refusal: a quorum answered with
// another token, or every server answered and fewer than a quorum were ours.
func redsyncRefused(err error, nodes, quorum int) bool {
	return redsyncRefusedBy(err, nodes, quorum,
		func(err error) bool {
			var taken *redsync.ErrTaken
			return errors.As(err, &taken)
		},
		func(e error) bool {
			var nodeTaken *redsync.ErrNodeTaken
			return errors.As(e, &nodeTaken) || errors.Is(e, redsync.ErrLockAlreadyExpired)
		})
}
