// Package plan is one run as data: the Plan and FaultSpec types, their defaults and
// limits, JSON parsing whose errors name file, line and field, and the embedded scenario
// catalog (scenarios/*.json).
//
// Resolve is the one place where a plan's strings are parsed and its names looked up:
// it turns a plan into typed values (topology, persistence, fencing mode, the
// implementation from the registry, every fault built with its trigger parsed), and the
// stages after it take those values, so that a plan that resolved cannot fail to parse
// later. ForImpl moves a plan to a topology an implementation runs on: the one mapping
// the matrix and `locklab run` share.
//
// plan imports the packages whose values it resolves (cluster, faults, lockimpl,
// workload) and must not import runner, campaign, matrix or report: they come later in
// the flow.
package plan
