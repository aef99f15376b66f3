package reports

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/distbench/distbench/results"
)

// CompareFile is the comparison report's name.
const CompareFile = "compare.md"

// WriteReport writes dir/compare.md and its plot, dir/plots/compare.png.
// `distbench compare` writes into the new run's directory; Compare itself
// writes nothing, so that a read-only baseline (a CI artifact) can be
// compared with anything.
func (c *Comparison) WriteReport(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var m md
	if c.Paired {
		m.h(1, fmt.Sprintf("distbench ab: %s → %s", c.BaseDir, c.NewDir))
	} else {
		m.h(1, fmt.Sprintf("distbench compare: %s → %s", c.BaseDir, c.NewDir))
	}
	if err := c.writeEnvTable(&m); err != nil {
		return err
	}
	c.writeMethod(&m)
	regs := c.Regressions()
	summary := fmt.Sprintf("**%d regression(s)**, %d improvement(s), %d unchanged, %d too noisy to judge, %d missing, of %d points.",
		len(regs), c.Count(Better), c.Count(Same), c.Count(TooNoisy), c.Count(Missing), len(c.Points))
	if len(regs) == 0 {
		summary = "**No regressions.** " + strings.TrimPrefix(summary, "**0 regression(s)**, ")
	}
	m.text(summary)
	if t := c.TooNoisyText(); t != "" {
		m.text(t)
	}
	for _, n := range c.Notes {
		m.text("Note: " + n + ".")
	}
	if len(c.Points) == 0 {
		return writeFileAtomic(filepath.Join(dir, CompareFile), m.Bytes())
	}
	if len(regs) > 0 {
		m.h(2, "Regressions")
		if err := m.table(c.pointTable(regs)); err != nil {
			return err
		}
	}
	if len(c.Bands) > 0 {
		m.h(2, "Size bands")
		m.p("Each series' points pooled by size band, round by round (the mean of their log ratios): a change a band shares shows " +
			"here where its points alone are too noisy to show it. Bands are judged with the points, as one family.")
		if err := m.table(c.bandTable()); err != nil {
			return err
		}
	}
	rel, err := c.plotChanges(dir)
	if err != nil {
		return err
	}
	if rel != "" {
		m.h(2, "Change per point")
		m.img("change of median time per point, with 95% confidence intervals", rel)
	}
	m.h(2, "All points")
	if err := m.table(c.pointTable(c.Points)); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, CompareFile), m.Bytes())
}

// writeMethod says how a point was judged.
func (c *Comparison) writeMethod(m *md) {
	o := c.Options
	if c.Paired {
		m.p("The two builds were measured interleaved: each round of each launch ran once per build, back to back, the order "+
			"alternating, so that the machine's load and drift reach both alike. Each round gives one ratio of the new build's median "+
			"time to the base build's; *change* is the median of a point's ratios, with its distribution-free 95%% interval, and column "+
			"*pairs* counts them. A point's **gate** is the smallest change it could detect: %s, or the robust t test's critical value "+
			"at α = %v divided among the points judged (Bonferroni) times the standard error of the median log ratio (from the ratios' "+
			"MAD, at least half the run's typical spread, %s), whichever is larger; *p* is that t test's, multiplied by the number of "+
			"points. A point **regressed** when its change passes the gate and at least the sign test's share of its pairs agree "+
			"(p < α; 13 of 16, 6 of 6). It needs %d pairs. Times are medians over all rounds.",
			num(100*o.Threshold)+"%", o.Alpha, pct(c.RoundNoise), MinPairs)
		return
	}
	m.p("A point **regressed** when its median time grew by more than %s, and by more than %v× the larger robust spread "+
		"(IQR/1.349, relative to the median) of its two runs' samples, its own noise, and a Mann-Whitney U test over the per-iteration samples "+
		"rejects \"no change\" at α = %v. Changes are of the median time (positive: slower); the interval is a 95%% bootstrap "+
		"confidence interval of that change. busbw is as recorded.", num(100*o.Threshold)+"%", o.NoiseFactor, o.Alpha)
	if c.hasRounds() {
		m.p("Where both runs measured a point in at least %d rounds (launches interleaved across the sweep, so that a burst of load "+
			"on the machine slows one round, not the whole point), the change must also hold across rounds: the median of the round medians "+
			"must change by more than the threshold too (column *rounds*: rounds base+new, and that change), and the noise the threshold "+
			"covers is the larger of the spread within rounds (samples relative to their round's median) and between rounds "+
			"(the round medians' median absolute deviation, scaled to a standard deviation, relative). Samples and statistics are pooled over the rounds.", MinCompareRounds)
	}
}

