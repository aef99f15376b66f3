// Package shapes holds the pure shapes of the strategies' schedules: the
// trees the tree strategy runs its collectives down, the chunk sizes the
// ring and the tree pipeline by, and the buffer sizes at which algo=auto
// switches algorithm. It computes and imports nothing else.
//
// The strategies (strategies/ring, strategies/tree) run these shapes and
// the cost model (package costmodel) predicts them, both from this one
// package, so that the model predicts the schedules the code really runs
// without importing a strategy (internal/archtest holds it to that).
package shapes
