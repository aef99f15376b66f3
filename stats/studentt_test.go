package stats

import (
	"math"
	"testing"
)

// Reference values from R: pt(t, df, lower.tail = FALSE) and qt(1 - p, df).
func TestStudentT(t *testing.T) {
	for _, tc := range []struct {
		t, df, sf float64
	}{
		{0, 5, 0.5},
		{1, 1, 0.25},
		{2.015048, 5, 0.05},
		{2.131450, 15, 0.025},
		{-2.131450, 15, 0.975},
		{3.732834, 15, 0.001},
		{1.959964, 1e6, 0.025},
	} {
		if got := StudentTSF(tc.t, tc.df); math.Abs(got-tc.sf) > 1e-6 {
			t.Errorf("StudentTSF(%v, %v) = %v, want %v", tc.t, tc.df, got, tc.sf)
		}
		if tc.sf < 0.5 {
			if got := StudentTQuantile(tc.sf, tc.df); math.Abs(got-tc.t) > 1e-5 {
				t.Errorf("StudentTQuantile(%v, %v) = %v, want %v", tc.sf, tc.df, got, tc.t)
			}
		}
	}
	if !math.IsNaN(StudentTQuantile(0, 3)) || !math.IsNaN(StudentTSF(1, 0)) {
		t.Error("out-of-range arguments should give NaN")
	}
}
