// Package locktest is what the tests of the lock implementations share: the
// conformance suite every correct lock on one primary passes (Conformance), a Redis
// server per test, lockers that are closed at cleanup, and polling helpers. Its
// functions take the implementation under test as a lockimpl.Impl, so that each
// package tests its own implementations.
//
// It is for tests only. It imports lockimpl and cluster/clustertest; it must not
// import lockimpl/libs, lockimpl/subprocess or locks, whose tests use it.
package locktest
