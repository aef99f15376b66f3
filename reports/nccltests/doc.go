// Package nccltests prints distbench's results in the formats nccl-tests
// (2.19.6) users and their scripts read: the table `all_reduce_perf`
// prints, column for column (getFloatStr's widths, out-of-place then
// in-place, "#wrong", the "Avg bus bandwidth" footer and
// NCCL_TESTS_MIN_BW's check), and its -J JSON document (version 3), with
// distbench's additions kept to comment lines and a "distbench" object.
//
// The figures follow nccl-tests' definitions where the table copies its
// header: algbw and busbw as stats defines them, the count per rank's
// buffer, and, under -a, each rank's mean iteration time combined over
// ranks as nccl-tests' -a 0..3. The per-iteration columns (-I) are
// stats.SummarizeIterations. What the time column holds by default is
// Config.Average's, and TimeDefinition says it in words in the preamble.
package nccltests
