//go:build redsync_v4pre7

package libs

import (
	"errors"
	"testing"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// Before v4.7.0 only (false, nil) is a refusal (redsync_v4pre7.go's table).
func TestRedsyncPre7Classification(t *testing.T) {
	l := &redsyncLock{clients: make([]redis.UniversalClient, 3), quorum: 2}
	for _, c := range []struct {
		what string
		err  error
		want histories.Outcome
	}{
		{"release or extend: (false, nil)", nil, histories.Fail},
		{"acquire: ErrFailed", redsync.ErrFailed, histories.Unknown},
		{"extend: ErrExtendFailed", redsync.ErrExtendFailed, histories.Unknown},
		{"a client error", errors.New("i/o timeout"), histories.Unknown},
	} {
		err := l.classify(c.err, lockimpl.ErrNotHeld)
		if got := lockimpl.Classify(err); got != c.want {
			t.Errorf("%s: %v (%v), want %v", c.what, got, err, c.want)
		}
		if c.want == histories.Fail && !errors.Is(err, lockimpl.ErrNotHeld) {
			t.Errorf("%s: %v does not wrap ErrNotHeld", c.what, err)
		}
	}
}
