// Package assess answers "is this lock safe, and under what?" in one run: the
// black-box conformance checks every lock client can take, the lock's row of the
// catalog beside its family's reference lock, a random campaign for what is left of a
// time budget, and a class for every violation: inherent (every lock of its family
// breaks there), avoidable (the family's reference held on the same plan) or
// unexpected (it contradicts what the lock says it is), each with what to do. The
// families and their reference locks are one table here (References); report renders
// the result for people.
package assess
