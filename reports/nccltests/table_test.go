package nccltests

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/results"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what the table prints now")

func TestFloatStr(t *testing.T) {
	tests := []struct {
		v     float64
		width int
		want  string
	}{
		{12.345, 7, "  12.35"},
		{1234.567, 7, "1234.57"},
		{12345.67, 7, "12345.7"},
		{1234567.8, 7, "1234568"},
		{12345678.9, 7, "1.2e+07"},
		{0.004, 6, "  0.00"},
		{123.456, 6, "123.46"},
		{1234.5, 6, "1234.5"},
		{123456.7, 6, "123457"},
		{1234567.8, 6, " 1e+06"},
	}
	for _, tt := range tests {
		if got := FloatStr(tt.v, tt.width); got != tt.want {
			t.Errorf("FloatStr(%v, %d) = %q, want %q (nccl-tests' getFloatStr)", tt.v, tt.width, got, tt.want)
		}
	}
}

// testConfig is the fixed run the golden tables describe, with the output
// options of opts.
func testConfig(opts Config) Config {
	c := Config{Args: []string{"distbench", "run", "--collective=allgather"}, Strategy: "ring", NP: 2, Transport: "tcp",
		Warmup: 1, Iters: 4, MinBytes: 4096, MaxBytes: 1 << 20, StepFactor: 256, CheckRuns: 1, Modes: "both",
		Version: "v0.0.0-test", Env: &results.Env{Host: "node1", CPUModel: "Test CPU"},
		Now: func() time.Time { return time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC) }}
	c.Average, c.PerIter, c.PerIterSkip, c.Timestamps = opts.Average, opts.PerIter, opts.PerIterSkip, opts.Timestamps
	return c
}

// tableRecords are a run's records as the harness emits them, fixed.
func tableRecords() []*results.Record {
	var recs []*results.Record
	for i, bytes := range []int64{4096, 1 << 20} {
		for _, inplace := range []bool{false, true} {
			f := float64(i*100 + 10)
			if inplace {
				f += 5
			}
			r := &results.Record{Kind: results.KindCollective, Collective: "allgather", Strategy: "ring", NP: 2, Bytes: bytes,
				Count: bytes / 4, DType: "float32", Root: -1, InPlace: inplace, Iters: 4, Wrong: 0,
				RankHosts: []string{"node1", "node2"}, RankPIDs: []int{101, 202},
				RankSamplesUs: [][]float64{{f, f + 1, f + 2, f + 3}, {f + 4, f, f, f}},
			}
			for k := range 2 {
				s := r.RankSamplesUs[k]
				r.RankMeanUs = append(r.RankMeanUs, (s[0]+s[1]+s[2]+s[3])/4)
			}
			if err := results.Fill(r, []float64{f + 4, f + 1, f + 2, f + 3}); err != nil {
				panic(err)
			}
			recs = append(recs, r)
		}
	}
	return recs
}

// TestTableGolden prints a fixed run through every output option: the
// table as nccl-tests prints it, with distbench's lines among its comments.
func TestTableGolden(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"default", Config{Average: -1}},
		{"a1_I_S", Config{Average: 1, PerIter: true, PerIterSkip: 1, Timestamps: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(tt.cfg)
			cfg.Link = "10Gbit,25us"
			var buf bytes.Buffer
			tw := NewTable(&buf, cfg)
			for _, r := range tableRecords() {
				tw.Add(r)
			}
			if failed, err := tw.Footer(nil); failed || err != nil {
				t.Fatal(failed, err)
			}
			golden := filepath.Join("testdata", "run_"+tt.name+".golden")
			if *update {
				os.MkdirAll("testdata", 0o755)
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestTableGolden -update)", err)
			}
			if buf.String() != string(want) {
				t.Errorf("table differs from %s (go test -run TestTableGolden -update, then review the diff):\n%s", golden, buf.String())
			}
			rows := 0
			for _, line := range strings.Split(buf.String(), "\n") {
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				rows++
				if tt.cfg.PerIter {
					// 5 + 2×8 columns and a timestamp's date and time.
					if n := len(strings.Fields(line)); n != 23 {
						t.Errorf("%d fields, want 23: %q", n, line)
					}
					continue
				}
				r, err := ParseRow(line)
				if err != nil {
					t.Fatalf("row %q: %v", line, err)
				}
				// allgather's count is per rank, its root -1, as nccl-tests'.
				if r.Count != r.Size/4/2 || r.Type != "float" || r.Redop != "none" || r.Root != "-1" || r.Wrong != [2]string{"0", "0"} {
					t.Errorf("row %+v", r)
				}
			}
			if rows != 2 {
				t.Errorf("%d rows, want 2", rows)
			}
		})
	}
}

