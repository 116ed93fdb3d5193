package workload

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/clustertest"
)

// TestStoreFencingRules drives the store's Lua register through each mode's rule
// (docs/design.md, P2) on a real Redis.
func TestStoreFencingRules(t *testing.T) {
	node := clustertest.Node(t, cluster.NodeConfig{Name: "store"})
	ctx := context.Background()
	type step struct {
		write        bool
		fence, value int64
		wantValue    int64 // reads: value returned
		rejected     bool
	}
	cases := map[Fencing][]step{
		FencingOff: {
			{write: true, fence: 5, value: 1},
			{write: true, fence: 1, value: 2}, // off: a stale fence is still accepted
			{fence: 0, wantValue: 2},
		},
		FencingWrites: {
			{write: true, fence: 5, value: 1},
			{write: true, fence: 4, value: 2, rejected: true},
			{write: true, fence: 5, value: 3}, // equal fence: accepted
			{fence: 1, wantValue: 3},          // reads are not fenced in this mode
			{write: true, fence: 6, value: 4},
			{fence: 0, wantValue: 4},
		},
		FencingFull: {
			{fence: 3, wantValue: 0},                          // a read raises the fence
			{write: true, fence: 2, value: 1, rejected: true}, // so an older writer is refused
			{fence: 2, rejected: true},                        // and an older reader too
			{write: true, fence: 3, value: 7},
			{fence: 4, wantValue: 7},
		},
	}
	for mode, steps := range cases {
		t.Run(string(mode), func(t *testing.T) {
			s := NewStore(node.Addr(), mode, time.Second)
			defer s.Close()
			key := "rules-" + string(mode)
			for i, st := range steps {
				var err error
				var got int64
				if st.write {
					err = s.Write(ctx, key, st.fence, st.value)
				} else {
					got, err = s.Read(ctx, key, st.fence)
				}
				if rejected := errors.Is(err, ErrRejected); rejected != st.rejected || (err != nil && !rejected) {
					t.Fatalf("step %d %+v: err %v, want rejected=%v", i, st, err, st.rejected)
				}
				if !st.write && !st.rejected && got != st.wantValue {
					t.Fatalf("step %d: read %d, want %d", i, got, st.wantValue)
				}
			}
		})
	}
}

func TestParseFencing(t *testing.T) {
	for _, s := range []string{"off", "writes", "full"} {
		if f, err := ParseFencing(s); err != nil || string(f) != s {
			t.Errorf("ParseFencing(%q) = %q, %v", s, f, err)
		}
	}
	if _, err := ParseFencing("on"); err == nil {
		t.Error(`ParseFencing("on") succeeded`)
	}
}
