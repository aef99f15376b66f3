// Package stats is distbench's one statistics package: it summarises
// benchmark samples the way distbench reports them (medians, tail
// percentiles and a distribution-free confidence interval of the median,
// never a mean alone), computes bandwidth with nccl-tests' conventions so
// that numbers can be set beside nccl-tests' own, and holds what compare
// needs to call a change: robust spreads, the Mann-Whitney U test and a
// bootstrap interval of a ratio of medians. It imports nothing of distbench;
// results.Fill puts a [Summary] into a record.
//
// # Usage
//
// The harness times every iteration (the slowest rank's time, in µs) and
// hands the samples over once the point is done:
//
//	s := stats.Summarize(samplesUs)   // s.Median, s.P95, s.CILo, s.CIHi, ...
//	algbw := stats.AlgBW(bytes, s.Median/1e6)
//	busbw, err := stats.BusBW("allreduce", np, algbw)
//
// and compare asks whether two runs' samples of a point differ:
//
//	p, warnings := stats.MannWhitney(base, new, 0.05)
//	lo, hi := stats.MedianRatioCI(base, new, seed) // of median(new)/median(base) − 1
//	floor := 5 * max(stats.RelativeIQRSpread(base), stats.RelativeIQRSpread(new))
//
// One definition of each statistic: [Median] averages the middle pair, and
// [Quantile] interpolates between order statistics (R's type 7), both as
// [Summarize] reports them.
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
// larger buffer's size in bytes and GB = 1e9 bytes; busbw = algbw × factor,
// where the factor turns the algorithm bandwidth into the bandwidth each link
// must carry, so that numbers are comparable across world sizes and with the
// hardware's peak: 2(n−1)/n for allreduce, (n−1)/n for allgather,
// reducescatter, alltoall, gather and scatter, 1 for broadcast, reduce and
// sendrecv (nccl-tests' *GetBw functions, one per collective in its src/).
package stats
