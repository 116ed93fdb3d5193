package lockimpl_test

import (
	"testing"

	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/locktest"
)

// get is this package's implementation called name.
func get(t testing.TB, name string) lockimpl.Impl {
	t.Helper()
	return locktest.Impl(t, lockimpl.Impls(), name)
}

// locker builds this package's implementation name against addr, closed at cleanup.
func locker(t testing.TB, name, addr string, step lockimpl.StepFunc) lockimpl.Locker {
	t.Helper()
	return locktest.Locker(t, get(t, name), addr, step)
}
