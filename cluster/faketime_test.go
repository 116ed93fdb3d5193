package cluster

import (
	"fmt"
	"strings"
	"testing"
)

func TestOptionsCheckClock(t *testing.T) {
	for _, ok := range []string{"", ClockReal, ClockFaketime} {
		if err := (Options{ServerClock: ok}).checkClock(); err != nil {
			t.Errorf("ServerClock %q: %v", ok, err)
		}
	}
	if err := (Options{ServerClock: "sundial"}).checkClock(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", "sundial")) {
		t.Errorf("ServerClock sundial: %v, want an error naming it", err)
	}
	cfg := Options{ServerClock: ClockFaketime, Persistence: PersistAOFAlways}.lockNode("lock-3")
	if !cfg.Faketime || cfg.Name != "lock-3" || cfg.Persistence != PersistAOFAlways {
		t.Errorf("lockNode = %+v", cfg)
	}
}
