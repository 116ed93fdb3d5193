package matrix_test

import (
	"context"
	"strings"
	"testing"
	"time"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/matrix"
)

// TestEtcdRow runs the etcd row of the matrix: etcd's lock out of process on a 3-member
// cluster under every catalog scenario that applies, and in process under the thread
// pause. With fencing full the data and the fences are safe everywhere; a stop-the-world
// pause past the lease still breaks mutual exclusion (Jepsen's etcd 3.4.3 finding), and
// the holder's release of the lost lease is answered ok (P6); a
// thread pause does not (the session renews the lease); a member's crash and restart
// breaks no safety property, nor does cutting the leader off; and where a Redis fault
// has no etcd counterpart the cell says why.
func TestEtcdRow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	o := matrix.Options{
		Impls: []string{"etcd-process"}, Fencings: []string{"off", "full"},
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
				t.Errorf("%s × etcd-process × full: %s %+v; want ok in every run", c.Scenario, p, n)
			}
		}
	}
	if planned < 10 {
		t.Errorf("only %d cells of etcd-process with fencing full ran", planned)
	}
	cell := func(scenario, fencing string) matrix.Cell {
		t.Helper()
		c, ok := res.Cell(scenario, "etcd-process", fencing)
		if !ok {
			t.Fatalf("no cell %s × etcd-process × %s", scenario, fencing)
		}
		return c
	}
	// P6 may break too: the holder's Unlock after its lease expired in the pause deletes
	// its own key by name, which the server had deleted already, and answers nil (the
	// library cannot tell its caller that the lease was lost: lockimpl/consensus/etcd.go's
	// table), unless its session noticed the lost lease first.
	for fencing, want := range map[string]string{"off": "P1 1/1 · P2 1/1", "full": "P1 1/1"} {
		if got := strings.TrimSuffix(cell("stop-the-world", fencing).Summary(), " · P6 1/1"); got != want {
			t.Errorf("stop-the-world × etcd-process × %s shows %q, want %q", fencing, got, want)
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
					t.Errorf("%s × etcd-process × %s: %s %+v; want ok (%s)", scenario, fencing, p, n, why)
				}
			}
		}
		for scenario, why := range map[string]string{"clock-jump": "libfaketime cannot move it", "failover-loss": "needs topology etcd"} {
			if c := cell(scenario, fencing); c.Status != matrix.CellNA || !strings.Contains(c.Reason, why) {
				t.Errorf("%s × etcd-process × %s: %s %q; want n/a saying %q", scenario, fencing, c.Status, c.Reason, why)
			}
		}
	}

	// In process, the session renews the lease through a pause of the holder's steps.
	o = matrix.Options{
		Impls: []string{"etcd"}, Scenarios: []string{"pause-past-ttl"}, Fencings: []string{"off"},
		Repeat: 1, Parallel: 1, Out: t.TempDir(), Command: "locklab matrix --test",
	}
	res, err = matrix.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	settle(t, ctx, o, &res)
	if c, _ := res.Cell("pause-past-ttl", "etcd", "off"); c.Summary() != "✓" {
		t.Errorf("pause-past-ttl × etcd × off shows %q, want ✓", c.Summary())
	}
}
