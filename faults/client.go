package faults

// clientKinds are the faults that strike inside a client.
func clientKinds() []KindInfo {
	return []KindInfo{
		{
			Name:        "client-pause",
			Description: "the target client stalls for the duration when it next reaches the point (a GC pause); default point before-write, after its validity check. mode process stops the world: the client's whole process (a subprocess client), renewal threads included. until client:N@point ends the stall when that client reaches that point (the duration bounds it): a pause that lasts exactly until another client was, say, granted the lock",
			Targets:     "client:N or any",
			Points:      true,
			build:       func(s Spec) (Fault, error) { return newClientGate(s, false) },
			ownWindow:   true,
		},
		{
			Name:        "client-crash",
			Description: "the target client stops for good when it next reaches the point, holding whatever it holds (points include a lock implementation's steps, e.g. acquire:after-setnx)",
			Targets:     "client:N or any",
			Points:      true,
			build:       func(s Spec) (Fault, error) { return newClientGate(s, true) },
			ownWindow:   true,
		},
		{
			Name:        "client-clock",
			Description: "the target client's clock (or every client's, with any) jumps by offset and runs at rate until healed; implementations that compute validity from local time see it",
			Targets:     "client:N or any",
			build:       func(s Spec) (Fault, error) { return &clientClock{spec: s}, nil },
		},
	}
}
