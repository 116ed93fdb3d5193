// Package detection is the time-to-detection benchmark behind BENCHMARKS.md: for each
// known bug class, class searches from several seeds until the first confirmed
// detection, and per correct implementation the false alarms of fault-free campaigns,
// counted over the (plan, property) pairs the expectation rules claim, and per rule
// family (Families) the false alarms of campaigns with the faults its rules speak of. It
// builds on campaign; report renders its result.
package detection
