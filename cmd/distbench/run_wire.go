package main

import "fmt"

// wireTable prints, after the nccl-tests table, what each size really
// moved: busbw's bytes are a formula that assumes a ring's traffic, and a
// tree's or a parameter server's busiest rank moves more. It is a second
// table, every line a comment, rather than columns added to the rows, so
// that the rows stay what scripts written for nccl-tests parse (by field
// position, or by a pattern anchored at the line's end) and those scripts,
// which skip '#' lines, see no change.
func (t *table) wireTable() {
	if len(t.wire) == 0 {
		return
	}
	fmt.Fprintf(t.w, "#\n# bytes on the wire per operation, measured (payload bytes; one row per size, from its first record):\n")
	fmt.Fprintf(t.w, "#   busbw: what busbw assumes each rank sends, size × busbw/algbw\n")
	fmt.Fprintf(t.w, "#   sent mean, sent max: what the ranks (and dedicated servers) sent, on average and the most\n")
	fmt.Fprintf(t.w, "#   busiest: the most that any rank or server sent or received, one direction\n")
	fmt.Fprintf(t.w, "# %10s %12s %12s %12s %12s\n", "size", "busbw", "sent mean", "sent max", "busiest")
	fmt.Fprintf(t.w, "# %10s %12s %12s %12s %12s\n", "(B)", "(B/rank)", "(B/rank)", "(B)", "(B)")
	for _, r := range t.wire {
		formula := "-"
		if r.AlgBWGBs > 0 {
			formula = fmt.Sprintf("%.0f", float64(r.Bytes)*r.BusBWGBs/r.AlgBWGBs)
		}
		sum, n := 0.0, 0
		for _, v := range [][]float64{r.WireSentBytes, r.WireServerSentBytes} {
			for _, b := range v {
				sum += b
				n++
			}
		}
		fmt.Fprintf(t.w, "# %10d %12s %12.0f %12.0f %12.0f\n", r.Bytes, formula, sum/float64(n), r.WireBusiestSent(), r.WireBusiestBytes)
	}
}
