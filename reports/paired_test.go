package reports

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
)

// writeABRun writes the two run directories of a synthetic A/B run in
// rounds: every round's launch of a group has a load factor the two builds
// share (lognormal, drift sigma, what pairing cancels) and one of its own
// (own sigma), the shape of back-to-back launches on a busy machine.
// keepRounds, when positive, keeps only that many rounds of the new build.
func writeABRun(t testing.TB, dir string, seed uint64, rounds int, drift, own float64, keepRounds int, changes ...change) (base, nw string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	base, nw = filepath.Join(dir, "base"), filepath.Join(dir, "new")
	var ws [2]*results.Writer
	for k, d := range []string{base, nw} {
		w, err := results.NewWriter(d, synthEnv)
		if err != nil {
			t.Fatal(err)
		}
		ws[k] = w
	}
	for r := 1; r <= rounds; r++ {
		for _, m := range models[:2] {
			for _, np := range cmpNPs {
				for _, b := range cmpSizes {
					// ab --per-point: a launch per point and build.
					shared := math.Exp(drift * rng.NormFloat64())
					for k, w := range ws {
						if k == 1 && keepRounds > 0 && r > keepRounds {
							continue
						}
						slow := shared * math.Exp(own*rng.NormFloat64())
						for _, c := range changes {
							if k == 1 && c.matches(m, np, b) {
								slow *= c.slowdown
							}
						}
						rec := measure(rng, m, "allreduce", np, b, 5, slow)
						rec.Round, rec.Rounds = r, rounds
						if err := w.Write(&rec); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
	for _, w := range ws {
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	return base, nw
}

func TestPairedCompare(t *testing.T) {
	ringBig := func(slow float64) []change {
		return []change{{strategy: "ring", bytes: 1 << 20, slowdown: slow}, {strategy: "ring", bytes: 8 << 20, slowdown: slow}}
	}
	tests := []struct {
		name    string
		rounds  int
		keep    int
		changes []change
		// want is each point's verdict by "strategy/np=N/bytes=B"
		// substring; points not named must be unchanged.
		want map[string]Verdict
		// wantBands is each size band's verdict by name substring.
		wantBands map[string]Verdict
	}{
		{name: "same build", rounds: 16},
		{name: "20% slower ring at bandwidth-bound sizes", rounds: 16, changes: ringBig(1.25), want: map[string]Verdict{
			"ring/np=2/bytes=1048576": Worse, "ring/np=2/bytes=8388608": Worse,
			"ring/np=4/bytes=1048576": Worse, "ring/np=4/bytes=8388608": Worse,
		}, wantBands: map[string]Verdict{"ring np=2 float32 sum ≥ 1MiB": Worse, "ring np=4 float32 sum ≥ 1MiB": Worse}},
		{name: "20% faster ring", rounds: 16, changes: ringBig(0.8), want: map[string]Verdict{
			"ring/np=2/bytes=1048576": Better, "ring/np=2/bytes=8388608": Better,
			"ring/np=4/bytes=1048576": Better, "ring/np=4/bytes=8388608": Better,
		}, wantBands: map[string]Verdict{"ring np=2 float32 sum ≥ 1MiB": Better, "ring np=4 float32 sum ≥ 1MiB": Better}},
		{name: "too few pairs to judge", rounds: 16, keep: 5, want: map[string]Verdict{"": Missing}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Several machines' worth of noise: the verdicts must hold
			// for each, not for a lucky seed.
			for seed := uint64(1); seed <= 10; seed++ {
				// A shared drift of 30% a launch would swamp any
				// comparison of separate runs; the builds' own 6% is
				// what pairing leaves.
				base, nw := writeABRun(t, t.TempDir(), seed, tc.rounds, 0.3, 0.06, tc.keep, tc.changes...)
				c, err := PairedCompare(base, nw, DefaultCompareOptions())
				if err != nil {
					t.Fatal(err)
				}
				if !c.Paired || len(c.Points) != 12 {
					t.Fatalf("seed %d: paired %v, %d points, want 12", seed, c.Paired, len(c.Points))
				}
				for _, p := range c.Points {
					want := Same
					for k, v := range tc.want {
						if strings.Contains(p.Key, k) {
							want = v
						}
					}
					if p.Verdict != want || p.Regressed != (want == Worse || want == Missing && c.Options.MissingIsRegression) {
						t.Errorf("seed %d: %s: %s (change %s, gate %s, p %.3g, %d pairs), want %s",
							seed, p.Key, p.Verdict, pct(p.Change), pct(p.Threshold), p.P, p.Pairs, want)
					}
				}
				// One band a series: < 64KiB has one point (none), and
				// 64KiB–1MiB too; ≥ 1MiB has two. Points not judged
				// make no band.
				wantBands := 4
				if tc.keep > 0 {
					wantBands = 0
				}
				if len(c.Bands) != wantBands {
					t.Fatalf("seed %d: %d bands, want %d", seed, len(c.Bands), wantBands)
				}
				for _, b := range c.Bands {
					want := Same
					for k, v := range tc.wantBands {
						if strings.Contains(b.Name, k) {
							want = v
						}
					}
					if b.Verdict != want {
						t.Errorf("seed %d: band %s: %s (change %s, gate %s), want %s", seed, b.Name, b.Verdict, pct(b.Change), pct(b.Threshold), want)
					}
				}
			}
		})
	}
}
