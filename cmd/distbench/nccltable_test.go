package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/results"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what the table prints now")

// ncclRow is one row of nccl-tests' table read as its own fixed-column
// readers read it: by the widths of its printf formats ("%12li  %12li  %8s
// %6s  %6s", then "  %7s  %6s  %6s  %6s" per side).
type ncclRow struct {
	size, count        int64
	typ, redop, root   string
	time, algbw, busbw [2]float64
	wrong              [2]string
}

var ncclColumns = []struct{ from, to int }{
	{0, 12}, {14, 26}, {28, 36}, {38, 44}, {46, 52},
	{54, 61}, {63, 69}, {71, 77}, {79, 85},
	{87, 94}, {96, 102}, {104, 110}, {112, 118},
}

func parseNCCLRow(line string) (ncclRow, error) {
	var r ncclRow
	if strings.HasPrefix(line, "#") || len(line) < 118 {
		return r, errors.New("not a row")
	}
	f := make([]string, len(ncclColumns))
	for i, c := range ncclColumns {
		if c.from > 0 && line[c.from-1] != ' ' {
			return r, errors.New("column " + strconv.Itoa(i) + " starts early: " + line)
		}
		f[i] = strings.TrimSpace(line[c.from:c.to])
	}
	var err error
	if r.size, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return r, err
	}
	if r.count, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return r, err
	}
	r.typ, r.redop, r.root = f[2], f[3], f[4]
	for side := range 2 {
		for j, dst := range []*float64{&r.time[side], &r.algbw[side], &r.busbw[side]} {
			if *dst, err = strconv.ParseFloat(f[5+4*side+j], 64); err != nil {
				return r, err
			}
		}
		r.wrong[side] = f[8+4*side]
	}
	return r, nil
}

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
		if got := floatStr(tt.v, tt.width); got != tt.want {
			t.Errorf("floatStr(%v, %d) = %q, want %q (nccl-tests' getFloatStr)", tt.v, tt.width, got, tt.want)
		}
	}
}

// TestComputeIterStats follows nccl-tests' computeIterStats: the upper
// median, nearest-rank percentiles, the population deviation, and the
// skipped leading samples left out.
func TestComputeIterStats(t *testing.T) {
	s := computeIterStats([]float64{1000, 4, 1, 3, 2}, 1)
	want := iterStats{min: 1, max: 4, avg: 2.5, p50: 3, p95: 4, p99: 4, stdev: 1.118033988749895, cvPct: 44.721359549995796, skipped: 1}
	if s != want {
		t.Errorf("got %+v\nwant %+v", s, want)
	}
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i)
	}
	if s := computeIterStats(hundred, 0); s.p99 != 99 || s.p95 != 95 || s.p50 != 51 {
		t.Errorf("1..100: p50 %v p95 %v p99 %v, want 51 95 99", s.p50, s.p95, s.p99)
	}
}

