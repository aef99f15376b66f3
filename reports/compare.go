package reports

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// CompareOptions tunes what Compare calls a change.
type CompareOptions struct {
	// Threshold is the smallest relative change of the median time that
	// counts, however significant: 0.05 ignores anything within ±5%.
	// Machines drift by a few percent between runs of the same build; a
	// significance test alone, given enough samples, would flag that drift.
	Threshold float64
	// Alpha is the significance level of the Mann-Whitney U test; 0 means
	// 0.05.
	Alpha float64
	// NoiseFactor scales each point's own noise into its threshold: a change
	// counts only beyond NoiseFactor × the larger robust spread of the two
	// runs' samples (interquartile range / 1.349, relative to the median),
	// and beyond Threshold. Samples of one run share its machine's state, so
	// a rank test over them alone sees drift between runs as significant.
	// 0 means DefaultNoiseFactor; negative disables it.
	//
	// Where both runs have at least MinCompareRounds rounds of a point
	// (plan.Plan.Rounds), rounds are the replicates, since a burst of load
	// slows every sample of one round at once. A change must then also hold
	// across rounds:
	//
	//   - the median of the round medians must change by more than the
	//     threshold (PointComparison.RoundChange): one slow round in either
	//     run does not move it, a real change moves every round;
	//   - so must the fastest round's median (PointComparison.
	//     BestRoundChange): a slower build is slower in its best round too,
	//     while load spanning two rounds of three leaves one alone;
	//   - the noise floor is NoiseFactor × the larger of the within-round
	//     spread (samples relative to their own round's median) and the
	//     between-round spread (1.4826 × the round medians' MAD, unbiased for
	//     small counts, relative to their median), the latter at least the
	//     run's typical one (Comparison.RoundNoise), since three rounds
	//     estimate it poorly.
	//
	// With fewer rounds in either run the single-round rule applies over the
	// pooled samples. The default and the round rules were chosen from
	// same-build sweep pairs (bench/compare-trials.sh; `make tune
	// TUNE_TABLES=noise-factor` remeasures): docs/tuning.md, noise-factor.
	NoiseFactor float64
	// IgnoreLink matches points regardless of their network shaping, to
	// compare one network with another. Compare does so by itself when each
	// run is shaped alike throughout and the two differ.
	IgnoreLink bool
	// MissingIsRegression makes a point that the base run measured and the
	// new run lacks, or failed, count as a regression. Off by default, as
	// sweeps are often narrowed on purpose; turn it on in CI, where a
	// newly failing strategy should fail the build.
	MissingIsRegression bool
	// MaxGate is the largest threshold, after the point's noise raised it,
	// at which a point that did not change counts as unchanged (a Threshold
	// above it is the user's choice, and the gate then). Above it the
	// runs are too noisy to see a change of that size, and the point is
	// TooNoisy rather than "unchanged": a gate of 120% would pass a 2×
	// slowdown. 0 means DefaultMaxGate; negative disables it.
	MaxGate float64
}

// DefaultMaxGate is CompareOptions.MaxGate's default: a comparison that
// cannot see a 25% change is no gate for CI.
const DefaultMaxGate = 0.25

// DefaultCompareOptions are the options `distbench compare` uses unless told
// otherwise: a 5% threshold at alpha 0.05.
func DefaultCompareOptions() CompareOptions {
	return CompareOptions{Threshold: 0.05, Alpha: 0.05, NoiseFactor: DefaultNoiseFactor}
}

// DefaultNoiseFactor is CompareOptions.NoiseFactor's default: in same-build
// trials on a loaded 2-core machine, the smallest factor that kept false
// alarms to 1 pair in 20 while still catching a 20% slower link
// (docs/tuning.md, noise-factor).
const DefaultNoiseFactor = 5

