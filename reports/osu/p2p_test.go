package osu

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/distbench/distbench/results"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what the tables print now")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -run %s -update, then review the diff):\n%s", path, t.Name(), got)
	}
}

func TestOSUSizes(t *testing.T) {
	tests := []struct {
		lo, hi int64
		want   []int64
	}{
		{0, 8, []int64{1, 2, 4, 8}}, // v7.4 skips 0: no elements
		{1, 1, []int64{1}},
		{3, 20, []int64{3, 6, 12}},
		{0, 0, nil},
		{4096, 4096, []int64{4096}},
	}
	for _, tt := range tests {
		if got := Sizes(tt.lo, tt.hi); !slices.Equal(got, tt.want) {
			t.Errorf("Sizes(%d, %d) = %v, want %v", tt.lo, tt.hi, got, tt.want)
		}
	}
	if n := len(Sizes(0, MaxSize)); n != 23 { // 1 … 4MiB
		t.Errorf("OSU's default latency sizes: %d, want 23", n)
	}
}

// TestP2PGolden prints osu_latency's and osu_bw's tables for fixed records.
func TestP2PGolden(t *testing.T) {
	var buf bytes.Buffer
	WriteP2PHeader(&buf, P2PHeader{Title: "Latency Test", Program: "osu_latency", Column: "Latency (us)", Strategy: "ring", Link: "10Gbit,25us"})
	for i, b := range []int64{1, 2, 4} {
		WriteP2PRow(&buf, &results.Record{Collective: "p2p-latency", Bytes: b, TimeUsMean: 20 + float64(i)})
	}
	WriteP2PHeader(&buf, P2PHeader{Title: "Bandwidth Test", Program: "osu_bw", Column: "Bandwidth (MB/s)", Strategy: "tree", Window: 64})
	WriteP2PRow(&buf, &results.Record{Collective: "p2p-bw", Bytes: 1 << 20, AlgBWGBs: 1.23456})
	golden(t, "p2p.golden", buf.Bytes())
}
