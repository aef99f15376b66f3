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

// TestCollGolden prints osu_allreduce's table, plain and with -f, for
// fixed records whose ranks' means differ, and checks OSU's definitions:
// avg the mean over ranks of each rank's mean, min and max over ranks.
func TestCollGolden(t *testing.T) {
	allreduce, _ := LookupColl("osu_allreduce")
	recs := []*results.Record{
		{Collective: "allreduce", Bytes: 4, Iters: 1000, RankMeanUs: []float64{10, 12, 14, 20}},
		{Collective: "allreduce", Bytes: 8, Iters: 1000, RankMeanUs: []float64{11.111, 11.115, 11.2, 11.3}},
		{Collective: "allreduce", Bytes: 1 << 20, Iters: 100, RankMeanUs: []float64{1234.5, 1300, 1299.99, 1400.004}},
	}
	var buf bytes.Buffer
	for _, full := range []bool{false, true} {
		WriteCollHeader(&buf, CollHeader{Test: allreduce, Strategy: "ring", NP: 4, Link: "10Gbit,25us", Full: full})
		for _, r := range recs {
			WriteCollRow(&buf, r.Bytes, r, full)
		}
	}
	gather, _ := LookupColl("gather")
	WriteCollHeader(&buf, CollHeader{Test: gather, Strategy: "tree", NP: 2, Full: true})
	WriteCollRow(&buf, 1, &results.Record{Collective: "gather", Bytes: 2, Iters: 1000, TimeUsMean: 7.5}, true)
	golden(t, "coll.golden", buf.Bytes())

	if avg, lo, hi := CollLatency(recs[0]); avg != 14 || lo != 10 || hi != 20 {
		t.Errorf("CollLatency = %v %v %v, want 14 10 20 (OSU: the mean of rank means, their min and max)", avg, lo, hi)
	}
	for _, tt := range CollTests {
		for _, name := range []string{tt.Name, tt.Program, tt.Collective} {
			if got, ok := LookupColl(name); !ok || got != tt {
				t.Errorf("LookupColl(%q) = %v, %v", name, got, ok)
			}
		}
	}
}