// runRoundNoise is a run's typical spread between round medians: the median
// over its points measured in at least MinCompareRounds rounds of
// stats.RelativeMADSpread; 0 when it has none.
func runRoundNoise(idx map[string]*indexed) float64 {
	var spreads []float64
	for _, x := range idx {
		if x.ok != nil && len(x.ok.RoundMediansUs) >= MinCompareRounds {
			spreads = append(spreads, stats.RelativeMADSpread(x.ok.RoundMediansUs))
		}
	}
	if len(spreads) == 0 {
		return 0
	}
	return stats.Median(spreads)
}

// MinCompareRounds is the fewest rounds both runs must have of a point for
// compare to demand that a change hold across rounds (see
// CompareOptions.NoiseFactor): the median of two round medians is their
// mean, which one slow round moves by half its slowness.
const MinCompareRounds = 3

// effectiveThreshold is the change a point must exceed to count, with the
// round rule when byRound (see CompareOptions.NoiseFactor).
func (o CompareOptions) effectiveThreshold(base, new *results.Record, byRound bool, roundNoise float64) float64 {
	t := o.Threshold
	if o.NoiseFactor <= 0 {
		return t
	}
	if !byRound {
		return max(t, o.NoiseFactor*max(stats.RelativeIQRSpread(base.SamplesUs), stats.RelativeIQRSpread(new.SamplesUs)))
	}
	within := max(withinRoundSpread(base), withinRoundSpread(new))
	between := max(stats.RelativeMADSpread(base.RoundMediansUs), stats.RelativeMADSpread(new.RoundMediansUs), roundNoise)
	return max(t, o.NoiseFactor*within, o.NoiseFactor*between)
}

// withinRoundSpread is the robust spread of a merged record's samples, each
// taken relative to its own round's median: the noise of back-to-back
// samples with the rounds' differences taken out. Without the rounds'
// sample counts it is the pooled samples' spread.
func withinRoundSpread(r *results.Record) float64 {
	counts := r.RoundSampleCounts
	total := 0
	for _, n := range counts {
		total += n
	}
	if len(counts) == 0 || total != len(r.SamplesUs) {
		return stats.RelativeIQRSpread(r.SamplesUs)
	}
	rel := make([]float64, 0, total)
	at := 0
	for _, n := range counts {
		round := r.SamplesUs[at : at+n]
		at += n
		med := stats.Median(round)
		if med <= 0 {
			continue
		}
		for _, x := range round {
			rel = append(rel, x/med)
		}
	}
	return stats.RelativeIQRSpread(rel)
}

// Verdict is Compare's conclusion about one point.
type Verdict string

// Verdicts.
const (
	Better  Verdict = "better"  // significantly faster, by more than the threshold
	Worse   Verdict = "worse"   // significantly slower, by more than the threshold
	Same    Verdict = "~"       // no significant change beyond the threshold
	Missing Verdict = "missing" // not measured (or failed, or without samples) in one of the runs
	// TooNoisy: no change was found, but the point's gate is above
	// CompareOptions.MaxGate, so a change below the gate would not have been.
	TooNoisy Verdict = "too noisy"
)

// PointComparison compares one point across the two runs. Times are the
// medians of the per-iteration samples, in microseconds.
type PointComparison struct {
	Key  string // Record.Point, or PointKey's fallback
	Name string // the benchmark name, as in results.bench

	Base, New *results.Record // nil when the run has no record of the point

	BaseMedianUs, NewMedianUs float64
	BaseBusBW, NewBusBW       float64 // GB/s, as recorded

	// Change is new/base − 1 of the median time (positive: slower), with
	// a 95% bootstrap confidence interval [ChangeLo, ChangeHi]; NaN when
	// not computable.
	Change, ChangeLo, ChangeHi float64

	P float64 // Mann-Whitney U p-value; 1 when not tested
	// Threshold is the change this point had to exceed: the options'
	// Threshold, raised to NoiseFactor × its runs' larger robust spread
	// (within and between rounds, for a point in rounds).
	Threshold float64
	N1, N2    int // sample sizes

	// BaseRounds and NewRounds count the rounds each run pooled for the
	// point; 0 for a record not measured in rounds.
	BaseRounds, NewRounds int
	// RoundChange is the change of the median of round medians, new/base
	// − 1, where both runs have at least MinCompareRounds rounds of the
	// point; a change counts only if this one exceeds the threshold too.
	// NaN otherwise.
	RoundChange float64
	// BestRoundChange is the change of the fastest round's median, where
	// RoundChange is set; a change counts only if it exceeds the threshold
	// too. NaN otherwise.
	BestRoundChange float64
	// Pairs counts the rounds both builds of an A/B run measured, back to
	// back (PairedCompare); 0 in a comparison of separate runs. SE is the
	// standard error of the median log ratio of those pairs, and SignP the
	// sign test's p-value; 0 without pairs.
	Pairs     int
	SE, SignP float64

	Verdict   Verdict
	Regressed bool
	Notes     []string // why a point is missing, sample-size warnings
}

