package reports

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// MinPairs is the fewest paired rounds a point needs for PairedCompare to
// judge it: with fewer, the sign test cannot reach p < 0.05 however
// consistent the change (5 pairs of one sign give p = 1/16).
const MinPairs = 6

// PairedCompare compares the two builds of an A/B run (harness.AB, the
// run directories baseDir and newDir): round r of a point in one and round
// r in the other were measured back to back, so each round gives one ratio
// of the new build's median time to the base build's, with whatever load
// the machine had then on both sides of it. For each point:
//
//   - Change is the median of those ratios, − 1, and [ChangeLo, ChangeHi]
//     its distribution-free 95% confidence interval (order statistics of
//     the ratios, as benchstat's);
//   - SE is the standard error of the median log ratio, from the ratios'
//     robust spread (1.4826 × MAD), at least half the run's typical spread
//     (Comparison.RoundNoise), since a handful of ratios can agree by
//     chance; P is the robust t test of the median against no change, with
//     pairs − 1 degrees of freedom, multiplied by the number of points
//     judged (Bonferroni);
//   - Threshold, the gate, is the smallest change the point could detect:
//     the options' Threshold, or the t test's critical value at Alpha
//     divided among the points times SE, whichever is larger;
//   - a point is Worse (a regression) or Better when its change passes the
//     gate and the exact sign test of the ratios (SignP) gives p < Alpha,
//     so that most pairs agree (13 of 16, all 6 of 6); otherwise it is unchanged, or
//     TooNoisy when its gate is above MaxGate.
//
// CompareOptions.NoiseFactor and IgnoreLink do not apply: pairing and the
// t test take the noise into account, and both builds ran the same plan.
// Missing and failed points are treated as Compare treats them.
func PairedCompare(baseDir, newDir string, o CompareOptions) (*Comparison, error) {
	o.NoiseFactor, o.IgnoreLink = 0, false
	if err := o.defaults("paired compare"); err != nil {
		return nil, err
	}
	var raw [2]*results.Run
	var merged [2]*results.Run
	for k, dir := range []string{baseDir, newDir} {
		run, err := results.ReadRun(dir)
		if err != nil {
			return nil, fmt.Errorf("reports: paired compare: %s: %w", dir, err)
		}
		raw[k] = run
		m := *run
		m.Records = results.MergeRounds(slices.Clone(run.Records), results.Fill)
		merged[k] = &m
	}
	c := &Comparison{BaseDir: baseDir, NewDir: newDir, BaseEnv: raw[0].Env, NewEnv: raw[1].Env, Options: o, Paired: true}
	c.Notes = runNotes(merged[0], merged[1])
	bIdx, nIdx := indexPoints(merged[0], false), indexPoints(merged[1], false)
	bRounds, nRounds := roundTimes(raw[0]), roundTimes(raw[1])

	byRound := ratioRounds(bRounds, nRounds)
	ratios := map[string][]float64{}
	var spreads []float64
	for k := range bIdx {
		q := inRoundOrder(byRound[k])
		ratios[k] = q
		if len(q) >= MinPairs {
			spreads = append(spreads, stats.ScaledMAD(logsOf(q)))
		}
	}
	if len(spreads) > 0 {
		c.RoundNoise = stats.Median(spreads)
	}
	keys := make([]string, 0, len(bIdx)+len(nIdx))
	for k := range bIdx {
		keys = append(keys, k)
	}
	for k := range nIdx {
		if _, ok := bIdx[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		c.Points = append(c.Points, pairedPoint(k, bIdx[k], nIdx[k], ratios[k], o, c.RoundNoise))
	}
	c.Bands = pairedBands(c.Points, byRound, c.RoundNoise)
	// Points and bands are judged as one family: the gate divides α
	// among all of them.
	all := append(slices.Clone(c.Points), c.Bands...)
	judgePaired(all, o)
	copy(c.Points, all)
	copy(c.Bands, all[len(c.Points):])
	slices.SortFunc(c.Points, func(a, b PointComparison) int { return comparePointOrder(&a, &b) })
	// A band's records are its smallest point's: bands sort as their
	// series do, and by size within one.
	slices.SortFunc(c.Bands, func(a, b PointComparison) int { return comparePointOrder(&a, &b) })
	return c, nil
}

// Size bands: a slowdown in a strategy's bandwidth path shows at every
// large size of its series at once, one in its latency path at the small
// ones; a band pools them.
var sizeBands = []struct {
	name   string
	lo, hi int64 // bytes, [lo, hi)
}{
	{"< 64KiB", 0, 64 << 10},
	{"64KiB–1MiB", 64 << 10, 1 << 20},
	{"≥ 1MiB", 1 << 20, math.MaxInt64},
}

// ratioRounds maps each point to its paired ratios by round.
func ratioRounds(base, nw map[string]map[int]float64) map[string]map[int]float64 {
	out := map[string]map[int]float64{}
	for k, b := range base {
		for r, t := range b {
			if u, ok := nw[k][r]; ok {
				if out[k] == nil {
					out[k] = map[int]float64{}
				}
				out[k][r] = u / t
			}
		}
	}
	return out
}

// pairedBands pools the judged points of each series (collective,
// strategy and options, world size, type, op, form, link) by size band:
// in each round that all of a band's points have, the band's log ratio is
// the mean of theirs. Where the pairs' noise is independent from point to
// point (ab --per-point), the band's spread is the points' over √points,
// and a change shared by the band shows where no single point could show
// it. Bands of one point are left out: the point says it all.
func pairedBands(points []PointComparison, byRound map[string]map[int]float64, pairNoise float64) []PointComparison {
	type bandKey struct {
		series string
		band   int
	}
	members := map[bandKey][]*PointComparison{}
	var order []bandKey
	for i := range points {
		p := &points[i]
		if p.Pairs < MinPairs || p.Base == nil || p.New == nil {
			continue
		}
		r := p.Base
		series := fmt.Sprintf("%s %s np=%d %s %s", r.Collective, seriesName(r), r.NP, r.DType, r.Op)
		if !r.InPlace {
			series += " out-of-place"
		}
		if r.Link != "" {
			series += " link=" + r.Link
		}
		band := slices.IndexFunc(sizeBands, func(b struct {
			name   string
			lo, hi int64
		}) bool {
			return r.Bytes >= b.lo && r.Bytes < b.hi
		})
		k := bandKey{strings.TrimSpace(strings.Join(strings.Fields(series), " ")), band}
		if members[k] == nil {
			order = append(order, k)
		}
		members[k] = append(members[k], p)
	}
	var bands []PointComparison
	for _, k := range order {
		ps := members[k]
		if len(ps) < 2 {
			continue
		}
		var rounds []int
		for r := range byRound[ps[0].Key] {
			if !slices.ContainsFunc(ps, func(p *PointComparison) bool { _, ok := byRound[p.Key][r]; return !ok }) {
				rounds = append(rounds, r)
			}
		}
		slices.Sort(rounds)
		q := make([]float64, len(rounds))
		for i, r := range rounds {
			sum := 0.0
			for _, p := range ps {
				sum += math.Log(byRound[p.Key][r])
			}
			q[i] = math.Exp(sum / float64(len(ps)))
		}
		name := fmt.Sprintf("%s %s (%d points)", k.series, sizeBands[k.band].name, len(ps))
		bc := PointComparison{Key: name, Name: name, Base: ps[0].Base, New: ps[0].New, Pairs: len(q),
			Change: math.NaN(), ChangeLo: math.NaN(), ChangeHi: math.NaN(), RoundChange: math.NaN(), BestRoundChange: math.NaN(), P: 1, Verdict: Missing}
		for _, p := range ps {
			bc.BaseMedianUs += p.BaseMedianUs
			bc.NewMedianUs += p.NewMedianUs
		}
		if len(q) >= MinPairs {
			pairedStats(&bc, q, pairNoise/math.Sqrt(float64(len(ps))))
		}
		bands = append(bands, bc)
	}
	return bands
}

// roundTimes maps each collective point of an unmerged run to its good
// rounds' median times, by round number (the last good record of a round
// wins, as a rerun would).
func roundTimes(run *results.Run) map[string]map[int]float64 {
	out := map[string]map[int]float64{}
	for i := range run.Records {
		r := &run.Records[i]
		if r.Kind != results.KindCollective || !good(r) || r.TimeUs <= 0 {
			continue
		}
		k := PointKey(r)
		if out[k] == nil {
			out[k] = map[int]float64{}
		}
		round, _ := r.RoundOf()
		out[k][round] = r.TimeUs
	}
	return out
}

// inRoundOrder is a point's paired ratios by round, in round order.
func inRoundOrder(byRound map[int]float64) []float64 {
	rounds := slices.Sorted(maps.Keys(byRound))
	q := make([]float64, len(rounds))
	for i, r := range rounds {
		q[i] = byRound[r]
	}
	return q
}

// logsOf is the natural log of each ratio.
func logsOf(q []float64) []float64 {
	logs := make([]float64, len(q))
	for i, x := range q {
		logs[i] = math.Log(x)
	}
	return logs
}

func pairedPoint(key string, b, n *indexed, q []float64, o CompareOptions, pairNoise float64) PointComparison {
	// comparePoint sorts out what is missing or failed and fills the
	// names, medians and bandwidths; the paired statistics replace its
	// unpaired ones.
	pc := comparePoint(key, b, n, CompareOptions{Threshold: o.Threshold, Alpha: o.Alpha, NoiseFactor: -1, MissingIsRegression: o.MissingIsRegression}, 0)
	pc.Pairs = len(q)
	pc.RoundChange, pc.BestRoundChange = math.NaN(), math.NaN()
	if pc.Base == nil || pc.New == nil {
		return pc
	}
	pc.Notes = slices.DeleteFunc(pc.Notes, unpairedNote)
	if len(q) < MinPairs {
		pc.Verdict, pc.Regressed, pc.P = Missing, o.MissingIsRegression, 1
		pc.Change, pc.ChangeLo, pc.ChangeHi = math.NaN(), math.NaN(), math.NaN()
		pc.Notes = append(pc.Notes, fmt.Sprintf("%s paired of the %d needed to judge", plural(len(q), "round"), MinPairs))
		return pc
	}
	pairedStats(&pc, q, pairNoise)
	return pc
}

// pairedStats sets pc's change, interval, standard error and p-values from
// its paired ratios q; judgePaired then gives the verdict.
func pairedStats(pc *PointComparison, q []float64, pairNoise float64) {
	logs := logsOf(q)
	pc.Change = stats.Median(q) - 1
	lo, hi, _ := stats.MedianCI(slices.Sorted(slices.Values(q)), 0.95)
	pc.ChangeLo, pc.ChangeHi = lo-1, hi-1
	pc.SignP = stats.SignTest(logs)
	// The robust t statistic of the median log ratio: its standard
	// error from the ratios' MAD, floored at half the run's typical
	// spread, since a handful of ratios can agree by chance.
	pc.SE = stats.MedianSE(max(stats.ScaledMAD(logs), pairNoise/2), len(q))
	if pc.SE > 0 {
		pc.P = 2 * stats.StudentTSF(math.Abs(math.Log1p(pc.Change))/pc.SE, float64(len(q)-1))
	}
	pc.Verdict = Same // judgePaired decides, once it knows how many points are judged
}

// judgePaired gives each judged point its gate and verdict. The gate is the
// smallest change the point could have detected: the threshold, or the
// robust t test's critical value at α divided among the judged points
// (Bonferroni) times the point's standard error, whichever is larger.
// Seventy points tested at α each would cry wolf in most A/B runs of the
// same build; divided, the chance that any point of the run is flagged
// without a change is about α. A change must pass the gate and the
// sign test (at α, undivided): most pairs must agree, not a median
// that a few pairs moved.
func judgePaired(ps []PointComparison, o CompareOptions) {
	var judged []int
	for i := range ps {
		if ps[i].Pairs >= MinPairs && ps[i].Base != nil && ps[i].New != nil && ps[i].Verdict != Missing {
			judged = append(judged, i)
		}
	}
	m := float64(len(judged))
	for _, i := range judged {
		pc := &ps[i]
		crit := stats.StudentTQuantile(o.Alpha/(2*m), float64(pc.Pairs-1))
		pc.Threshold = max(o.Threshold, math.Expm1(crit*pc.SE))
		pc.P = min(1, m*pc.P)
		consistent := pc.SignP < o.Alpha
		pc.Regressed = false
		switch {
		case consistent && pc.Change > pc.Threshold:
			pc.Verdict, pc.Regressed = Worse, true
		case consistent && pc.Change < -pc.Threshold:
			pc.Verdict = Better
		default:
			pc.Verdict = Same
			if o.MaxGate > 0 && pc.Threshold > math.Max(o.MaxGate, o.Threshold) {
				pc.Verdict = TooNoisy
			}
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// unpairedNote tells the notes comparePoint made about the pooled samples
// and the unpaired round rule, which the paired test replaces, from the
// notes that still hold (missing rounds, failures).
func unpairedNote(s string) bool {
	for _, p := range []string{"need >=", "all samples are equal", "the change does not hold across rounds"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
