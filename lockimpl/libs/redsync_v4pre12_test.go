//go:build redsync_v4pre12 && !redsync_v4pre7

package libs

import (
	"errors"
	"testing"

	"github.com/go-redsync/redsync/v4"
)

// v4.7.0 – v4.11.x: typed errors, values in v4.7.x and pointers from v4.8.0, joined by
// go-multierror (multiErr in redsync_current_test.go's shape).
func TestRedsyncPre12Classification(t *testing.T) {
	netErr := redsync.RedisError{Node: 2, Err: errors.New("i/o timeout")}
	for _, c := range []struct {
		what   string
		err    error
		refuse bool
	}{
		{"quorum taken (v4.7.x, a value)", redsync.ErrTaken{Nodes: []int{0, 1}}, true},
		{"quorum taken (v4.8.0 on, a pointer)", &redsync.ErrTaken{Nodes: []int{0, 1}}, true},
		{"two of three refused, values", pre12Multi{redsync.ErrNodeTaken{Node: 0}, redsync.ErrNodeTaken{Node: 1}}, true},
		{"two of four refused, pointers", pre12Multi{&redsync.ErrNodeTaken{Node: 0}, &redsync.ErrNodeTaken{Node: 3}}, false},
		{"one refused, one unreachable", pre12Multi{&redsync.ErrNodeTaken{Node: 0}, netErr}, false},
		{"ErrFailed", redsync.ErrFailed, false},
		{"ErrExtendFailed", redsync.ErrExtendFailed, false},
		{"no error", nil, false},
	} {
		nodes := 3
		if c.what == "two of four refused, pointers" {
			nodes = 5 // three may be ours: a quorum
		}
		if got := redsyncRefused(c.err, nodes, nodes/2+1); got != c.refuse {
			t.Errorf("%s (%v): refused %v, want %v", c.what, c.err, got, c.refuse)
		}
	}
}

// pre12Multi is joined as hashicorp/go-multierror joins.
type pre12Multi []error

func (m pre12Multi) Error() string          { return errors.Join(m...).Error() }
func (m pre12Multi) WrappedErrors() []error { return m }
func (m pre12Multi) Unwrap() error          { return m[0] }
