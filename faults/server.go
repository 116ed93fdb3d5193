package faults

// serverKinds are the server faults (being built; see the fault issue).
func serverKinds() []KindInfo { return nil }