// Comparison is the result of comparing two runs.
type Comparison struct {
	BaseDir, NewDir string
	BaseEnv, NewEnv *results.Env
	Options         CompareOptions
	Points          []PointComparison
	Notes           []string // about the runs as a whole
	// RoundNoise is the runs' typical spread between round medians, the
	// floor of each point's between-round spread (see
	// CompareOptions.NoiseFactor); 0 without rounds. In a paired
	// comparison, the typical spread of the points' per-round ratios.
	RoundNoise float64
	// Paired marks a comparison of an A/B run's two builds
	// (PairedCompare).
	Paired bool
	// Bands pools a paired comparison's points by series and size band
	// (PairedCompare); a band that regressed is a regression too.
	Bands []PointComparison
}

// Regressions returns the points that regressed: significantly slower
// (p < Alpha) by more than Threshold, plus lost points under
// MissingIsRegression. A CLI exits non-zero when there are any.
func (c *Comparison) Regressions() []PointComparison {
	var out []PointComparison
	for _, p := range c.Points {
		if p.Regressed {
			out = append(out, p)
		}
	}
	for _, b := range c.Bands {
		if b.Regressed {
			out = append(out, b)
		}
	}
	return out
}

// NoisyGate returns the median and the largest gate of the TooNoisy
// points: changes below them would have gone unseen. Zeros when there are
// none.
func (c *Comparison) NoisyGate() (median, most float64) {
	var gates []float64
	for _, p := range c.Points {
		if p.Verdict == TooNoisy {
			gates = append(gates, p.Threshold)
		}
	}
	if len(gates) == 0 {
		return 0, 0
	}
	return stats.Median(gates), slices.Max(gates)
}

// TooNoisyText is the plain statement of what a comparison with TooNoisy
// points could not see, or "" when it has none.
func (c *Comparison) TooNoisyText() string {
	n := c.Count(TooNoisy)
	if n == 0 {
		return ""
	}
	med, most := c.NoisyGate()
	return fmt.Sprintf("**Too noisy to judge %d of %d points**: their runs' noise hides any change below %s (median over those points; up to %s), "+
		"above the %s this comparison must see (--max-gate). They are not \"unchanged\". Measure the two builds interleaved "+
		"on one machine with `distbench ab BASE_BIN NEW_BIN` (every launch runs once with each build, back to back, so the machine's load reaches both alike), "+
		"on a quieter machine, or with more iterations.",
		n, len(c.Points), strings.TrimPrefix(pct(med), "+"), strings.TrimPrefix(pct(most), "+"), strings.TrimPrefix(pct(c.Options.MaxGate), "+"))
}

// Count returns how many points got verdict v.
func (c *Comparison) Count(v Verdict) int {
	n := 0
	for _, p := range c.Points {
		if p.Verdict == v {
			n++
		}
	}
	return n
}

// PointKey is what Compare matches points by: Record.Point when the run set
// it, otherwise everything that identifies a collective measurement.
func PointKey(r *results.Record) string {
	if r.Point != "" {
		return r.Point
	}
	return strings.Join([]string{r.Collective, r.Strategy, r.Peer, fmt.Sprintf("np=%d", r.NP),
		fmt.Sprintf("bytes=%d", r.Bytes), r.DType, r.Op, fmt.Sprintf("inplace=%t", r.InPlace), r.Link}, "/") + meshSegment(r)
}

