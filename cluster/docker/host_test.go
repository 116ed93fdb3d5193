package docker

import "testing"

// DOCKER_HOST decides whether the engine shares this host (bind mounts, loopback ports)
// and where clients dial the published ports.
func TestEngineHost(t *testing.T) {
	for _, c := range []struct {
		in    string
		local bool
		host  string
		bad   bool
	}{
		{"", true, "127.0.0.1", false},
		{"unix:///var/run/docker.sock", true, "127.0.0.1", false},
		{"tcp://127.0.0.1:2375", true, "127.0.0.1", false},
		{"tcp://bighost.example:2376", false, "bighost.example", false},
		{"ssh://ci@10.1.2.3", false, "10.1.2.3", false},
		{"tcp://", false, "", true},
		{"::nonsense", false, "", true},
	} {
		local, host, err := engineHost(c.in)
		if (err != nil) != c.bad || local != c.local || host != c.host {
			t.Errorf("engineHost(%q) = %v, %q, %v; want %v, %q, error %v", c.in, local, host, err, c.local, c.host, c.bad)
		}
	}
}
