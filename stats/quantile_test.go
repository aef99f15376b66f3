package stats

import (
	"math"
	"testing"
)

func TestQuantile(t *testing.T) {
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"empty", nil, 0.5, 0},
		{"one", []float64{7}, 0.99, 7},
		{"min", []float64{1, 2, 3, 4}, 0, 1},
		{"max", []float64{1, 2, 3, 4}, 1, 4},
		{"interpolates", []float64{1, 2, 3, 4, 5, 6}, 0.05, 1.25},
		{"upper tail", []float64{10, 11, 12, 13, 100}, 0.95, 82.6},
		{"median of even", []float64{1, 2, 3, 4}, 0.5, 2.5},
		{"ties", []float64{2, 2, 2, 9}, 0.5, 2},
		{"infinite endpoint", []float64{1, math.Inf(1)}, 0.5, math.Inf(1)},
		{"huge finite", []float64{-math.MaxFloat64, math.MaxFloat64}, 0.5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quantile(tt.sorted, tt.p); got != tt.want && !near(got, tt.want, 1e-12) {
				t.Errorf("Quantile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

// TestMedian pins the one median distbench uses: the mean of the middle pair
// of an even count (training's step times once took the upper one).
func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{3}, 3},
		{"odd unsorted", []float64{5, 1, 3}, 3},
		{"even averages the middle pair", []float64{4, 1, 3, 2}, 2.5},
		{"outlier", []float64{1, 2, 1000}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.xs...)
			if got := Median(in); got != tt.want {
				t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.xs[i] {
					t.Fatalf("Median modified its input: %v", in)
				}
			}
			if len(tt.xs) > 0 {
				if s := Summarize(tt.xs); s.Median != tt.want {
					t.Errorf("Summarize(%v).Median = %v, Median says %v", tt.xs, s.Median, tt.want)
				}
			}
		})
	}
}

func TestRelativeIQRSpread(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"too few", []float64{1, 2, 3}, 0},
		{"constant", []float64{5, 5, 5, 5, 5}, 0},
		{"non-positive median", []float64{-3, -2, -1, 0, 0}, 0},
		// Quartiles 2 and 4 of 1..5, median 3: (4−2)/1.349/3.
		{"one to five", []float64{5, 4, 3, 2, 1}, 2 / 1.349 / 3},
		// A slow outlier moves the upper quartile by a step, not by its size.
		{"outlier", []float64{1, 2, 3, 4, 1000}, 2 / 1.349 / 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RelativeIQRSpread(tt.xs); !near(got, tt.want, 1e-12) {
				t.Errorf("RelativeIQRSpread(%v) = %v, want %v", tt.xs, got, tt.want)
			}
		})
	}
}

func TestMannWhitney(t *testing.T) {
	lo := []float64{10, 11, 12, 13, 14, 15, 16, 17}
	hi := []float64{20, 21, 22, 23, 24, 25, 26, 27}
	tests := []struct {
		name       string
		x, y       []float64
		maxP, minP float64
		warn       bool
	}{
		{"disjoint", lo, hi, 0.001, 0, false},
		{"same", lo, lo, 1, 0.9, false},
		{"too few to tell", []float64{1, 2}, []float64{3, 4}, 1, 0.05, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := append([]float64(nil), tt.x...)
			p, warnings := MannWhitney(x, tt.y, 0.05)
			if p > tt.maxP || p < tt.minP {
				t.Errorf("p = %v, want in [%v, %v]", p, tt.minP, tt.maxP)
			}
			if (len(warnings) > 0) != tt.warn {
				t.Errorf("warnings %v, want some: %v", warnings, tt.warn)
			}
			for i := range x {
				if x[i] != tt.x[i] {
					t.Fatalf("MannWhitney modified its input: %v", x)
				}
			}
		})
	}
}

// TestScaledMAD: the absolute spread is in the values' own units and does
// not care where they are centred, zero and negative medians included, which
// is what residuals and log ratios need.
func TestScaledMAD(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"too few", []float64{7}, 0},
		{"constant", []float64{5, 5, 5}, 0},
		// Deviations from the median 0: 0.1, 0.05, 0, 0.05, 0.1; their median 0.05.
		{"centred on zero", []float64{-0.1, -0.05, 0, 0.05, 0.1}, 1.4826 * 0.05},
		{"negative median", []float64{-0.11, -0.06, -0.01, 0.04, 0.09}, 1.4826 * 0.05},
		{"shifted far", []float64{99.9, 99.95, 100, 100.05, 100.1}, 1.4826 * 0.05},
		{"one outlier of three", []float64{1, 2, 1000}, 1.4826 * 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ScaledMAD(tt.xs); !near(got, tt.want, 1e-9) {
				t.Errorf("ScaledMAD(%v) = %v, want %v", tt.xs, got, tt.want)
			}
		})
	}
}

func TestLowerMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2}, // the lesser of the middle pair, not 2.5
	} {
		if got := LowerMedian(tc.xs); got != tc.want {
			t.Errorf("LowerMedian(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}
