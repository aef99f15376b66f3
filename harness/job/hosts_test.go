package job

import (
	"slices"
	"testing"
)

func TestHostsOf(t *testing.T) {
	for _, tc := range []struct {
		layout string
		np     int
		want   []int // nil: an error
	}{
		{"2x2", 4, []int{0, 0, 1, 1}},
		{"3,1", 4, []int{0, 0, 0, 1}},
		{"1, 2", 3, []int{0, 1, 1}},
		{"4x1", 4, []int{0, 1, 2, 3}},
		{"2x2", 3, nil},
		{"3,0", 3, nil},
		{"x2", 2, nil},
		{"two", 2, nil},
	} {
		got, err := HostsOf(tc.layout, tc.np)
		if (err == nil) != (tc.want != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("HostsOf(%q, %d) = %v, %v; want %v", tc.layout, tc.np, got, err, tc.want)
		}
	}
}
