package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestOSUBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"osu"}, "osu: name a collective: allreduce, allgather"},
		{[]string{"osu", "allreduse"}, `osu: unknown collective "allreduse" (accepted: allreduce`},
		{[]string{"osu", "allreduce", "--np", "1"}, "--np 1: OSU's collective tests need at least 2 processes"},
		{[]string{"osu", "allreduce", "-m", "2"}, `-m "2": no size to measure (accepted: a MAX of at least 4 bytes`},
		{[]string{"osu", "bcast", "-i", "0"}, "-i 0: must be at least 1"},
	}
	for _, tt := range tests {
		code, _, stderr := runCLI(t, tt.args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: exit %d, %q; want exit 2 and one line with %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestOSUProcesses runs OSU's allreduce and allgather over real processes:
// OSU's columns, OSU's sizes (per rank for allgather), -i's iterations.
func TestOSUProcesses(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		sizes []int64
		full  bool
	}{
		{[]string{"osu", "allreduce", "--np", "3", "-f", "-m", "1:64", "-i", "3", "-x", "1"}, []int64{4, 8, 16, 32, 64}, true},
		{[]string{"osu", "osu_allgather", "--np", "2", "-m", "4", "-i", "2"}, []int64{1, 2, 4}, false},
	} {
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tt.args, code, stderr)
		}
		header := regexp.MustCompile(`(?m)^# Size       Avg Latency\(us\)(   Min Latency\(us\)   Max Latency\(us\)  Iterations)?$`).FindStringSubmatch(stdout)
		if header == nil || (header[1] != "") != tt.full {
			t.Errorf("%q: no OSU header (full %v):\n%s", tt.args, tt.full, stdout)
		}
		var sizes []int64
		for _, line := range strings.Split(stdout, "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			f := strings.Fields(line)
			size, _ := strconv.ParseInt(f[0], 10, 64)
			sizes = append(sizes, size)
			want := 2
			if tt.full {
				want = 5
			}
			if len(f) != want {
				t.Errorf("%q: %d columns, want %d: %q", tt.args, len(f), want, line)
				continue
			}
			avg, _ := strconv.ParseFloat(f[1], 64)
			if tt.full {
				lo, _ := strconv.ParseFloat(f[2], 64)
				hi, _ := strconv.ParseFloat(f[3], 64)
				if !(lo <= avg && avg <= hi) || f[4] != "3" {
					t.Errorf("%q: min %v avg %v max %v iterations %s: want min ≤ avg ≤ max and 3", tt.args, lo, avg, hi, f[4])
				}
			}
		}
		if !slices.Equal(sizes, tt.sizes) {
			t.Errorf("%q: sizes %v, want %v", tt.args, sizes, tt.sizes)
		}
	}
}
