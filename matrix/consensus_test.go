package matrix_test

import (
	"context"
	"strings"
	"testing"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/matrix"
)

// consensusRow is what the matrix row of one consensus lock must show.
type consensusRow struct {
	impl, process string // in locklab's process, and out of it
	// clockWhy is what the n/a of clock-jump says: why no clock fault reaches a member.
	clockWhy string
	// lateRelease says whether P6 may break after a stop-the-world pause: etcd's Unlock
	// deletes its key by name and answers ok (lockimpl/consensus/etcd.go's table);
	// ZooKeeper's delete of a znode gone with its session is refused.
	lateRelease bool
}

// TestConsensusRows runs the row of each consensus lock (etcd's, ZooKeeper's): the lock
// out of process on a 3-member cluster under every catalog scenario that applies, and in
// process under the thread pause. With fencing full the data and the fences are safe
// everywhere; a stop-the-world pause past the lease still breaks mutual exclusion
// (Jepsen's etcd 3.4.3 finding), as does a holder cut off from the service
// (partitioned-holder: its careless client learns late); a thread pause does not (the
// session renews the lease); a member's crash and restart breaks no safety property, nor
// does cutting the leader off; and where a Redis fault has no counterpart the cell says
// why.
func TestConsensusRows(t *testing.T) {
	for _, row := range []consensusRow{
		{impl: "etcd", process: "etcd-process", clockWhy: "libfaketime cannot move it", lateRelease: true},
		{impl: "zookeeper", process: "zookeeper-process", clockWhy: "libfaketime leaves alone"},
	} {
		t.Run(row.impl, func(t *testing.T) { consensusRowHolds(t, row) })
	}
}

func consensusRowHolds(t *testing.T, row consensusRow) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	o := matrix.Options{
		Impls: []string{row.process}, Fencings: []string{"off", "full"},
		Repeat: 1, Parallel: 2, Out: t.TempDir(), Command: "locklab matrix --test",
	}
	res, err := matrix.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	settle(t, ctx, o, &res)
	if res.Meta.Errors != 0 {
		t.Errorf("%d runs failed to run", res.Meta.Errors)
	}
	planned := 0
	for _, c := range res.Cells {
		if c.Fencing != "full" || c.Status == matrix.CellNA || c.Status == matrix.CellNoFencing {
			continue
		}
		planned++
		for _, p := range []lin.Property{lin.P2, lin.P3} {
			if n := c.Counts[p]; n.Illegal != 0 || n.OK != len(c.Runs) {
				t.Errorf("%s × %s × full: %s %+v; want ok in every run", c.Scenario, row.process, p, n)
			}
		}
	}
	if planned < 10 {
		t.Errorf("only %d cells of %s with fencing full ran", planned, row.process)
	}
	cell := func(scenario, fencing string) matrix.Cell {
		t.Helper()
		c, ok := res.Cell(scenario, row.process, fencing)
		if !ok {
			t.Fatalf("no cell %s × %s × %s", scenario, row.process, fencing)
		}
		return c
	}
	for _, scenario := range []string{"stop-the-world", "partitioned-holder"} {
		for fencing, want := range map[string]string{"off": "P1 1/1 · P2 1/1", "full": "P1 1/1"} {
			got := cell(scenario, fencing).Summary()
			if row.lateRelease {
				// The holder's release of the lost lease may be answered ok (P6), unless its
				// session noticed the loss first.
				got = strings.TrimSuffix(got, " · P6 1/1")
			}
			if got != want {
				t.Errorf("%s × %s × %s shows %q, want %q", scenario, row.process, fencing, got, want)
			}
		}
	}
	for _, fencing := range []string{"off", "full"} {
		// Safety, not progress: while a leader is replaced no lock is granted, which L1
		// may count against the lock.
		for scenario, why := range map[string]string{
			"restart-amnesia":  "a member fsyncs before it acknowledges",
			"leader-partition": "the others elect a leader, which renews the leases",
		} {
			c := cell(scenario, fencing)
			for _, p := range []lin.Property{lin.P1, lin.P2, lin.P3} {
				if n := c.Counts[p]; n.Illegal != 0 || n.OK != len(c.Runs) {
					t.Errorf("%s × %s × %s: %s %+v; want ok (%s)", scenario, row.process, fencing, p, n, why)
				}
			}
		}
		for scenario, why := range map[string]string{"clock-jump": row.clockWhy, "failover-loss": "needs topology " + row.impl} {
			if c := cell(scenario, fencing); c.Status != matrix.CellNA || !strings.Contains(c.Reason, why) {
				t.Errorf("%s × %s × %s: %s %q; want n/a saying %q", scenario, row.process, fencing, c.Status, c.Reason, why)
			}
		}
	}

	// In process, the session renews the lease through a pause of the holder's steps.
	o = matrix.Options{
		Impls: []string{row.impl}, Scenarios: []string{"pause-past-ttl"}, Fencings: []string{"off"},
		Repeat: 1, Parallel: 1, Out: t.TempDir(), Command: "locklab matrix --test",
	}
	res, err = matrix.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	settle(t, ctx, o, &res)
	if c, _ := res.Cell("pause-past-ttl", row.impl, "off"); c.Summary() != "✓" {
		t.Errorf("pause-past-ttl × %s × off shows %q, want ✓", row.impl, c.Summary())
	}
}