// Compare compares the collective points of two run directories. It reads
// only; WriteReport writes the result.
func Compare(baseDir, newDir string, o CompareOptions) (*Comparison, error) {
	if o.NoiseFactor == 0 {
		o.NoiseFactor = DefaultNoiseFactor
	}
	if err := o.defaults("compare"); err != nil {
		return nil, err
	}
	base, err := readRun(baseDir)
	if err != nil {
		return nil, fmt.Errorf("reports: compare: base: %w", err)
	}
	nw, err := readRun(newDir)
	if err != nil {
		return nil, fmt.Errorf("reports: compare: new: %w", err)
	}
	c := &Comparison{BaseDir: baseDir, NewDir: newDir, BaseEnv: base.Env, NewEnv: nw.Env, Options: o}
	c.Notes = runNotes(base, nw)

	ignoreLink := o.IgnoreLink
	if bl, nl := runLinks(base), runLinks(nw); len(bl) == 1 && len(nl) == 1 && bl[0] != nl[0] {
		// Each run is shaped alike throughout, to different links: the
		// question is what the other network does to the same points.
		ignoreLink = true
		c.Notes = append(c.Notes, fmt.Sprintf("points are matched across links: base %s, new %s", linkName(bl[0]), linkName(nl[0])))
	}
	bIdx, nIdx := indexPoints(base, ignoreLink), indexPoints(nw, ignoreLink)
	var keys []string
	for k := range bIdx {
		keys = append(keys, k)
	}
	for k := range nIdx {
		if _, ok := bIdx[k]; !ok {
			keys = append(keys, k)
		}
	}
	c.RoundNoise = max(runRoundNoise(bIdx), runRoundNoise(nIdx))
	if c.RoundNoise > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("with rounds, a change must also exceed %g × %s, the runs' typical spread between round medians",
			o.NoiseFactor, pct(c.RoundNoise)))
	}
	for _, k := range keys {
		c.Points = append(c.Points, comparePoint(k, bIdx[k], nIdx[k], o, c.RoundNoise))
	}
	slices.SortFunc(c.Points, func(a, b PointComparison) int { return comparePointOrder(&a, &b) })
	return c, nil
}

// defaults fills in a zero Alpha and MaxGate and checks the options.
func (o *CompareOptions) defaults(what string) error {
	if o.Alpha == 0 {
		o.Alpha = 0.05
	}
	if o.MaxGate == 0 {
		o.MaxGate = DefaultMaxGate
	}
	if o.Alpha < 0 || o.Alpha >= 1 || o.Threshold < 0 || math.IsNaN(o.Threshold) {
		return fmt.Errorf("reports: %s: alpha %v must be in (0, 1) and threshold %v >= 0", what, o.Alpha, o.Threshold)
	}
	return nil
}

// linkSegment is the link part of a point id ("/link=1Gbit,25us").
var linkSegment = regexp.MustCompile(`/link=[^/]*`)

