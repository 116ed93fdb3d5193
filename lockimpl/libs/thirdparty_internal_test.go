package libs

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

// The versions the adapters' tables describe are the versions go.mod requires.
func TestThirdPartyVersions(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for mod, v := range map[string]string{
		"github.com/go-redsync/redsync/v4": redsyncVersion,
		"github.com/bsm/redislock":         bsmRedislockVersion,
		"github.com/redis/rueidis":         rueidisVersion,
	} {
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod+" "+v) + `\s*$`).Match(data) {
			t.Errorf("go.mod does not require %s %s, the version the adapter documents", mod, v)
		}
	}
}

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
