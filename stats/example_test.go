package stats_test

import (
	"fmt"

	"github.com/distbench/distbench/stats"
)

func ExampleSummarize() {
	samplesUs := []float64{1012, 998, 1005, 1110, 1001, 995, 1003, 1007, 999, 1002}
	s := stats.Summarize(samplesUs)
	fmt.Printf("median %.1f µs, 95%% CI [%.0f, %.0f], p95 %.1f µs\n", s.Median, s.CILo, s.CIHi, s.P95)
	// Output: median 1002.5 µs, 95% CI [998, 1012], p95 1065.9 µs
}

func ExampleBusBW() {
	// 16 MiB allreduced over 4 ranks in 2 ms.
	algbw := stats.AlgBW(16<<20, 0.002)
	busbw, _ := stats.BusBW("allreduce", 4, algbw)
	fmt.Printf("algbw %.2f GB/s, busbw %.2f GB/s\n", algbw, busbw)
	// Output: algbw 8.39 GB/s, busbw 12.58 GB/s
}