// TestNCCLDoc writes -J's document for the fixed run and reads it with the
// field names nccl-tests' tools/analyze_perf_json.py reads.
func TestNCCLDoc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "perf.json")
	if err := os.WriteFile(path, []byte("taken"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc, got, err := CreateDoc(path, []string{"distbench", "run"}, time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC))
	if err != nil || got != path+".0" {
		t.Fatalf("CreateDoc over an existing file: %q, %v; want %s.0 as nccl-tests", got, err, path)
	}
	tw := NewTable(&bytes.Buffer{}, testConfig(Config{Average: 1, PerIter: true}))
	tw.SetDoc(doc)
	for _, r := range tableRecords() {
		tw.Add(r)
	}
	// Before the footer, as an interrupted run leaves it: a valid
	// document with every row so far.
	var partial struct{ Results []json.RawMessage }
	if b, err := os.ReadFile(got); err != nil || json.Unmarshal(b, &partial) != nil || len(partial.Results) != 2 {
		t.Fatalf("the document before the footer: %v, %d results, want 2:\n%s", err, len(partial.Results), b)
	}
	if _, err := tw.Footer(nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Version int `json:"version"`
		Config  struct {
			Iterations    int    `json:"iterations"`
			AggIterations int    `json:"aggregated_iterations"`
			PerIterSkip   int    `json:"per_iter_skip"`
			PerIterTiming string `json:"per_iter_timing"`
			Devices       []struct {
				Rank     int    `json:"rank"`
				PID      int    `json:"pid"`
				Hostname string `json:"hostname"`
			} `json:"devices"`
		} `json:"config"`
		Results []struct {
			Size    int64                                `json:"size"`
			Count   int64                                `json:"count"`
			Type    string                               `json:"type"`
			Root    string                               `json:"root"`
			OOP     struct{ Time, AlgBW, BusBW float64 } `json:"out_of_place"`
			OOPIter struct {
				AvgUs      float64     `json:"avg_us"`
				MinUs      float64     `json:"min_us"`
				MaxUs      float64     `json:"max_us"`
				P99Us      float64     `json:"p99_us"`
				CVPct      float64     `json:"cv_pct"`
				TimesUs    []float64   `json:"times_us"`
				PerProcess [][]float64 `json:"per_process_max_times_us"`
			} `json:"out_of_place_per_iter"`
			IPIter *struct{} `json:"in_place_per_iter"`
		} `json:"results"`
		OutOfBounds struct {
			Count int    `json:"count"`
			Okay  string `json:"okay"`
		} `json:"out_of_bounds"`
		AvgBusBW struct {
			Bandwidth float64 `json:"bandwidth"`
			Okay      string  `json:"okay"`
		} `json:"average_bus_bandwidth"`
		Errors  []string `json:"errors"`
		EndTime string   `json:"end_time"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Version != 3 || d.Config.Iterations != 4 || d.Config.AggIterations != 1 || d.Config.PerIterTiming != "true" ||
		len(d.Config.Devices) != 2 || d.Config.Devices[1].Hostname != "node2" || d.Config.Devices[1].PID != 202 {
		t.Errorf("header: %+v", d.Config)
	}
	if len(d.Results) != 2 {
		t.Fatalf("%d results, want 2", len(d.Results))
	}
	r := d.Results[0]
	// -a 1: the mean over ranks of each rank's mean, (11.5 + 11) / 2.
	if r.Size != 4096 || r.Count != 512 || r.Type != "float" || r.Root != "    -1" || r.OOP.Time != 11.25 || r.IPIter == nil {
		t.Errorf("result 0: %+v", r)
	}
	if it := r.OOPIter; it.MinUs != 11 || it.MaxUs != 14 || len(it.TimesUs) != 4 || len(it.PerProcess) != 2 || it.PerProcess[1][0] != 14 {
		t.Errorf("result 0 per iteration: %+v", it)
	}
	if d.OutOfBounds.Count != 0 || d.OutOfBounds.Okay != "true" || d.AvgBusBW.Okay != "unchecked" || d.AvgBusBW.Bandwidth <= 0 ||
		d.Errors == nil || d.EndTime == "" {
		t.Errorf("footer: %+v %+v %v %q", d.OutOfBounds, d.AvgBusBW, d.Errors, d.EndTime)
	}
}

// TestTableSlowestRank: a rank slower than the median rank beyond the
// noise is named after the table, with its host and pid; equal ranks are
// not.
func TestTableSlowestRank(t *testing.T) {
	mk := func(slow float64) *results.Record {
		r := &results.Record{Kind: results.KindCollective, Collective: "broadcast", Strategy: "ring", NP: 3, Bytes: 16384,
			Count: 4096, DType: "float32", Root: 0, Iters: 8, RankHosts: []string{"a", "b", "c"}, RankPIDs: []int{1, 2, 3}}
		for k := range 3 {
			var s []float64
			for i := range 8 {
				v := 10 + float64(i%3)
				if k == 2 {
					v *= slow
				}
				s = append(s, v)
			}
			r.RankSamplesUs = append(r.RankSamplesUs, s)
		}
		results.SetRanks(r, r.RankSamplesUs, true)
		if err := results.Fill(r, r.RankSamplesUs[2]); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tt := range []struct {
		slow float64
		want string
	}{
		{1, ""},
		{3, "# slowest rank: rank 2 on c (pid 3), slower than the median rank beyond the noise in 1 of 1 points, up to 3.00× (16384 B float out-of-place)\n"},
	} {
		var buf bytes.Buffer
		tw := NewTable(&buf, Config{Strategy: "ring", NP: 3, Iters: 8, Modes: "out", StepFactor: 2, Average: -1})
		tw.Add(mk(tt.slow))
		tw.Footer(nil)
		got := ""
		for _, line := range strings.SplitAfter(buf.String(), "\n") {
			if strings.HasPrefix(line, "# slowest rank") {
				got += line
			}
		}
		if got != tt.want {
			t.Errorf("slow ×%v: got %q, want %q", tt.slow, got, tt.want)
		}
	}
}

// TestParseRowUnchecked: an unchecked row, as nccl-tests prints it with
// "    N/A", reads back.
func TestParseRowUnchecked(t *testing.T) {
	cfg := testConfig(Config{Average: -1})
	cfg.CheckRuns = 0
	var buf bytes.Buffer
	tw := NewTable(&buf, cfg)
	for _, r := range tableRecords() {
		tw.Add(r)
	}
	tw.Footer(nil)
	rows := 0
	for _, line := range strings.Split(buf.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := ParseRow(line)
		if err != nil || r.Wrong != [2]string{"N/A", "N/A"} || r.Size == 0 || r.BusBW[1] <= 0 {
			t.Errorf("%q: %+v, %v", line, r, err)
		}
		rows++
	}
	if rows != 2 {
		t.Errorf("%d rows, want 2", rows)
	}
}
