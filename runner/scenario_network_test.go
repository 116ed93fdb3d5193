package runner

import (
	"testing"

	lin "github.com/locklab/locklab/linearizability"
)

// Scenarios whose fault is in the network (Cluster.Net, a netproxy.Net). Each is scripted
// with triggers, so the fault strikes at the same step of the same client every run, and
// built on margins of a hundred milliseconds or more (see each scenario's description for
// its timeline).

func TestSlowWrite(t *testing.T) {
	runImplCases(t, "slow-write", []implCase{
		// The write lands after client 1's update: lost. Client 0 believes until it calls
		// release, after its slow write returned, long after client 1 took the lock.
		{"setnx", "off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.NA, lin.L1: lin.OK}},
		{"fenced", "off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.OK, lin.L1: lin.OK}},
		// The store refuses the late write's old fence; the beliefs still overlap.
		{"fenced", "full", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
		{"fenced", "writes", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
	})
}

func TestSlowGrant(t *testing.T) {
	runImplCases(t, "slow-grant", []implCase{
		// The late grant makes client 0 believe while client 1 holds the lock, and its
		// write overwrites client 1's update.
		{"setnx", "off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.NA, lin.L1: lin.OK}},
		{"fenced", "off", verdicts{lin.P1: lin.Illegal, lin.P2: lin.Illegal, lin.P3: lin.OK, lin.L1: lin.OK}},
		// Client 1's read raised the store's fence past client 0's: client 0's read is
		// refused, and it gives up without writing.
		{"fenced", "full", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
		// Only writes carry the fence: client 0 reads, but its write comes after client
		// 1's, with a smaller fence, and is refused.
		{"fenced", "writes", verdicts{lin.P1: lin.Illegal, lin.P2: lin.OK, lin.P3: lin.OK, lin.L1: lin.OK}},
	})
}
