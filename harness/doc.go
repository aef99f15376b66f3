// Package harness measures collectives the way nccl-tests does, through the
// collective API only, and runs sweeps of such measurements.
//
// A job.Spec describes one launch: a strategy, a world size and a list of
// points (collective × size × dtype × op × in/out-of-place). The launch
// package starts the world as local processes of the distbench binary over
// loopback TCP (or the caller runs under mpirun, srun or a Kubernetes Job),
// and each process calls [WorkerMain], which joins the job and calls
// [RunRank]. Every rank runs [Measure]: warm-up, then timed iterations, each
// rank timing its own; rank 0 gathers the per-iteration times, keeps the
// slowest rank's for each iteration, and emits one results.Record per point
// with its statistics, algbw and busbw (nccl-tests' definitions) and, with
// Check, the exact count of wrong elements. [Soak] is the long-running
// check of the same world.
//
// A plan (package plan) expands into groups, one launch each, and [Sweep]
// runs them into a run directory, showing its way through a [Progress] the
// caller provides (the CLI draws bars or lines). With Plan.Rounds a sweep
// measures every point in several rounds, round 1 of every group, then
// round 2, and so on, each round a launch of its own with its share of the
// point's iterations, so that a burst of load from other work on the
// machine hits one round of a point rather than all of its samples; every
// round is recorded on its own, and --resume measures only the rounds not
// yet recorded.
package harness
