package histories

import "testing"

func TestFaultWindowClient(t *testing.T) {
	for target, want := range map[string]int{"client 0": 0, "client 12": 12, "client:3": 3, "client:1->lock-0": 1, "client:x": -1, "redis 0": -1, "client x": -1, "client -1": -1} {
		n, ok := FaultWindow{Kind: "net-latency", Target: target}.Client()
		if (ok && n != want) || (!ok && want != -1) {
			t.Errorf("Client of target %q = %d, %v; want %d", target, n, ok, want)
		}
	}
}
