package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/perf/benchmath"
)

// noisy draws n log-normal times around center with 5% slow outliers, as
// benchmark samples are.
func noisy(rng *rand.Rand, center float64, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		x := center * math.Exp(0.03*rng.NormFloat64())
		if rng.Float64() < 0.05 {
			x *= 1.3 + rng.Float64()
		}
		xs[i] = x
	}
	return xs
}

// TestMedianRatioCI checks the bootstrap interval covers the true change.
func TestMedianRatioCI(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		n     int
		ratio float64
	}{{10, 1}, {25, 1.25}, {60, 0.9}}
	for _, tt := range tests {
		covered := 0
		const trials = 80
		for i := range trials {
			base := noisy(rng, 100, tt.n)
			nw := noisy(rng, 100*tt.ratio, tt.n)
			lo, hi := MedianRatioCI(base, nw, uint64(i))
			if lo > hi {
				t.Fatalf("n=%d: interval [%v, %v] upside down", tt.n, lo, hi)
			}
			if lo <= tt.ratio-1 && tt.ratio-1 <= hi {
				covered++
			}
		}
		// A percentile bootstrap of a median is a little optimistic at
		// small n; demand 85% where 95% is nominal.
		if covered < trials*85/100 {
			t.Errorf("n=%d ratio=%v: covered the true change %d times of %d", tt.n, tt.ratio, covered, trials)
		}
	}
	if lo, hi := MedianRatioCI([]float64{1}, []float64{1, 2}, 1); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("one sample: CI [%v, %v], want NaN", lo, hi)
	}
	a, b := MedianRatioCI([]float64{1, 2, 3, 4, 5}, []float64{2, 3, 4, 5, 6}, 7)
	c, d := MedianRatioCI([]float64{1, 2, 3, 4, 5}, []float64{2, 3, 4, 5, 6}, 7)
	if a != c || b != d {
		t.Errorf("MedianRatioCI is not deterministic: [%v, %v] then [%v, %v]", a, b, c, d)
	}
}

func TestResampledMedian(t *testing.T) {
	// Counting drawn indices must give the median that sorting the
	// same resample gives.
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 10, 11} {
		sorted := make([]float64, n)
		for i := range sorted {
			sorted[i] = float64(i * i)
		}
		for range 50 {
			seed := rng.Uint64()
			r1 := rand.New(rand.NewPCG(uint64(n), seed))
			r2 := rand.New(rand.NewPCG(uint64(n), seed))
			got := resampledMedian(sorted, make([]int, n), r1)
			re := make([]float64, n)
			for i := range re {
				re[i] = sorted[r2.IntN(n)]
			}
			if want := Median(re); got != want {
				t.Fatalf("n=%d: resampled median %v, sorting gives %v", n, got, want)
			}
		}
	}
}

// TestRelativeMADSpread: the between-round spread estimates a normal distribution's
// standard deviation without bias, however few the rounds, and one outlier
// of three does not move it.
func TestRelativeMADSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{2, 3, 4, 5, 7, 12} {
		const trials, sigma = 40000, 0.02
		sum := 0.0
		xs := make([]float64, n)
		for range trials {
			for i := range xs {
				xs[i] = 100 * (1 + sigma*rng.NormFloat64())
			}
			sum += RelativeMADSpread(xs)
		}
		if got := sum / trials; got < 0.95*sigma || got > 1.05*sigma {
			t.Errorf("n=%d: mean spread %.4f, want %.4f within 5%%", n, got, sigma)
		}
	}
	if a, b := RelativeMADSpread([]float64{100, 101, 99}), RelativeMADSpread([]float64{100, 99, 500}); a != b {
		t.Errorf("an outlying round moved the spread: %v, then %v", a, b)
	}
}

// TestMedianCIMatchesBenchmath: the interval distbench records is the one
// benchstat prints for the same samples (see stats.MedianCI for the
// documented exceptions).
func TestMedianCIMatchesBenchmath(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for n := 1; n <= 30; n++ {
		if n == 24 {
			continue // go-moremath breaks an exact tie by rounding
		}
		xs := noisy(rng, 100, n)
		s := Summarize(xs)
		bm := benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(xs), &benchmath.DefaultThresholds), 0.95)
		if s.Median != bm.Center || s.CILo != bm.Lo || s.CIHi != bm.Hi {
			t.Errorf("n=%d: stats %v [%v, %v], benchmath %v [%v, %v]", n, s.Median, s.CILo, s.CIHi, bm.Center, bm.Lo, bm.Hi)
		}
	}
}

func TestSignTest(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    []float64
		want float64
	}{
		{"eight of one sign", []float64{.1, .2, .3, .4, .5, .6, .7, .8}, 2.0 / 256},
		{"eight of the other", []float64{-.1, -.2, -.3, -.4, -.5, -.6, -.7, -.8}, 2.0 / 256},
		{"seven of eight", []float64{-.1, .2, .3, .4, .5, .6, .7, .8}, 2 * 9.0 / 256},
		// Magnitudes do not count: two huge opposite pairs in 16.
		{"fourteen of sixteen", []float64{-5, -5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 2 * (1 + 16 + 120) / 65536.0},
		{"zeros dropped", []float64{0, 0, 1, 2, 3, 4, 5}, 2.0 / 32},
		{"balanced", []float64{-1, 1, -2, 2}, 1},
		{"empty", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SignTest(tc.d); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("SignTest(%v) = %v, want %v", tc.d, got, tc.want)
			}
		})
	}
}
