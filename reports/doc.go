// Package reports turns a run directory's results.jsonl into something to
// read: a markdown report with plots, and a comparison of two runs that can
// fail a CI job.
//
// # Usage
//
//	// After (or during, or after an interrupted) `distbench sweep --out run1`:
//	if err := reports.Generate("run1"); err != nil { ... }
//	// run1/report.md and run1/report.html, plots in run1/plots (PNG and
//	// SVG), every table also in run1/tables/*.csv
//
//	c, err := reports.Compare("baseline", "run1", reports.DefaultCompareOptions())
//	if err != nil { ... }
//	if err := c.WriteReport("run1"); err != nil { ... } // run1/compare.md, run1/plots/compare.png
//	if len(c.Regressions()) > 0 {
//		os.Exit(1)
//	}
//
// # The report
//
// report.md opens with its headline (headline.go): per collective, which
// strategy to use over which sizes and world sizes and by how much, "no
// difference" where the intervals overlap, the parameter server's factor;
// training's time to the target accuracy counted in training steps
// (train_race.go), a tie where the collectives find none; and what the
// cost model predicts at cluster scale, its held-out error beside it
// (cluster.go, the section "Beyond this machine"). report.html is the same
// report, self-contained (html.go): inline SVG plots with hover details,
// sortable tables, a table of contents, nothing fetched.
//
// Then the environment and the run's status: complete, or
// incomplete and why (interrupted, a torn last record, failed, unfinished or
// wrong points, planned points never measured, points an interrupted sweep
// left short of rounds; what this machine cannot run, such as nccl without
// a GPU, is "skipped here", which leaves a run complete). Then the verdict (verdict.go): per collective and
// world size, the fastest strategy over each range of sizes with its
// margins and their 95% bootstrap intervals, ties where the order is inside
// the noise (no margin), the crossovers, the parameter server's factor
// against the fastest other strategy with its interval, each training
// series' time to a target accuracy (train_target.go) and final accuracy,
// and the caveats (failed, missing or left-out points, oversubscription,
// shaped links). Where records carry per-rank times, a per-rank section
// (ranks.go, plot_ranks.go) names the slowest rank and its host in each
// point where results.SlowestRank finds it beyond the noise, with each
// rank's median and mean and a plot of them; with none beyond the noise it
// says so, and why a collective that makes every rank wait hides a slow
// one. A point measured in rounds is
// reported once, its rounds merged (results.MergeRounds). Then, for each collective
// (and dtype, op, in-place, link variant):
//
//   - a winner map: for each world size × message size, the strategy with
//     the lowest median time and its margin over the runner-up, as a table
//     and a heat map (plot_winner.go); where the two confidence intervals
//     overlap the cell is a tie, with no winner or margin, and the tally
//     counts significant wins only;
//   - bus bandwidth against message size, one plot per world size, a line
//     per strategy and peer (plot_busbw.go), and on a shaped link its rate
//     as a dashed reference line (linkref.go);
//   - median time against message size on log-log axes (plot_latency.go);
//     in both plots against size, a workload's points (Record.Workload, a
//     model's DDP bucket sizes) are markers of their own beside the lines,
//     labelled with their size (workload.go): they are not steps of the
//     sweep, and a line through them would zig-zag;
//   - bus bandwidth against world size at fixed sizes (plot_scaling.go);
//
// and, for training runs, loss against step and wall time, test accuracy
// against epoch (plot_convergence.go), the time and steps each series took
// to a target accuracy chosen from the data, at the evaluations it made
// (train_target.go), and the split of a step into compute,
// overlapped and exposed communication (plot_steptime.go). Every plot has a
// table of its numbers beside it, error bars where the records carry a
// confidence interval, and a legend. Failed points are listed with their
// errors at the end. The markdown is deterministic, so it is tested against
// golden files (go test ./reports -update rewrites them).
//
// # Comparing runs
//
// Compare matches points by Record.Point (or, without one, by collective,
// strategy, peer, world size, size, dtype, op, in-place and link) and, for
// each, compares the per-iteration samples: the change of the median with a
// bootstrap confidence interval, and a Mann-Whitney U test from
// golang.org/x/perf/benchmath, as benchstat does. A point regressed when the
// test rejects "no change" at Alpha (0.05) and the median time grew by more
// than Threshold (5%). Both are needed: the test alone flags the few-percent
// drift a machine shows between runs of the same build once there are enough
// samples, and the threshold alone flags noise. The threshold is raised to
// NoiseFactor × the point's own spread. A point measured in rounds (a sweep
// with rounds, results.MergeRounds) is compared over its pooled samples and,
// where both runs have at least MinCompareRounds rounds, its change must
// also hold across rounds: see CompareOptions.NoiseFactor.
//
// # CI recipe
//
// Keep a baseline run directory as a build artifact, made on the machine CI
// measures on, and compare each change against it:
//
//	# once, and again whenever the baseline should move:
//	distbench sweep --out baseline        # upload baseline/ as an artifact
//
//	# on every change:
//	distbench sweep --out new             # the same sweep flags as the baseline
//	distbench compare baseline new        # writes new/compare.md; exits 1 on a regression
//
// Publish new/compare.md and new/report.md with the job. A baseline from
// another machine, Go version or link shaping compares the machines as much
// as the code; compare.md says so when the environments differ. The same
// comparison works with Go's own tools: each run also writes results.bench,
// so `benchstat baseline/results.bench new/results.bench` prints the familiar
// table.
package reports
