package results

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"
)

func TestBenchName(t *testing.T) {
	tests := []struct {
		r    Record
		want string
	}{
		{Record{Collective: "allreduce", Strategy: "ring", NP: 4, Bytes: 16 << 20, DType: "float32", Op: "sum"},
			"AllReduce/strategy=ring/np=4/bytes=16MiB/dtype=float32"},
		{Record{Collective: "allreduce", Peer: "mpi", NP: 2, Bytes: 1000, DType: "float64", Op: "max", InPlace: true},
			"AllReduce/peer=mpi/np=2/bytes=1000B/dtype=float64/op=max/inplace=true"},
		{Record{Collective: "broadcast", Strategy: "tree", NP: 8, Bytes: 4 << 10, DType: "uint8", Root: 3, Link: "10g lan",
			Options: map[string]string{"chunk": "64KiB", "a/b": "c d"}},
			"Broadcast/strategy=tree/np=8/bytes=4KiB/dtype=uint8/root=3/link=10g_lan/a_b=c_d/chunk=64KiB"},
		{Record{Collective: "weird_op", Strategy: "ring", NP: 1, Bytes: 0},
			"Weird_op/strategy=ring/np=1/bytes=0B"},
		// Root -1: a collective without a root names none.
		{Record{Collective: "allgather", Strategy: "ring", NP: 4, Bytes: 4 << 10, DType: "float32", Root: -1},
			"AllGather/strategy=ring/np=4/bytes=4KiB/dtype=float32"},
		{Record{Collective: "allreduce", Strategy: "ring", NP: 4, Bytes: 4 << 10, DType: "float32", Op: "sum", Root: -1},
			"AllReduce/strategy=ring/np=4/bytes=4KiB/dtype=float32"},
		{Record{Collective: "gather", Strategy: "ring", NP: 4, Bytes: 4 << 10, DType: "float32", Root: 2},
			"Gather/strategy=ring/np=4/bytes=4KiB/dtype=float32/root=2"},
		{Record{Collective: "scatter", Strategy: "ring", NP: 4, Bytes: 4 << 10, DType: "float32", Root: 0},
			"Scatter/strategy=ring/np=4/bytes=4KiB/dtype=float32"},
	}
	for _, tt := range tests {
		if got := BenchName(&tt.r); got != tt.want {
			t.Errorf("BenchName = %q, want %q", got, tt.want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0B"}, {1, "1B"}, {1000, "1000B"}, {1024, "1KiB"}, {1536, "1536B"},
		{16 << 20, "16MiB"}, {1 << 30, "1GiB"}, {3 << 30, "3GiB"}, {(1 << 20) + 1024, "1025KiB"},
	}
	for _, tt := range tests {
		if got := FormatSize(tt.n); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestBenchFile reads results.bench back with x/perf's own reader, as
// benchstat will.
func TestBenchFile(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	r := point("a", 4, 1000, 2000) // 1 MiB in 1 ms and 2 ms
	r.AlgBWGBs, r.BusBWGBs = 1.048576, 1.572864
	w.Write(r)
	w.Write(&Record{Kind: KindCollective, Point: "failed", Error: "x", SamplesUs: []float64{1}})
	w.Write(&Record{Kind: KindTrainStep, Loss: 1})
	w.Finish()

	f, err := os.Open(filepath.Join(dir, BenchFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := benchfmt.NewReader(f, BenchFileName)
	var results []*benchfmt.Result
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.Result:
			results = append(results, rec.Clone())
		case *benchfmt.SyntaxError:
			t.Errorf("syntax error: %v", rec)
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("%d results, want 2 (one per sample of the one good point)", len(results))
	}
	wantCfg := map[string]string{"cpu": "Test CPU 9000", "commit": "abc123"}
	for k, v := range wantCfg {
		if got := results[0].GetConfig(k); got != v {
			t.Errorf("config %s = %q, want %q", k, got, v)
		}
	}
	if results[0].GetConfig("goos") == "" || results[0].GetConfig("goarch") == "" {
		t.Errorf("goos/goarch missing")
	}
	if got := results[0].Name.String(); got != "AllReduce/strategy=ring/np=4/bytes=1MiB/dtype=float32/inplace=true" {
		t.Errorf("name %q", got)
	}
	want := []map[string]float64{
		{"sec/op": 1e-3, "algbw-B/s": 1.048576e9, "busbw-B/s": 1.572864e9},
		{"sec/op": 2e-3, "algbw-B/s": 0.524288e9, "busbw-B/s": 0.786432e9},
	}
	for i, res := range results {
		if res.Iters != 1 {
			t.Errorf("iters %d", res.Iters)
		}
		for unit, v := range want[i] {
			got, ok := res.Value(unit)
			if !ok || math.Abs(got-v) > 1e-9*v {
				t.Errorf("sample %d: %s = %v (%v), want %v", i, unit, got, ok, v)
			}
		}
	}
	if rd.Units().GetBetter("busbw-B/s") != 1 || rd.Units().GetBetter("algbw-B/s") != 1 {
		t.Errorf("bandwidth units are not marked better=higher")
	}
	data, _ := os.ReadFile(filepath.Join(dir, BenchFileName))
	if !strings.HasPrefix(string(data), "Unit busbw-B/s better=higher\n") {
		t.Errorf("results.bench starts %q", string(data)[:40])
	}
	// What benchstat prints: it tidies units (benchunit.Tidy) then scales
	// each with the prefixes of its class. Bandwidths must come through
	// unconverted and print with byte prefixes, never as "786.4m".
	for _, tt := range []struct {
		unit string
		v    float64
		want string
	}{
		{"busbw-B/s", 1.572864e9, "1.465Gi"},
		{"busbw-B/s", 0.786432e9, "750.0Mi"},
		{"algbw-B/s", 0.524288e9, "500.0Mi"},
	} {
		v, unit := benchunit.Tidy(tt.v, tt.unit)
		if got := benchunit.Scale(v, benchunit.ClassOf(unit)); unit != tt.unit || got != tt.want {
			t.Errorf("benchstat shows %v %s as %s %s, want %s %s", tt.v, tt.unit, got, unit, tt.want, tt.unit)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{254*time.Second + 400*time.Millisecond, "4m14s"},
		{12*time.Second + 600*time.Millisecond, "13s"},
		{2345 * time.Millisecond, "2.3s"},
		{340*time.Millisecond + 200*time.Microsecond, "340ms"},
		{1500 * time.Microsecond, "2ms"},
		{800 * time.Microsecond, "800µs"},
		{0, "0s"},
	} {
		if got := FormatDuration(tt.d); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
