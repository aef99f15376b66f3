// Package ring is the ring strategy: the bandwidth-optimal allreduce of
// Patarasuk and Yuan, as Horovod, Gloo and NCCL's ring use it.
//
// Allreduce is a reduce-scatter followed by an all-gather, 2(n−1) steps in
// which every rank sends 1/n of the buffer to its right neighbour and
// receives 1/n from its left, so each rank moves 2(n−1)/n of the buffer,
// the lower bound. Each segment is cut into chunks ("chunk" option) that
// flow through the ring independently: a rank forwards chunk c of step g as
// soon as it has reduced chunk c of step g−1, so sending, receiving and
// reducing overlap instead of alternating.
//
// Small allreduces pass whole buffers instead, as Gloo's allreduce_ring does:
// n−1 steps, after which every rank holds every rank's buffer and reduces
// them itself, in rank order, so that all end with the same bits. Half the
// steps, each a round of wake-ups, for bytes that cost little.
//
// Broadcast is a pipelined chain from the root, reduce a pipelined chain into
// it; all-gather and reduce-scatter are the two halves of the allreduce ring.
// Gather, scatter, all-to-all and barrier use core's plain algorithms.
//
// Options:
//
//	algo    allreduce algorithm: rsag (segmented), whole (whole buffers),
//	        auto (default): whole up to 32 KiB at np ≤ 4 and 16 KiB above,
//	        or hier: reduce-scatter within each host, allreduce of the
//	        shards across hosts by inter, all-gather within each host
//	        (core.Hierarchy, docs/design/hier.md); with no hosts to tell apart
//	        (one host, one rank per host, a transport that does not say)
//	        it is inter over all the ranks
//	inter   hier's algorithm across hosts: rsag, whole or auto (default)
//	chunk   pipeline chunk size (e.g. 256KiB, 1MiB); default a quarter of a
//	        segment, from 64 KiB to 1 MiB (to 256 KiB for allgather and
//	        reduce-scatter above np 2)
package ring
