// Package harness measures collectives the way nccl-tests does, through the
// collective API only, and launches the processes that do it.
//
// A [Spec] describes one launch: a strategy, a world size and a list of
// points (collective × size × dtype × op × in/out-of-place). [Launch] starts
// the world as local processes of the distbench binary over loopback TCP (or
// the caller runs under mpirun, srun or a Kubernetes Job and each process
// calls [WorkerMain] with env:// rendezvous). Every rank runs [Measure]:
// warm-up, then timed iterations, each rank timing its own; rank 0 gathers
// the per-iteration times, keeps the slowest rank's for each iteration, and
// emits one results.Record per point with its statistics, algbw and busbw
// (nccl-tests' definitions) and, with Check, the exact count of wrong
// elements.
package harness
