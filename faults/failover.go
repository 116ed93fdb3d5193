package faults

// failoverKinds are the failover faults (being built; see the fault issue).
func failoverKinds() []KindInfo { return nil }
