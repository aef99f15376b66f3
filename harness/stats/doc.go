// Package stats summarises benchmark samples the way distbench reports them:
// medians, tail percentiles and a distribution-free confidence interval of the
// median, never a mean alone; and it computes bandwidth with nccl-tests'
// conventions so that numbers can be set beside nccl-tests' own.
//
// # Usage
//
// The harness times every iteration (the slowest rank's time, in µs) and
// hands the samples over once the point is done:
//
//	rec := results.Record{Kind: results.KindCollective, Collective: "allreduce",
//		NP: 4, Bytes: 16 << 20, ...}
//	if err := stats.Fill(&rec, samplesUs); err != nil { ... } // times, samples, algbw, busbw
//
// or, piece by piece:
//
//	s := stats.Summarize(samplesUs)   // s.Median, s.P95, s.CILo, s.CIHi, ...
//	algbw := stats.AlgBW(bytes, s.Median/1e6)
//	busbw, err := stats.BusBW("allreduce", np, algbw)
//
// # Why these statistics
//
// Benchmark timings are not normal: they are skewed to the right by
// scheduling, interrupts and the network. The median is robust to that, and
// its confidence interval is taken from order statistics (the number of
// samples below the true median is Binomial(n, ½)), which assumes nothing
// about the distribution. This is what golang.org/x/perf/benchmath (and so
// benchstat) does; [Summarize] picks the same order statistics, so the
// intervals distbench writes agree with what benchstat prints for the same
// samples (to within one order statistic; see [MedianCI]). With fewer than 6 samples no 95% interval exists and the bounds are
// infinite.
//
// # Bandwidth
//
// As in nccl-tests (doc/PERFORMANCE.md there): algbw = S / t, with S the
// buffer size in bytes and GB = 1e9 bytes; busbw = algbw × factor, where the
// factor turns the algorithm bandwidth into the bandwidth each link must
// carry, so that numbers are comparable across world sizes and with the
// hardware's peak: 2(n−1)/n for allreduce, (n−1)/n for allgather,
// reducescatter and alltoall, 1 for broadcast, reduce, sendrecv, gather and
// scatter.
package stats
