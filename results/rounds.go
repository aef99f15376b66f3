package results

import (
	"fmt"
	"maps"
	"slices"
)

// FillFunc summarises per-iteration samples (µs) into a record's time
// statistics, algbw and busbw. [Fill] is the one distbench uses; tests
// pass their own.
type FillFunc func(r *Record, samplesUs []float64) error

// MergeRounds returns recs with the round records of every point measured in
// several rounds (Rounds > 1) merged into one record, placed where the
// point's last record was; everything else is passed through unchanged, in
// order, so single-round runs and older files read exactly as before. Reports
// and compare read a run through it.
//
// For each round the last successful record counts, else the last record
// (a resumed sweep measures a failed round again). Then:
//
//   - if a round failed (Error set), the point failed: the merged record is
//     that round's, its error prefixed with the round;
//   - otherwise the rounds that finished are pooled: their samples
//     concatenated in round order, the statistics recomputed from the pooled
//     samples by fill, Iters and ElapsedSecs summed, Wrong the largest, and
//     each round's median kept in RoundMediansUs (with RoundSampleCounts),
//     the wire bytes the mean of the rounds' (see mergeWire), the per-rank
//     figures pooled likewise (see mergeRanks). A
//     round that never ran or stopped short (an interrupted sweep) is left
//     out, and MissingRounds says how many are;
//   - with no round finished, the merged record is the last one (stopped
//     short), as an unfinished single-round point is.
//
// A merged record is round 0 of Rounds (RoundOf). fill's error, a bandwidth
// it cannot compute, leaves the bandwidths at zero, as the rounds' own
// records had them. MergeRounds does not modify recs; merging merged records
// again changes nothing.
func MergeRounds(recs []Record, fill FillFunc) []Record {
	type point struct {
		last   int              // index of its last round record
		rounds map[int][]Record // by round, in file order
		of     int
	}
	points := map[string]*point{}
	multi := func(r *Record) bool {
		return r.Kind == KindCollective && r.Point != "" && r.Rounds > 1 && r.Round >= 1
	}
	for i := range recs {
		r := &recs[i]
		if !multi(r) {
			continue
		}
		p := points[r.Point]
		if p == nil {
			p = &point{rounds: map[int][]Record{}}
			points[r.Point] = p
		}
		p.last = i
		p.rounds[r.Round] = append(p.rounds[r.Round], *r)
		p.of = max(p.of, r.Rounds, r.Round)
	}
	if len(points) == 0 {
		return slices.Clone(recs)
	}
	out := make([]Record, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		if !multi(r) {
			out = append(out, *r)
			continue
		}
		if p := points[r.Point]; p.last == i {
			out = append(out, mergePoint(p.rounds, p.of, fill))
		}
	}
	return out
}

// mergePoint merges one point's rounds; see MergeRounds.
func mergePoint(byRound map[int][]Record, of int, fill FillFunc) Record {
	var chosen []*Record // in round order, rounds without a record left out
	for round := 1; round <= of; round++ {
		rs := byRound[round]
		if len(rs) == 0 {
			continue
		}
		pick := &rs[len(rs)-1]
		for i := len(rs) - 1; i >= 0; i-- {
			if ok(&rs[i]) {
				pick = &rs[i]
				break
			}
		}
		chosen = append(chosen, pick)
	}
	for _, r := range chosen {
		if r.Error != "" {
			m := cloneRecord(r)
			m.Error = fmt.Sprintf("round %d of %d: %s", r.Round, of, r.Error)
			m.Round, m.Rounds = 0, of
			return m
		}
	}
	var pooled []*Record
	for _, r := range chosen {
		if ok(r) {
			pooled = append(pooled, r)
		}
	}
	if len(pooled) == 0 {
		m := cloneRecord(chosen[len(chosen)-1])
		m.Round, m.Rounds = 0, of
		return m
	}
	m := cloneRecord(pooled[0])
	m.Round, m.Rounds = 0, of
	m.Iters, m.ElapsedSecs = 0, 0
	m.RoundMediansUs = make([]float64, 0, len(pooled))
	m.RoundSampleCounts = make([]int, 0, len(pooled))
	var samples []float64
	allSampled := true
	for _, r := range pooled {
		m.Iters += r.Iters
		m.ElapsedSecs += r.ElapsedSecs
		m.Wrong = max(m.Wrong, r.Wrong)
		if m.StartedAt.IsZero() || (!r.StartedAt.IsZero() && r.StartedAt.Before(m.StartedAt)) {
			m.StartedAt = r.StartedAt
		}
		if r.FinishedAt.After(m.FinishedAt) {
			m.FinishedAt = r.FinishedAt
		}
		m.RoundMediansUs = append(m.RoundMediansUs, r.TimeUs)
		m.RoundSampleCounts = append(m.RoundSampleCounts, len(r.SamplesUs))
		samples = append(samples, r.SamplesUs...)
		allSampled = allSampled && len(r.SamplesUs) > 0
	}
	mergeWire(&m, pooled)
	mergeRanks(&m, pooled)
	mergeGPU(&m, pooled)
	if allSampled {
		_ = fill(&m, samples) // see MergeRounds on its error
		return m
	}
	// Rounds without samples (not written by a sweep) cannot be pooled:
	// the point takes the statistics of its median round instead.
	mid := slices.Clone(pooled)
	slices.SortStableFunc(mid, func(a, b *Record) int {
		switch {
		case a.TimeUs < b.TimeUs:
			return -1
		case a.TimeUs > b.TimeUs:
			return 1
		}
		return 0
	})
	med := mid[(len(mid)-1)/2]
	m.TimeUs, m.TimeUsP5, m.TimeUsP95, m.TimeUsP99 = med.TimeUs, med.TimeUsP5, med.TimeUsP95, med.TimeUsP99
	m.TimeUsMin, m.TimeUsMax, m.TimeUsMean, m.TimeUsStd, m.TimeUsCV = med.TimeUsMin, med.TimeUsMax, med.TimeUsMean, med.TimeUsStd, med.TimeUsCV
	m.TimeUsCILo, m.TimeUsCIHi = med.TimeUsCILo, med.TimeUsCIHi
	m.AlgBWGBs, m.BusBWGBs = med.AlgBWGBs, med.BusBWGBs
	m.SamplesUs, m.RoundSampleCounts = nil, nil
	return m
}

// cloneRecord copies r deeply enough that the merged record shares no
// slice or map with the records it was made from.
func cloneRecord(r *Record) Record {
	m := *r
	m.SamplesUs = slices.Clone(r.SamplesUs)
	m.RoundMediansUs = slices.Clone(r.RoundMediansUs)
	m.RoundSampleCounts = slices.Clone(r.RoundSampleCounts)
	m.Options = maps.Clone(r.Options)
	cloneWire(&m)
	cloneRanks(&m)
	m.GPU = cloneGPU(r.GPU)
	return m
}
