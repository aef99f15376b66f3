// Package job describes one launch of distbench's workers: a [Spec] (a
// strategy, a world size and the points to measure, or a training run, or a
// soak) and its [Point]s, and checks one before any process starts
// ([Spec.Validate], [Spec.CheckMemory]).
//
// It is the vocabulary shared by the plan (harness/plan), which turns YAML
// into specs, the launcher (harness/launch), which hands a spec to worker
// processes, and the harness, which measures it; it imports none of them.
package job
