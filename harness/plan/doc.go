// Package plan turns a sweep's plan (YAML, or one built from flags) into
// the points to measure, and does nothing else.
//
// [Parse] reads a plan, refusing unknown keys with their line and the keys
// accepted there. [Plan.Expand] validates the whole plan before anything
// starts and expands its blocks (collectives, gradients replayed from a
// model's DDP buckets, training runs, peers) into [Group]s, one launch
// each, of [PlannedPoint]s with their ids and skeleton records. Running
// them is the harness's Sweep; [DefaultYAML] is the plan
// `distbench sweep` runs when given none.
package plan