func TestCheckFlag(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{nil, 1},
		{[]string{"-c", "0"}, 0},
		{[]string{"-c", "3"}, 3},
		{[]string{"--check"}, 1},
		{[]string{"--check=false"}, 0},
		{[]string{"--check=true"}, 1},
		{[]string{"--check=2"}, 2},
		{[]string{"--datatype", "double", "--check=0"}, 0},
	}
	for _, tt := range tests {
		cmd := newRunCmd(&bytes.Buffer{}, &bytes.Buffer{})
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		f := cmd.Flags()
		if got := f.Lookup("check").Value.String(); got != strconv.Itoa(tt.want) {
			t.Errorf("%q: check %s, want %d", tt.args, got, tt.want)
		}
		// What the workers get: checked runs per point, or no check.
		spec, err := (&runFlags{strategy: "ring", coll: "allreduce", dtype: "float32", op: "sum", minBytes: "4K", maxBytes: "4K",
			stepFactor: 2, np: 2, iters: 1, inplace: "both", launcher: "local", timeout: time.Minute, average: -1, cycles: 1,
			check: checkCount{tt.want}}).spec()
		if err != nil || spec.Check != (tt.want > 0) || spec.CheckRuns != tt.want {
			t.Errorf("%q: spec check %v, runs %d, err %v", tt.args, spec.Check, spec.CheckRuns, err)
		}
	}
	code, _, stderr := runCLI(t, "run", "--check", "1")
	if code != 2 || !strings.Contains(stderr, `unexpected argument "1"`) || !strings.Contains(stderr, "--check alone means --check=1") {
		t.Errorf("--check 1: exit %d, %q", code, stderr)
	}
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
	versionLine = func() string { return "v0.0.0-test" }
	captureEnv = func() *results.Env { return &results.Env{Host: "node1", CPUModel: "Test CPU"} }
	t.Cleanup(func() {
		versionLine = buildVersion
		captureEnv = func() *results.Env { return ptr(results.CaptureEnv()) }
	})
	t.Setenv("NCCL_TESTS_MIN_BW", "")
	now := func() time.Time { return time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC) }
	spec := &job.Spec{Strategy: "ring", NP: 2, Iters: 4, Warmup: 1, Check: true, Link: "10Gbit,25us"}
	tests := []struct {
		name string
		out  ncclOutput
	}{
		{"default", ncclOutput{average: -1}},
		{"a1_I_S", ncclOutput{average: 1, perIter: true, perIterSkip: 1, timestamps: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &runFlags{inplace: "both", stepFactor: 256, lo: 4096, hi: 1 << 20, check: checkCount{1}}
			tt.out.args, tt.out.now = []string{"distbench", "run", "--collective=allgather"}, now
			var buf bytes.Buffer
			tw := newTable(&buf, spec, f, tt.out)
			for _, r := range tableRecords() {
				tw.add(r)
			}
			if failed, err := tw.footer(nil); failed || err != nil {
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
				if tt.out.perIter {
					// 5 + 2×8 columns and a timestamp's date and time.
					if n := len(strings.Fields(line)); n != 23 {
						t.Errorf("%d fields, want 23: %q", n, line)
					}
					continue
				}
				r, err := parseNCCLRow(line)
				if err != nil {
					t.Fatalf("row %q: %v", line, err)
				}
				// allgather's count is per rank, its root -1, as nccl-tests'.
				if r.count != r.size/4/2 || r.typ != "float" || r.redop != "none" || r.root != "-1" || r.wrong != [2]string{"0", "0"} {
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
	spec := &job.Spec{Strategy: "ring", NP: 2, Iters: 4, Warmup: 1, Check: true}
	f := &runFlags{inplace: "both", stepFactor: 256, lo: 4096, hi: 1 << 20, check: checkCount{1}}
	doc, got, err := createNCCLDoc(path, []string{"distbench", "run"}, "2026-11-26 01:02:03")
	if err != nil || got != path+".0" {
		t.Fatalf("createNCCLDoc over an existing file: %q, %v; want %s.0 as nccl-tests", got, err, path)
	}
	tw := newTable(&bytes.Buffer{}, spec, f, ncclOutput{average: 1, perIter: true})
	tw.doc = doc
	for _, r := range tableRecords() {
		tw.add(r)
	}
	// Before the footer, as an interrupted run leaves it: a valid
	// document with every row so far.
	var partial struct{ Results []json.RawMessage }
	if b, err := os.ReadFile(got); err != nil || json.Unmarshal(b, &partial) != nil || len(partial.Results) != 2 {
		t.Fatalf("the document before the footer: %v, %d results, want 2:\n%s", err, len(partial.Results), b)
	}
	if _, err := tw.footer(nil); err != nil {
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
		tw := newTable(&buf, &job.Spec{Strategy: "ring", NP: 3, Iters: 8}, &runFlags{inplace: "out", stepFactor: 2}, ncclOutput{average: -1})
		tw.add(mk(tt.slow))
		tw.footer(nil)
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
