// Package results defines distbench's result records and their on-disk form:
// results.jsonl, one JSON object per line, appended and flushed record by
// record so that an interrupted run keeps everything it measured.
//
// The first line of a run's file is an "env" record describing where it ran;
// every later record is a measured point ("collective"), a training step or
// epoch ("train_step", "train_epoch"), or a point that failed (Error set).
// Schema is bumped on any incompatible change; readers refuse newer schemas.
//
// A sweep may measure each point in several rounds, interleaved across the
// sweep so that a burst of load on the machine hits one round rather than
// the whole point; each round is its own record (Record.Round of
// Record.Rounds, absent in older files: round 1 of 1), written as it is
// measured. [MergeRounds] makes one record of a point's rounds, pooling
// their samples, for reports and compare; [DoneRounds] tells a resumed sweep
// which rounds it need not measure again.
//
// # Usage
//
//	env := results.CaptureEnv()
//	env.Planned = planIDs // lets a report name the points an interrupted run lacks
//	w, err := results.NewWriter(runDir, env) // writes the env record
//	if err != nil { ... }
//	defer w.Close()
//	for _, pt := range plan {
//		if done[pt.ID] { continue } // done, _ := results.Done(runDir) for --resume
//		rec := measure(pt)          // results.Fill(&rec, samplesUs) fills the numbers
//		if err := w.Write(&rec); err != nil { ... }
//	}
//	return w.Finish() // marks the run complete; Close alone means "interrupted"
//
//	run, err := results.ReadRun(runDir) // run.Records, run.Failed(), run.Missing()
//	merged := results.MergeRounds(run.Records, results.Fill) // one record a point, its rounds pooled
//
// # Files
//
// A Writer syncs every record to disk before Write returns. A crash can
// leave only a torn last line, which readers drop (Run.Truncated) and the
// next Writer on the directory (a resumed run) cuts off before appending; a
// last record that is whole but lost its newline is read, and kept, by both. A
// resumed session writes its own env record; Writer.Finish appends one more
// with FinishedAt set, which is how a reader tells a finished run from an
// interrupted one.
//
// Beside results.jsonl the Writer keeps results.bench, the same samples in
// the Go benchmark format (one line per iteration, ns/op plus busbw-B/s and
// algbw-B/s, named like AllReduce/strategy=ring/np=4/bytes=16MiB/dtype=float32),
// so that two runs compare with benchstat as Go benchmarks do:
//
//	benchstat old/results.bench new/results.bench
package results
