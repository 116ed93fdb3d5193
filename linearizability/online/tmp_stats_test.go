package online_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/linearizability/online"
)

func TestTmpStats(t *testing.T) {
	counts := map[string]int{}
	wins := 0
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		h := simulate(rt)
		res, st, _ := online.Replay(h, 1, online.Options{})
		n++
		wins += int(st.Windows)
		for _, p := range res.Properties {
			counts[string(p.Property)+" "+string(p.Verdict)]++
		}
		_ = linearizability.OK
	})
	t.Logf("%d histories, %d windows: %v", n, wins, counts)
}
