// Package results defines distbench's result records and their on-disk form:
// results.jsonl, one JSON object per line, appended and flushed record by
// record so that an interrupted run keeps everything it measured.
//
// The first line of a run's file is an "env" record describing where it ran;
// every later record is a measured point ("collective"), a training step or
// epoch ("train_step", "train_epoch"), or a point that failed (Error set).
// Schema is bumped on any incompatible change; readers refuse newer schemas.
package results
