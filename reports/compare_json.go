package reports

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
)

// VerdictFile is the comparison's machine-readable verdict, beside
// compare.md: what a CI job reads instead of parsing markdown. Its fields
// are VerdictDoc's; docs/guide/ci.md documents them.
const VerdictFile = "verdict.json"

// VerdictSchema names VerdictDoc's layout. A change that removes or
// changes the meaning of a field bumps it; new fields do not.
const VerdictSchema = "distbench.verdict/v1"

// Outcomes of a comparison, VerdictDoc.Outcome, with the exit status
// compare and ab give each.
const (
	OutcomeRegression  = "regression"  // exit 1
	OutcomeTooNoisy    = "too-noisy"   // exit 3: nothing regressed, some points could not be judged
	OutcomePass        = "pass"        // exit 0
	OutcomeInterrupted = "interrupted" // exit 130 (ab): the comparison covers the finished rounds
)

// VerdictDoc is verdict.json.
type VerdictDoc struct {
	Schema   string `json:"schema"`
	Command  string `json:"command"` // "compare" or "ab"
	Outcome  string `json:"outcome"`
	ExitCode int    `json:"exit_code"`
	Base     Side   `json:"base"`
	New      Side   `json:"new"`
	Options  struct {
		Threshold           float64  `json:"threshold"`
		Alpha               float64  `json:"alpha"`
		NoiseFactor         *float64 `json:"noise_factor"` // null: disabled
		MaxGate             *float64 `json:"max_gate"`     // null: disabled
		MissingIsRegression bool     `json:"missing_is_regression"`
		Paired              bool     `json:"paired"`
	} `json:"options"`
	Counts struct {
		Points      int `json:"points"`
		Regressions int `json:"regressions"` // points and bands that regressed
		Better      int `json:"better"`
		Worse       int `json:"worse"`
		Unchanged   int `json:"unchanged"`
		TooNoisy    int `json:"too_noisy"`
		Missing     int `json:"missing"`
	} `json:"counts"`
	Notes       []string       `json:"notes"`
	Regressions []PointVerdict `json:"regressions"`
	Points      []PointVerdict `json:"points"`
	Bands       []PointVerdict `json:"bands"`
}

// Side is one of the two runs compared.
type Side struct {
	Dir    string `json:"dir"`
	Commit string `json:"commit"` // the distbench build's, as its results record it; "" when unrecorded
}

// PointVerdict is one point's (or a size band's) verdict. Times in
// microseconds; changes as fractions, new/base − 1 (positive: slower);
// null where not computable.
type PointVerdict struct {
	Name         string   `json:"name"` // the benchmark name, as in results.bench
	Key          string   `json:"key"`
	Verdict      string   `json:"verdict"` // better, worse, unchanged, too-noisy, missing
	Regressed    bool     `json:"regressed"`
	BaseMedianUs *float64 `json:"base_median_us"`
	NewMedianUs  *float64 `json:"new_median_us"`
	Change       *float64 `json:"change"`
	ChangeLo     *float64 `json:"change_ci_lo"`
	ChangeHi     *float64 `json:"change_ci_hi"`
	P            *float64 `json:"p"`
	Gate         *float64 `json:"gate"`  // the change it had to exceed (Threshold raised by its noise)
	Pairs        int      `json:"pairs"` // ab's paired rounds; 0 in compare
	Notes        []string `json:"notes"`
}

// verdictWord is Verdict's word in verdict.json: "~" and "too noisy" are
// for people.
func verdictWord(v Verdict) string {
	switch v {
	case Same:
		return "unchanged"
	case TooNoisy:
		return "too-noisy"
	}
	return string(v)
}

// jsonNum is v for JSON, nil (null) where it is NaN or infinite.
func jsonNum(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func pointVerdict(p PointComparison) PointVerdict {
	notes := p.Notes
	if notes == nil {
		notes = []string{}
	}
	return PointVerdict{Name: p.Name, Key: p.Key, Verdict: verdictWord(p.Verdict), Regressed: p.Regressed,
		BaseMedianUs: jsonNum(p.BaseMedianUs), NewMedianUs: jsonNum(p.NewMedianUs),
		Change: jsonNum(p.Change), ChangeLo: jsonNum(p.ChangeLo), ChangeHi: jsonNum(p.ChangeHi),
		P: jsonNum(p.P), Gate: jsonNum(p.Threshold), Pairs: p.Pairs, Notes: notes}
}

// Outcome is the comparison's outcome and the exit status compare and ab
// give it: a regression first, then points too noisy to judge.
func (c *Comparison) Outcome() (outcome string, exitCode int) {
	switch {
	case len(c.Regressions()) > 0:
		return OutcomeRegression, 1
	case c.Count(TooNoisy) > 0:
		return OutcomeTooNoisy, 3
	}
	return OutcomePass, 0
}

// Verdict is the comparison as verdict.json holds it. An interrupted A/B
// run's outcome is OutcomeInterrupted whatever its points say.
func (c *Comparison) Verdict(interrupted bool) VerdictDoc {
	var d VerdictDoc
	d.Schema = VerdictSchema
	d.Command = "compare"
	if c.Paired {
		d.Command = "ab"
	}
	d.Outcome, d.ExitCode = c.Outcome()
	if interrupted {
		d.Outcome, d.ExitCode = OutcomeInterrupted, 130
	}
	d.Base = Side{Dir: c.BaseDir}
	if c.BaseEnv != nil {
		d.Base.Commit = c.BaseEnv.Commit
	}
	d.New = Side{Dir: c.NewDir}
	if c.NewEnv != nil {
		d.New.Commit = c.NewEnv.Commit
	}
	o := c.Options
	d.Options.Threshold, d.Options.Alpha = o.Threshold, o.Alpha
	if o.NoiseFactor >= 0 {
		d.Options.NoiseFactor = jsonNum(o.NoiseFactor)
	}
	if o.MaxGate >= 0 {
		d.Options.MaxGate = jsonNum(o.MaxGate)
	}
	d.Options.MissingIsRegression, d.Options.Paired = o.MissingIsRegression, c.Paired
	regs := c.Regressions()
	d.Counts.Points, d.Counts.Regressions = len(c.Points), len(regs)
	d.Counts.Better, d.Counts.Worse, d.Counts.Unchanged = c.Count(Better), c.Count(Worse), c.Count(Same)
	d.Counts.TooNoisy, d.Counts.Missing = c.Count(TooNoisy), c.Count(Missing)
	d.Notes = append([]string{}, c.Notes...)
	d.Regressions, d.Points, d.Bands = []PointVerdict{}, []PointVerdict{}, []PointVerdict{}
	for _, p := range regs {
		d.Regressions = append(d.Regressions, pointVerdict(p))
	}
	for _, p := range c.Points {
		d.Points = append(d.Points, pointVerdict(p))
	}
	for _, b := range c.Bands {
		d.Bands = append(d.Bands, pointVerdict(b))
	}
	return d
}

// WriteVerdict writes verdict.json into dir.
func (c *Comparison) WriteVerdict(dir string, interrupted bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c.Verdict(interrupted), "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, VerdictFile), append(b, '\n'))
}
