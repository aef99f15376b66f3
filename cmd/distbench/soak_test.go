package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/results"
)

func TestSoakBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"zero duration", []string{"soak", "--duration", "0s"}, "--duration 0s: must be positive"},
		{"tiny max bytes", []string{"soak", "--max-bytes", "4"}, "soak max bytes 4: must be from 8 B to 1 GiB"},
		{"one checkpoint", []string{"soak", "--checkpoints", "1"}, "soak checkpoints 1: must be from 2 to 1000"},
		{"unknown strategy", []string{"soak", "--strategy", "carrier-pigeon"}, `unknown strategy "carrier-pigeon"`},
		{"np zero", []string{"soak", "--np", "0"}, "np 0: must be at least 1"},
		{"bad option", []string{"soak", "--opt", "chunk"}, `--opt "chunk": want key=value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line containing %q", code, stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("ran despite bad input:\n%s", stdout)
			}
		})
	}
}

// TestSoakProcesses soaks every strategy briefly in real processes: every
// launch must pass, and its record must account for every rank.
func TestSoakProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	jsonPath := filepath.Join(t.TempDir(), "soak.json")
	code, stdout, stderr := runCLI(t, "soak", "--strategy", "ring,tree,ps", "--np", "2,3",
		"--duration", "6s", "--checkpoints", "3", "--max-bytes", "64KiB", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	recs := readJSONL(t, jsonPath)
	if len(recs) != 6 {
		t.Fatalf("%d records, want 6 (3 strategies × 2 world sizes)\n%s", len(recs), stdout)
	}
	for _, r := range recs {
		s := r.Soak
		if r.Kind != results.KindSoak || s == nil || s.Ops == 0 || s.Wrong != 0 || len(s.Ranks) != r.NP {
			t.Errorf("%s np %d: kind %q, soak %+v; want a soak record with operations, no wrong element and %d ranks", r.Strategy, r.NP, r.Kind, s, r.NP)
			continue
		}
		for _, pr := range s.Ranks {
			if len(pr.Goroutines) != 3 || len(pr.HeapBytes) != 3 || len(pr.RSSBytes) != 3 || pr.Goroutines[0] == 0 || pr.HeapBytes[0] == 0 {
				t.Errorf("%s np %d rank %d: footprint %+v, want 3 non-zero checkpoints", r.Strategy, r.NP, pr.Rank, pr)
			}
		}
	}
	if n := strings.Count(stdout, "  ok"); n != 6 {
		t.Errorf("%d launches ok in the table, want 6:\n%s", n, stdout)
	}
}

func TestSoakVerdict(t *testing.T) {
	rank := func(g [2]int, heap, rss [2]int64) results.SoakRank {
		return results.SoakRank{Goroutines: g[:], HeapBytes: heap[:], RSSBytes: rss[:]}
	}
	flat := rank([2]int{20, 21}, [2]int64{50 << 20, 60 << 20}, [2]int64{100 << 20, 130 << 20})
	tests := []struct {
		name string
		rec  *results.Record
		err  error
		want string
	}{
		{"flat", &results.Record{Soak: &results.SoakStats{Ops: 9, Ranks: []results.SoakRank{flat}}}, nil, "ok"},
		{"launch failed", nil, errors.New("rank 1 (127.0.0.1:4000) closed the connection"), "FAILED: rank 1 (127.0.0.1:4000)"},
		{"no record", nil, nil, "FAILED: no soak record"},
		{"failed in the soak", &results.Record{Error: "soak operation 7: timed out", Soak: &results.SoakStats{}}, nil, "FAILED: soak operation 7"},
		{"wrong", &results.Record{Soak: &results.SoakStats{Wrong: 3, Ranks: []results.SoakRank{flat}}}, nil, "WRONG: 3 elements"},
		{"goroutines grew", &results.Record{Soak: &results.SoakStats{Ranks: []results.SoakRank{
			rank([2]int{20, 40}, [2]int64{1, 1}, [2]int64{1, 1})}}}, nil, "GREW: rank 0 goroutines +20"},
		{"heap grew", &results.Record{Soak: &results.SoakStats{Ranks: []results.SoakRank{
			rank([2]int{20, 20}, [2]int64{50 << 20, 200 << 20}, [2]int64{1, 1})}}}, nil, "GREW: rank 0 heap +150.0 MiB"},
		{"heap sawtooth", &results.Record{Soak: &results.SoakStats{Ranks: []results.SoakRank{{
			Goroutines: []int{89, 89, 92, 89, 89, 89}, HeapBytes: []int64{51 << 20, 80 << 20, 53 << 20, 94 << 20, 60 << 20, 77 << 20},
			RSSBytes: []int64{107 << 20, 159 << 20, 174 << 20, 161 << 20, 189 << 20, 167 << 20}}}}}, nil, "ok"},
		{"heap leak", &results.Record{Soak: &results.SoakStats{Ranks: []results.SoakRank{{
			Goroutines: []int{89, 89, 89, 89, 89, 89}, HeapBytes: []int64{50 << 20, 70 << 20, 90 << 20, 110 << 20, 130 << 20, 150 << 20},
			RSSBytes: []int64{100 << 20, 100 << 20, 100 << 20, 100 << 20, 100 << 20, 100 << 20}}}}}, nil, "GREW: rank 0 heap +20.0 MiB"},
		{"rss grew", &results.Record{Soak: &results.SoakStats{Ranks: []results.SoakRank{
			rank([2]int{20, 20}, [2]int64{1, 1}, [2]int64{100 << 20, 1 << 30})}}}, nil, "GREW: rank 0 rss +924.0 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := soakVerdict(tt.rec, tt.err); !strings.HasPrefix(got, tt.want) {
				t.Errorf("verdict %q, want it to start with %q", got, tt.want)
			}
		})
	}
}
