package campaign

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// A long run's drawn faults: one per slot, each at a time (no trigger), ending with its
// two TTLs (and a failover's promotion) inside its slot, of the kinds asked for, the same
// for the same seed.
func TestSchedule(t *testing.T) {
	reg := locks.All()
	for _, c := range []struct {
		topology string
		kinds    []string
	}{{"single", nil}, {"replicated", nil}, {"replicated", []string{"failover", "server-pause"}}} {
		p := plan.Default()
		p.Impl, p.Topology, p.Duration, p.TTL = "fenced", c.topology, plan.D(20*time.Minute), plan.D(300*time.Millisecond)
		const every = 20 * time.Second
		got, err := Schedule(reg, p, c.kinds, every, 7)
		if err != nil {
			t.Fatalf("%s %v: %v", c.topology, c.kinds, err)
		}
		if len(got.Faults) != 60 {
			t.Fatalf("%s: %d faults, want 60", c.topology, len(got.Faults))
		}
		seen := map[string]bool{}
		for i, f := range got.Faults {
			seen[f.Kind] = true
			start := time.Duration(i) * every
			end := f.At.D() + max(f.Duration.D()+2*p.TTL.D(), promotion(f))
			if f.Trigger != "" || f.At.D() < start || end > start+every {
				t.Errorf("%s: fault %d (%s) at %s, ends %s, trigger %q: want it within [%s, %s], no trigger", c.topology, i, f.Kind, f.At.D(), end, f.Trigger, start, start+every)
			}
			if c.kinds != nil && f.Kind != c.kinds[0] && f.Kind != c.kinds[1] {
				t.Errorf("%s: fault %d of kind %s, want one of %v", c.topology, i, f.Kind, c.kinds)
			}
		}
		if len(seen) < 2 {
			t.Errorf("%s: 60 faults of the kinds %v only", c.topology, seen)
		}
		again, _ := Schedule(reg, p, c.kinds, every, 7)
		other, _ := Schedule(reg, p, c.kinds, every, 8)
		if !reflect.DeepEqual(again.Faults, got.Faults) || reflect.DeepEqual(other.Faults, got.Faults) {
			t.Errorf("%s: the same seed drew other faults, or another seed the same", c.topology)
		}
	}
}

func TestScheduleRefuses(t *testing.T) {
	reg := locks.All()
	p := plan.Default()
	p.Impl, p.Duration = "fenced", plan.D(time.Minute)
	for _, c := range []struct {
		kinds []string
		every time.Duration
		want  string
	}{
		{nil, 2 * time.Minute, "longer than the run"},
		{nil, 0, "want a positive interval"},
		{nil, time.Millisecond, "more than 10000"},
		{[]string{"failover"}, 10 * time.Second, "failover"},
		{[]string{"nonsense"}, 10 * time.Second, `unknown fault kind "nonsense"`},
	} {
		// The plan's own faults are replaced, so one past the end of the run is no error.
		p.Faults = []plan.FaultSpec{{Kind: "server-pause", Target: "lock-0", At: plan.D(2 * time.Minute), Duration: plan.D(time.Second)}}
		_, err := Schedule(reg, p, c.kinds, c.every, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v every %s: error %v, want one containing %q", c.kinds, c.every, err, c.want)
		}
	}
}
