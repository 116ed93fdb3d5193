package lockimpl_test

import (
	"testing"

	"github.com/locklab/locklab/lockimpl/locktest"
)

// TestConformance runs the shared conformance suite on this package's correct
// single-instance locks.
func TestConformance(t *testing.T) {
	locktest.Conformance(t, get(t, "setnx"), get(t, "fenced"))
}
