// Package ring is the ring strategy: the bandwidth-optimal allreduce of
// Patarasuk and Yuan, as Horovod, Gloo and NCCL's ring use it.
//
// Allreduce is a reduce-scatter followed by an all-gather, 2(n−1) steps in
// which every rank sends 1/n of the buffer to its right neighbour and
// receives 1/n from its left, so each rank moves 2(n−1)/n of the buffer,
// the lower bound. Each segment is cut into chunks ("chunk" option, default
// 1 MiB) that flow through the ring independently: a rank forwards chunk c of
// step g as soon as it has reduced chunk c of step g−1, so sending,
// receiving and reducing overlap instead of alternating.
//
// Broadcast is a pipelined chain from the root, reduce a pipelined chain into
// it; all-gather and reduce-scatter are the two halves of the allreduce ring.
// Gather, scatter, all-to-all and barrier use core's plain algorithms.
//
// Options:
//
//	chunk   pipeline chunk size (e.g. 256KiB, 1MiB); default 1MiB
package ring
