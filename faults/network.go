package faults

// networkKinds are the network faults (being built; see the fault issue).
func networkKinds() []KindInfo { return nil }