func (c *Comparison) writeEnvTable(m *md) error {
	if c.BaseEnv == nil && c.NewEnv == nil {
		return nil
	}
	t := &table{header: []string{"", "base", "new"}, left: map[int]bool{1: true, 2: true}}
	get := func(e *results.Env, f func(*results.Env) string) string {
		if e == nil {
			return "?"
		}
		return f(e)
	}
	rows := []struct {
		name string
		f    func(*results.Env) string
	}{
		{"host", func(e *results.Env) string { return e.Host }},
		{"CPU", func(e *results.Env) string { return fmt.Sprintf("%s, %d cores", e.CPUModel, e.Cores) }},
		{"commit", func(e *results.Env) string { return e.Commit }},
		{"Go", func(e *results.Env) string { return e.GoVersion }},
		{"reductions", func(e *results.Env) string { return e.Reduce }},
		{"link shaping", func(e *results.Env) string { return e.Link }},
		{"started", func(e *results.Env) string { return e.StartedAt.UTC().Format(time.RFC3339) }},
	}
	for _, r := range rows {
		b, n := get(c.BaseEnv, r.f), get(c.NewEnv, r.f)
		if b == "" && n == "" {
			continue // e.g. no link shaping in either run
		}
		t.add(r.name, b, n)
	}
	return m.table(t)
}

// hasRounds reports whether either run measured any point in rounds.
func (c *Comparison) hasRounds() bool {
	for _, p := range c.Points {
		if p.BaseRounds > 0 || p.NewRounds > 0 {
			return true
		}
	}
	return false
}

// roundsCell is the rounds column: "3+3: +1.2%", the rounds each run pooled
// and the change of the median of round medians where the round rule
// applies.
func roundsCell(p *PointComparison) string {
	if p.Pairs > 0 {
		return fmt.Sprint(p.Pairs)
	}
	if p.BaseRounds == 0 && p.NewRounds == 0 {
		return "—"
	}
	s := fmt.Sprintf("%d+%d", p.BaseRounds, p.NewRounds)
	if !math.IsNaN(p.RoundChange) {
		s += ": " + pct(p.RoundChange)
	}
	return s
}

func (c *Comparison) pointTable(ps []PointComparison) *table {
	t := &table{
		header: []string{"point", "base (µs)", "new (µs)", "change", "95% CI", "p", "n", "busbw base → new (GB/s)", "verdict", "notes"},
		left:   map[int]bool{8: true, 9: true},
	}
	rounds := c.hasRounds()
	if rounds {
		// After n: the rounds the samples came from.
		col := "rounds"
		if c.Paired {
			col = "pairs"
		}
		t.header = slices.Insert(t.header, 7, col)
		t.left = map[int]bool{9: true, 10: true}
	}
	for _, p := range ps {
		ci := "—"
		if !math.IsNaN(p.ChangeLo) {
			ci = fmt.Sprintf("[%s, %s]", pct(p.ChangeLo), pct(p.ChangeHi))
		}
		pv, n := "—", "—"
		if p.N1 > 0 && p.N2 > 0 {
			pv = fmt.Sprintf("%.3g", p.P)
			n = fmt.Sprintf("%d+%d", p.N1, p.N2)
		}
		bw := "—"
		if p.BaseBusBW > 0 || p.NewBusBW > 0 {
			bw = optNum(p.BaseBusBW) + " → " + optNum(p.NewBusBW)
		}
		verdict := string(p.Verdict)
		if p.Regressed {
			verdict = "**" + verdict + "** (regression)"
		}
		row := []string{p.Name, optNum(p.BaseMedianUs), optNum(p.NewMedianUs), pct(p.Change), ci, pv, n, bw, verdict, strings.Join(p.Notes, "; ")}
		if rounds {
			row = slices.Insert(row, 7, roundsCell(&p))
		}
		t.add(row...)
	}
	return t
}

// WriteBands writes the paired comparison's size bands as a markdown
// table, for a summary; nothing without bands.
func (c *Comparison) WriteBands(w io.Writer) error {
	if len(c.Bands) == 0 {
		return nil
	}
	return c.bandTable().write(w)
}

// bandTable is the paired comparison's size bands: change, interval, gate,
// pairs and verdict.
func (c *Comparison) bandTable() *table {
	t := &table{header: []string{"band", "change", "95% CI", "gate", "pairs", "verdict"}, left: map[int]bool{0: true, 5: true}}
	for _, b := range c.Bands {
		ci, gate := "—", "—"
		if !math.IsNaN(b.ChangeLo) {
			ci = fmt.Sprintf("[%s, %s]", pct(b.ChangeLo), pct(b.ChangeHi))
		}
		if b.Threshold > 0 {
			gate = "±" + strings.TrimPrefix(pct(b.Threshold), "+")
		}
		verdict := string(b.Verdict)
		if b.Regressed {
			verdict = "**" + verdict + "** (regression)"
		}
		t.add(b.Name, pct(b.Change), ci, gate, fmt.Sprint(b.Pairs), verdict)
	}
	return t
}

func optNum(v float64) string {
	if v == 0 {
		return "—"
	}
	return num(v)
}
