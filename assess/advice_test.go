package assess

import (
	"testing"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/locks"
)

// TestAdviceForEveryFinding: every property of every catalog scenario, for every family,
// gets a line of advice, and every conformance check a fix.
func TestAdviceForEveryFinding(t *testing.T) {
	reg := locks.All()
	scenarios := scenarioPlans(t, reg, "pause-past-ttl", "clock-jump", "failover-loss", "ttl-too-short", "slow-grant", "no-expiry", "baseline")
	for _, p := range scenarios {
		for _, ref := range References() {
			for _, prop := range lin.AllProperties() {
				if advise(prop, ref.Family, p) == "" {
					t.Errorf("no advice for %s on %s, %v", prop, p.Name, ref.Family)
				}
			}
		}
	}
	for _, c := range conformances() {
		if conformAdvice(c.name) == "" {
			t.Errorf("no advice for conformance check %s", c.name)
		}
	}
}
