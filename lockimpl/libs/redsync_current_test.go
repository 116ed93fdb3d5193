//go:build !redsync_v4pre7 && !redsync_v4pre12

package libs

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// redsync's results that a real run rarely produces (a quorum granted, then the validity
// ran out) are classified from the errors redsync builds (mutex.go's actOnPoolsAsync).
func TestRedsyncClassification(t *testing.T) {
	netErr := &redsync.RedisError{Node: 2, Err: syscall.ECONNREFUSED}
	taken := func(n int) error { return &redsync.ErrNodeTaken{Node: n} }
	join := func(errs ...error) error {
		var err error
		for _, e := range errs { // as redsync joins: one at a time
			err = errors.Join(err, e)
		}
		return err
	}
	for _, c := range []struct {
		what   string
		err    error
		nodes  int
		refuse bool
	}{
		{"quorum taken", &redsync.ErrTaken{Nodes: []int{0, 1}}, 3, true},
		{"quorum taken, a third node unreachable", &redsync.ErrTaken{Nodes: []int{0, 1}}, 3, true},
		{"one of three taken: two granted, validity used up", join(taken(0)), 3, false},
		{"two of four taken: two ours, no quorum", join(taken(0), taken(3)), 4, true},
		{"one of four taken: three granted, validity used up", join(taken(1)), 4, false},
		{"all granted, validity used up", redsync.ErrFailed, 3, false},
		{"extend applied, validity used up", redsync.ErrExtendFailed, 3, false},
		{"a node unreachable", join(taken(0), netErr), 3, false},
		{"every node unreachable", join(netErr, netErr, netErr), 3, false},
		{"release: gone on two of three, ours on one", join(redsync.ErrLockAlreadyExpired, redsync.ErrLockAlreadyExpired), 3, true},
		{"release: gone on one, unreachable on one", join(redsync.ErrLockAlreadyExpired, netErr), 3, false},
		{"release: gone on one, another token on one", join(redsync.ErrLockAlreadyExpired, taken(1)), 3, true},
		{"before v4.17.0, joined by go-multierror: two of four taken", multiErr{taken(0), taken(3)}, 4, true},
		{"before v4.17.0, joined by go-multierror: one taken, one unreachable", multiErr{taken(0), netErr}, 3, false},
	} {
		if got := redsyncRefused(c.err, c.nodes, c.nodes/2+1); got != c.refuse {
			t.Errorf("%s (%v): refused %v, want %v", c.what, c.err, got, c.refuse)
		}
	}
	// The refusal keeps redsync's text and wraps the kind; the rest stays as it is.
	l := &redsyncLock{clients: make([]redis.UniversalClient, 3), quorum: 2}
	err := l.classify(&redsync.ErrTaken{Nodes: []int{0, 1, 2}}, lockimpl.ErrNotAcquired)
	if !errors.Is(err, lockimpl.ErrNotAcquired) || lockimpl.Classify(err) != histories.Fail || !strings.Contains(err.Error(), "lock already taken, locked nodes: [0 1 2]") {
		t.Errorf("classify(ErrTaken) = %v", err)
	}
	if err := l.classify(netErr, lockimpl.ErrNotHeld); lockimpl.Classify(err) != histories.Unknown || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("classify(RedisError) = %v", err)
	}
	if err := l.classify(nil, lockimpl.ErrNotHeld); lockimpl.Classify(err) != histories.Unknown {
		t.Errorf("classify(nil) = %v, want unknown", err)
	}
}

// multiErr is joined as hashicorp/go-multierror joins (redsync before v4.17.0): its
// leaves by WrappedErrors, a chain by Unwrap.
type multiErr []error

func (m multiErr) Error() string          { return errors.Join(m...).Error() }
func (m multiErr) WrappedErrors() []error { return m }
func (m multiErr) Unwrap() error {
	if len(m) == 0 {
		return nil
	}
	return m[0]
}
