package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// maxRankPoints is how many points the per-rank section shows.
const maxRankPoints = 6

// rankPoint is one point with per-rank times and what SlowestRank made of
// them.
type rankPoint struct {
	r           *results.Record
	slow        int
	ratio       float64
	significant bool
}

func (p rankPoint) label() string {
	form := "out-of-place"
	if p.r.InPlace {
		form = "in-place"
	}
	return fmt.Sprintf("%s %s, %d ranks, %s %s %s", p.r.Collective, seriesName(p.r), p.r.NP, results.FormatSize(p.r.Bytes), p.r.DType, form)
}

// rankPoints returns the points of recs that have per-rank times, those
// whose slowest rank is significantly slow first, each group by falling
// ratio, then by point id.
func rankPoints(recs []results.Record) []rankPoint {
	var out []rankPoint
	for i := range recs {
		r := &recs[i]
		if r.Kind != results.KindCollective || !good(r) || len(r.RankMedianUs) < 2 {
			continue
		}
		slow, ratio, sig := results.SlowestRank(r)
		out = append(out, rankPoint{r, slow, ratio, sig})
	}
	slices.SortStableFunc(out, func(a, b rankPoint) int {
		if a.significant != b.significant {
			if a.significant {
				return -1
			}
			return 1
		}
		switch {
		case a.ratio > b.ratio:
			return -1
		case a.ratio < b.ratio:
			return 1
		}
		return strings.Compare(a.r.Point, b.r.Point)
	})
	return out
}

// alike lists the other ranks whose median is within
// results.SlowRankMinEffect of the slowest rank's: a rank that waits on the
// slow one (a gather's root, the next rank of a chain) can take as long, so
// the report names them beside it rather than pretend to tell them apart.
func (p rankPoint) alike() []int {
	var out []int
	meds := p.r.RankMedianUs
	for rank, m := range meds {
		if rank != p.slow && p.slow >= 0 && m*(1+results.SlowRankMinEffect) >= meds[p.slow] {
			out = append(out, rank)
		}
	}
	return out
}

// hostOf names rank's host, with its pid, as far as r knows them.
func hostOf(r *results.Record, rank int) string {
	h := "?"
	if rank >= 0 && rank < len(r.RankHosts) && r.RankHosts[rank] != "" {
		h = r.RankHosts[rank]
	}
	if rank >= 0 && rank < len(r.RankPIDs) && r.RankPIDs[rank] > 0 {
		h += fmt.Sprintf(" (pid %d)", r.RankPIDs[rank])
	}
	return h
}

// writeRanks writes the per-rank section: which rank is slowest where that
// is beyond the noise (results.SlowestRank), a table of each rank's median
// for those points (else for the points whose slowest rank stands out
// most), and a plot of them.
func (rp *report) writeRanks() error {
	pts := rankPoints(rp.run.Records)
	if len(pts) == 0 {
		return nil
	}
	rp.m.h(2, "Per-rank times")
	var sig []rankPoint
	for _, p := range pts {
		if p.significant {
			sig = append(sig, p)
		}
	}
	show := sig
	if len(sig) == 0 {
		rp.m.p("No rank is slower than the median rank beyond the noise in any of the %d point(s) with per-rank times "+
			"(at least %.0f%% slower, and a rank-sum test and bootstrap interval that agree). "+
			"In a collective that makes every rank wait for every other (allreduce, allgather), each rank's time is the "+
			"slowest rank's, so one slow NIC or host slows all ranks alike and no rank stands out; a collective whose ranks "+
			"need not wait for one another (broadcast, scatter) shows it.",
			len(pts), 100*results.SlowRankMinEffect)
		show = pts[:min(len(pts), 3)]
	} else {
		rp.m.p("**%s**", slowSummary(sig, len(pts)))
	}
	show = show[:min(len(show), maxRankPoints)]
	t := &table{header: []string{"point", "rank", "host", "median (µs)", "mean (µs)", "× median rank"}, left: map[int]bool{2: true}}
	for _, p := range show {
		mid := stats.LowerMedian(p.r.RankMedianUs) // the median rank's, as SlowestRank takes it
		for rank, med := range p.r.RankMedianUs {
			ratio := ""
			if mid > 0 {
				ratio = fmt.Sprintf("%.2f", med/mid)
			}
			if rank != p.slow && slices.Contains(p.alike(), rank) {
				ratio += " as slow"
			}
			if rank == p.slow {
				ratio += " slowest"
				if p.significant {
					ratio = "**" + ratio + "**"
				}
			}
			mean := ""
			if rank < len(p.r.RankMeanUs) {
				mean = num(p.r.RankMeanUs[rank])
			}
			t.add(p.label(), fmt.Sprint(rank), hostOf(p.r, rank), num(med), mean, ratio)
		}
	}
	if err := rp.m.table(t); err != nil {
		return err
	}
	return rp.plotRanks(show)
}

// slowSummary names the slowest rank of each significant point, grouped
// by rank: "Slowest rank: rank 3 on host h (pid 12) in 2 of 5 points, up to
// 95.1× the median rank (broadcast ring, 4 ranks, 64KiB float32 in-place)."
func slowSummary(sig []rankPoint, of int) string {
	type agg struct {
		rank  int
		host  string
		n     int
		worst rankPoint
	}
	var byRank []*agg
	for _, p := range sig {
		i := slices.IndexFunc(byRank, func(a *agg) bool { return a.rank == p.slow })
		if i < 0 {
			byRank = append(byRank, &agg{rank: p.slow, host: hostOf(p.r, p.slow), worst: p})
			i = len(byRank) - 1
		}
		byRank[i].n++ // sig is by falling ratio: the first is the worst
	}
	var parts []string
	for _, a := range byRank {
		part := fmt.Sprintf("rank %d on host %s in %d of %d point(s), up to %.1f× the median rank (%s",
			a.rank, a.host, a.n, of, a.worst.ratio, a.worst.label())
		if al := a.worst.alike(); len(al) > 0 {
			part += fmt.Sprintf(", where rank(s) %s took as long, within %.0f%%", strings.Trim(fmt.Sprint(al), "[]"), 100*results.SlowRankMinEffect)
		}
		parts = append(parts, part+")")
	}
	return "Slowest rank beyond the noise: " + strings.Join(parts, "; ") + "."
}
