//go:build redsync_v4pre12 && !redsync_v4pre7

package libs

import (
	"errors"

	"github.com/go-redsync/redsync/v4"
)

// The redsync adapter against v4.7.0 – v4.11.x: redsync's typed errors exist
// (ErrTaken, ErrNodeTaken, RedisError, joined by hashicorp/go-multierror), values in
// v4.7.x and pointers from v4.8.0; ErrLockAlreadyExpired does not (v4.12.0), so a
// server whose key is gone answers as one whose key is another's, ErrNodeTaken.

// redsyncRefused reports whether err is a definite refusal, as redsync_current.go's.
func redsyncRefused(err error, nodes, quorum int) bool {
	return redsyncRefusedBy(err, nodes, quorum,
		func(err error) bool {
			var v redsync.ErrTaken
			var p *redsync.ErrTaken
			return errors.As(err, &v) || errors.As(err, &p)
		},
		func(e error) bool {
			var v redsync.ErrNodeTaken
			var p *redsync.ErrNodeTaken
			return errors.As(e, &v) || errors.As(e, &p)
		})
}