// runLinks lists the distinct links of a run's collective points.
func runLinks(run *results.Run) []string {
	seen := map[string]bool{}
	var links []string
	for i := range run.Records {
		r := &run.Records[i]
		if r.Kind == results.KindCollective && !seen[r.Link] {
			seen[r.Link] = true
			links = append(links, r.Link)
		}
	}
	return links
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func linkName(l string) string {
	if l == "" {
		return "unshaped"
	}
	return l
}

// indexed is what a run holds about one point: its last successful record
// and, if the last attempt failed, that one.
type indexed struct {
	ok, failed *results.Record
}

func indexPoints(run *results.Run, ignoreLink bool) map[string]*indexed {
	idx := map[string]*indexed{}
	for i := range run.Records {
		r := &run.Records[i]
		if r.Kind != results.KindCollective {
			continue
		}
		k := PointKey(r)
		if ignoreLink {
			k = linkSegment.ReplaceAllString(k, "")
			if r.Link != "" {
				k = strings.TrimSuffix(k, "/"+r.Link)
			}
		}
		e := idx[k]
		if e == nil {
			e = &indexed{}
			idx[k] = e
		}
		if good(r) {
			e.ok, e.failed = r, nil
		} else {
			e.failed = r
		}
	}
	return idx
}

func whyFailed(r *results.Record) string {
	switch {
	case r.Error != "":
		return "failed: " + r.Error
	case r.Incomplete:
		return "incomplete"
	case r.Wrong > 0:
		return fmt.Sprintf("%d wrong element(s)", r.Wrong)
	}
	return "no time recorded"
}

func comparePoint(key string, b, n *indexed, o CompareOptions, roundNoise float64) PointComparison {
	pc := PointComparison{Key: key, Change: math.NaN(), ChangeLo: math.NaN(), ChangeHi: math.NaN(), RoundChange: math.NaN(), BestRoundChange: math.NaN(), P: 1, Verdict: Missing}
	var rec *results.Record // any record of the point, to name it by
	if b != nil {
		pc.Base = b.ok
		rec = cmp.Or(b.ok, b.failed)
	}
	if n != nil {
		pc.New = n.ok
		rec = cmp.Or(n.ok, n.failed, rec)
	}
	pc.Name = results.BenchName(rec)
	baseHad := b != nil && b.ok != nil
	switch {
	case b == nil:
		pc.Notes = append(pc.Notes, "new point: not in the base run")
	case b.ok == nil:
		pc.Notes = append(pc.Notes, "base run: "+whyFailed(b.failed))
	}
	switch {
	case n == nil:
		pc.Notes = append(pc.Notes, "not in the new run")
	case n.failed != nil:
		// The last attempt failed, even if an earlier one succeeded.
		pc.New = nil
		pc.Notes = append(pc.Notes, "new run: "+whyFailed(n.failed))
	}
	if pc.Base == nil || pc.New == nil {
		pc.Regressed = baseHad && o.MissingIsRegression
		if pc.Base != nil {
			pc.BaseMedianUs, pc.BaseBusBW = pc.Base.TimeUs, pc.Base.BusBWGBs
		}
		if pc.New != nil {
			pc.NewMedianUs, pc.NewBusBW = pc.New.TimeUs, pc.New.BusBWGBs
		}
		return pc
	}
	pc.BaseBusBW, pc.NewBusBW = pc.Base.BusBWGBs, pc.New.BusBWGBs
	pc.BaseRounds, pc.NewRounds = len(pc.Base.RoundMediansUs), len(pc.New.RoundMediansUs)
	for _, x := range []struct {
		name string
		r    *results.Record
	}{{"base", pc.Base}, {"new", pc.New}} {
		if m := x.r.MissingRounds(); m > 0 {
			pc.Notes = append(pc.Notes, fmt.Sprintf("%s run: %d of %d rounds (incomplete)", x.name, len(x.r.RoundMediansUs), x.r.Rounds))
		}
	}
	byRound := pc.BaseRounds >= MinCompareRounds && pc.NewRounds >= MinCompareRounds
	if byRound {
		pc.RoundChange = stats.Median(pc.New.RoundMediansUs)/stats.Median(pc.Base.RoundMediansUs) - 1
		pc.BestRoundChange = slices.Min(pc.New.RoundMediansUs)/slices.Min(pc.Base.RoundMediansUs) - 1
	}
	bs, ns := pc.Base.SamplesUs, pc.New.SamplesUs
	pc.N1, pc.N2 = len(bs), len(ns)
	if len(bs) == 0 || len(ns) == 0 {
		pc.BaseMedianUs, pc.NewMedianUs = pc.Base.TimeUs, pc.New.TimeUs
		pc.Change = pc.NewMedianUs/pc.BaseMedianUs - 1
		pc.Notes = append(pc.Notes, "no per-iteration samples: cannot test the change")
		return pc
	}
	pc.BaseMedianUs = stats.Median(bs)
	pc.NewMedianUs = stats.Median(ns)
	pc.Change = pc.NewMedianUs/pc.BaseMedianUs - 1
	// The bootstrap is seeded from the point's key, so that the same runs
	// always give the same report.
	h := fnv.New64a()
	h.Write([]byte(key))
	pc.ChangeLo, pc.ChangeHi = stats.MedianRatioCI(bs, ns, h.Sum64())

	var warnings []error
	pc.P, warnings = stats.MannWhitney(bs, ns, o.Alpha)
	for _, w := range warnings {
		pc.Notes = append(pc.Notes, w.Error())
	}
	significant := pc.P < o.Alpha
	pc.Threshold = o.effectiveThreshold(pc.Base, pc.New, byRound, roundNoise)
	// acrossRounds: the change also holds for the rounds as a whole, or
	// there are too few rounds to ask.
	acrossRounds := func(sign float64) bool {
		return !byRound || sign*pc.RoundChange > pc.Threshold && sign*pc.BestRoundChange > pc.Threshold
	}
	switch {
	case significant && pc.Change > pc.Threshold && acrossRounds(1):
		pc.Verdict, pc.Regressed = Worse, true
	case significant && pc.Change < -pc.Threshold && acrossRounds(-1):
		pc.Verdict = Better
	default:
		pc.Verdict = Same
		if o.MaxGate > 0 && pc.Threshold > math.Max(o.MaxGate, o.Threshold) { // noise, not the user's threshold, set the gate
			pc.Verdict = TooNoisy
		}
		if significant && math.Abs(pc.Change) > pc.Threshold {
			pc.Notes = append(pc.Notes, fmt.Sprintf("the change does not hold across rounds (median of round medians %s, fastest round %s)", pct(pc.RoundChange), pct(pc.BestRoundChange)))
		}
	}
	return pc
}

func runNotes(base, nw *results.Run) []string {
	var notes []string
	for _, x := range []struct {
		name string
		run  *results.Run
	}{{"base", base}, {"new", nw}} {
		if !x.run.Finished {
			notes = append(notes, fmt.Sprintf("the %s run did not finish; points it lacks are reported missing", x.name))
		}
	}
	if br, nr := maxRounds(base.Records), maxRounds(nw.Records); br != nr && max(br, nr) >= MinCompareRounds {
		notes = append(notes, fmt.Sprintf("the base run measured its points in %s and the new run in %s: "+
			"a change is asked to hold across rounds only where both runs have at least %d",
			plural(br, "round"), plural(nr, "round"), MinCompareRounds))
	}
	if base.Env != nil && nw.Env != nil {
		b, n := base.Env, nw.Env
		if b.Host != n.Host || b.CPUModel != n.CPUModel || b.Cores != n.Cores {
			notes = append(notes, fmt.Sprintf("the runs were made on different machines (%s, %s vs %s, %s): a change may be the machine's, not the code's",
				b.Host, b.CPUModel, n.Host, n.CPUModel))
		}
		if b.Link != n.Link {
			notes = append(notes, fmt.Sprintf("the runs used different link shaping (%q vs %q)", b.Link, n.Link))
		}
	}
	return notes
}

// comparePointOrder sorts points as the report sections do: by collective,
// then strategy, world size and size.
func comparePointOrder(a, b *PointComparison) int {
	ra, rb := cmp.Or(a.Base, a.New), cmp.Or(b.Base, b.New)
	if ra != nil && rb != nil {
		if d := collectiveRank(ra.Collective) - collectiveRank(rb.Collective); d != 0 {
			return d
		}
		if d := strings.Compare(seriesName(ra), seriesName(rb)); d != 0 {
			return d
		}
		if d := ra.NP - rb.NP; d != 0 {
			return d
		}
		if ra.Bytes != rb.Bytes {
			if ra.Bytes < rb.Bytes {
				return -1
			}
			return 1
		}
	}
	return strings.Compare(a.Key, b.Key)
}
