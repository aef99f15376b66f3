package nccltests

import (
	"fmt"
	"maps"
	"slices"

	"github.com/distbench/distbench/results"
)

// wireTable prints, after the nccl-tests table, what each size really
// moved: busbw's bytes are a formula that assumes a ring's traffic, and a
// tree's or a parameter server's busiest rank moves more. It is a second
// table, every line a comment, rather than columns added to the rows, so
// that the rows stay what scripts written for nccl-tests parse (by field
// position, or by a pattern anchored at the line's end) and those scripts,
// which skip '#' lines, see no change.
func (t *Table) wireTable() {
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

// slowRank is a rank that SlowestRank found slower than the median rank
// beyond the noise, in points points, by at most worst in the point named.
type slowRank struct {
	points int
	worst  float64
	where  string
	host   string
	pid    int
}

// noteSlowest remembers r's slowest rank when it is beyond the noise.
func (t *Table) noteSlowest(r *results.Record) {
	rank, ratio, significant := results.SlowestRank(r)
	if !significant {
		return
	}
	if t.slow == nil {
		t.slow = map[int]*slowRank{}
	}
	s := t.slow[rank]
	if s == nil {
		s = &slowRank{}
		if rank < len(r.RankHosts) {
			s.host = r.RankHosts[rank]
		}
		if rank < len(r.RankPIDs) {
			s.pid = r.RankPIDs[rank]
		}
		t.slow[rank] = s
	}
	s.points++
	if ratio > s.worst {
		form := "out-of-place"
		if r.InPlace {
			form = "in-place"
		}
		s.worst, s.where = ratio, fmt.Sprintf("%d B %s %s", r.Bytes, TypeName(r.DType), form)
	}
}

// slowestRank names, after the table, each rank that was slower than the
// median rank beyond the noise (results.SlowestRank's rule). In a
// collective whose ranks all wait for one another (allreduce, allgather)
// every rank's time is the slowest's, so none is named there.
func (t *Table) slowestRank() {
	for _, rank := range slices.Sorted(maps.Keys(t.slow)) {
		s := t.slow[rank]
		fmt.Fprintf(t.w, "# slowest rank: rank %d on %s (pid %d), slower than the median rank beyond the noise in %d of %d points, up to %.2f× (%s)\n",
			rank, s.host, s.pid, s.points, t.measured, s.worst, s.where)
	}
}
