package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/reports/nccltests"
	"github.com/distbench/distbench/results"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, &out, &errb, args)
	return code, out.String(), errb.String()
}

func TestRunBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in the one stderr line
	}{
		{"unknown strategy", []string{"run", "--strategy", "carrier-pigeon"}, `unknown strategy "carrier-pigeon" (registered: `},
		{"unknown dtype", []string{"run", "--dtype", "float8"}, `unknown dtype "float8" (accepted: float32`},
		{"unknown op", []string{"run", "--op", "xor"}, `unknown op "xor" (accepted: sum, prod, max, min, avg, mulsum)`},
		{"np zero", []string{"run", "--np", "0"}, "--np 0: must be at least 1"},
		{"shm across simulated hosts", []string{"run", "--np", "2", "--transport", "shm", "--hosts", "1,1"},
			`transport shm with hosts "1,1": shared memory joins ranks of one host`},
		{"min above max", []string{"run", "-b", "1MiB", "-e", "4KiB"}, "--minbytes 1MiB is larger than --maxbytes 4KiB"},
		{"not a multiple", []string{"run", "-b", "6", "-e", "6"}, "size 6 bytes is not a multiple of float32's 4 bytes"},
		{"malformed size", []string{"run", "-b", "4KB?"}, `--minbytes: malformed size "4KB?"`},
		{"unknown collective", []string{"run", "--collective", "allreduse"}, `unknown collective "allreduse" (accepted: allgather, allreduce`},
		{"bad link", []string{"run", "--link", "fast"}, "fast"},
		{"unknown transport", []string{"run", "--transport", "udp"}, `--transport: unknown transport "udp" (accepted: auto, tcp, shm)`},
		{"unknown sweep transport", []string{"sweep", "--transport", "tcp,udp", "--dry-run"}, `--transport: unknown transport "udp" (accepted: auto, tcp, shm)`},
		{"bad option", []string{"run", "--opt", "chunk=huge"}, "chunk"},
		{"unknown flag", []string{"run", "--frobnicate"}, "unknown flag: --frobnicate"},
		{"root out of range", []string{"run", "--collective", "broadcast", "--np", "2", "--root", "5"}, "root 5 out of range for np 2"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"average out of range", []string{"run", "-a", "4"}, `invalid argument "4" for "-a, --average" flag: want 0 (rank 0), 1 (mean over ranks), 2 (min), 3 (max) or median`},
		{"per_iter_timing not 0 or 1", []string{"run", "-I", "2"}, "-I/--per_iter_timing 2 (accepted: 0 or 1)"},
		{"per_iter_skip without -I", []string{"run", "-K", "2"}, "-K/--per_iter_skip 2 needs -I 1"},
		{"per_iter_skip past iters", []string{"run", "-I", "1", "-K", "20", "-n", "20"}, "-K/--per_iter_skip 20 (accepted: 0 to 19, fewer than --iters)"},
		{"negative cycles", []string{"run", "-N", "-1"}, "-N/--run_cycles -1 (accepted: 0 to repeat until interrupted"},
		{"report_timestamps not 0 or 1", []string{"run", "-S", "3"}, "-S/--report_timestamps 3 (accepted: 0 or 1)"},
		{"check not a count", []string{"run", "-c", "some"}, `invalid argument "some" for "-c, --check-count" flag: want a count of checked runs (0 for none) or true/false`},
		{"all types need whole doubles", []string{"run", "-d", "all", "-b", "4", "-e", "64"}, "size 4 bytes is not a multiple of int64's 8 bytes (accepted: multiples of 8)"},
		{"unknown dtype or all", []string{"run", "-d", "float8"}, `(accepted: float32, float64, float16, bfloat16, int32, int64, uint8, int8, uint32, uint64, f8e4m3, f8e5m2), or all`},
		{"timeout too short", []string{"run", "--timeout", "1ns"}, "--timeout 1ns: too short (accepted: 1s or more)"},
		{"stepfactor NaN", []string{"run", "-f", "NaN"}, "--stepfactor NaN: want a finite number greater than 1, such as 2"},
		{"stepfactor Inf", []string{"run", "-f", "+Inf"}, "--stepfactor +Inf: want a finite number greater than 1"},
		{"stepfactor negative", []string{"run", "-f", "-2", "-b", "4K", "-e", "4K"}, "--stepfactor -2: want a finite number greater than 1"}, // 0 to 1 step by -i, as nccl-tests
		{"stepfactor too fine", []string{"run", "-f", "1.0000001", "-b", "4", "-e", "1G"}, "--minbytes 4 to --maxbytes 1G: more than 4096 sizes from 4 to 1073741824 bytes (accepted: a larger step or factor)"},
		{"stepbytes not whole elements", []string{"run", "-b", "4", "-e", "64", "-i", "6"}, "--stepbytes 6: not a whole number of float32 elements (accepted: multiples of 4 bytes)"},
		{"size above the limit", []string{"run", "-e", "2PiB"}, `--maxbytes: size "2PiB" too large (accepted: at most 1PiB, 1125899906842624 bytes)`},
		{"servers past the process limit", []string{"run", "--strategy", "ps", "--opt", "placement=dedicated", "--opt", "servers=520", "--np", "1"},
			"np 1 and 520 dedicated servers: 521 processes, but at most 512 local processes (accepted: np plus servers up to 512)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "distbench: ") || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", stderr, tt.want)
			}
			if strings.Contains(stdout, "# Avg bus bandwidth") {
				t.Errorf("measured despite bad input:\n%s", stdout)
			}
		})
	}
}

// TestRunMemory: sizes whose buffers cannot fit in this machine are refused
// before any worker starts (which would die of "runtime: out of memory"),
// saying how much is needed and how much there is. 1PiB, the largest size
// accepted, fits nowhere.
func TestRunMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the memory check reads /proc/meminfo")
	}
	want := regexp.MustCompile(`^distbench: allreduce of 1PiB float32 out-of-place needs at least 4PiB of memory here \(2 ranks × 2PiB of buffers\), ` +
		`but [\d.]+[KMGT]iB is available \((MemAvailable in /proc/meminfo|the memory cgroup's limit in /sys/fs/cgroup/\S+)\); ` +
		`1 other point does not fit either; accepted: sizes whose buffers fit, at most [\d.]+[KMGT]iB a rank here\n$`)
	code, stdout, stderr := runCLI(t, "run", "-b", "1PiB", "-e", "1PiB", "--np", "2")
	if code != 2 || !want.MatchString(stderr) || stdout != "" {
		t.Errorf("exit %d, stderr %q, stdout %q; want exit 2 and one line matching %s", code, stderr, stdout, want)
	}
}

// TestRunSizeSteps: a factor that does not advance a size by a whole element
// advances it by one, and one that gives sizes between elements is rounded
// to them: every size up to --maxbytes is measured, none silently dropped.
func TestRunSizeSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	tests := []struct {
		args []string
		want []int64
	}{
		{[]string{"-b", "4", "-e", "32", "-f", "1.0000001"}, []int64{4, 8, 12, 16, 20, 24, 28, 32}},
		{[]string{"-b", "4", "-e", "40", "-f", "1.5"}, []int64{4, 8, 12, 16, 24, 36}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			jsonPath := filepath.Join(t.TempDir(), "out.json")
			args := append([]string{"run", "--np", "1", "--iters", "1", "--warmup", "0", "--inplace", "in", "--json", jsonPath, "--timeout", "1m"}, tt.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			var got []int64
			for _, r := range readJSONL(t, jsonPath) {
				got = append(got, r.Bytes)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("measured sizes %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStrategies(t *testing.T) {
	code, stdout, _ := runCLI(t, "strategies")
	if code != 0 || !strings.Contains(stdout, "ring ") {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
}

// TestRunProcesses runs real worker processes over real TCP and checks the
// table, the JSON records and the correctness count.
func TestRunProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	code, stdout, stderr := runCLI(t, "run", "--strategy", "ring", "--np", "3", "--collective", "allreduce",
		"-b", "4KiB", "-e", "1MiB", "-f", "16", "--iters", "5", "--warmup", "1", "-c", "1", "--json", jsonPath, "--timeout", "1m")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rows int
	for _, line := range strings.Split(stdout, "\n") {
		if r, err := nccltests.ParseRow(line); err == nil {
			rows++
			if r.Wrong != [2]string{"0", "0"} || r.Type != "float" || r.Redop != "sum" || r.Root != "-1" || r.BusBW[0] < r.AlgBW[0] {
				t.Errorf("row %+v: %s", r, line)
			}
		}
	}
	if rows != 3 { // 4KiB, 64KiB, 1MiB
		t.Errorf("%d table rows, want 3:\n%s", rows, stdout)
	}
	if !strings.Contains(stdout, "# Out of bounds values : 0 OK") || !strings.Contains(stdout, "# Avg bus bandwidth") ||
		!strings.Contains(stdout, "# bytes on the wire per operation") {
		t.Errorf("missing footer:\n%s", stdout)
	}
	recs := readJSONL(t, jsonPath)
	if len(recs) != 6 {
		t.Fatalf("%d JSON records, want 6", len(recs))
	}
	for _, r := range recs {
		if r.Collective != "allreduce" || r.Strategy != "ring" || r.NP != 3 || r.DType != "float32" || r.Op != "sum" ||
			r.TimeUs <= 0 || r.TimeUsP95 < r.TimeUs || r.AlgBWGBs <= 0 || r.BusBWGBs <= r.AlgBWGBs || r.Wrong != 0 || r.Count*4 != r.Bytes ||
			len(r.SamplesUs) != r.Iters || slices.Min(r.SamplesUs) > r.TimeUs || slices.Max(r.SamplesUs) < r.TimeUs {
			t.Errorf("bad record: %+v", r)
		}
		// Over TCP between processes, each rank sends what the ring's
		// schedule says: the whole buffer n−1 times up to 32KiB, 2(n−1)/n
		// of it above (the segmented pass, what busbw assumes).
		want := 4.0 / 3 * float64(r.Bytes)
		if r.Bytes <= 32<<10 {
			want = 2 * float64(r.Bytes)
		}
		if len(r.WireSentBytes) != 3 || math.Abs(slices.Max(r.WireSentBytes)/want-1) > 0.01 || math.Abs(r.WireBusiestBytes/want-1) > 0.01 {
			t.Errorf("%s: wire bytes sent %v, busiest %v, want %.0f per rank", r.Point, r.WireSentBytes, r.WireBusiestBytes, want)
		}
	}
}

// TestRunJSONReport: the records of run --json are a run directory's
// (made if it does not exist), so report, compare and export read them as
// they read a sweep's.
func TestRunJSONReport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := filepath.Join(t.TempDir(), "runs", "gather")
	code, stdout, stderr := runCLI(t, "run", "--strategy", "ring", "--np", "2", "--collective", "gather",
		"-b", "4KiB", "-e", "16KiB", "-f", "4", "--iters", "6", "--warmup", "1", "--json", filepath.Join(dir, results.FileName), "--timeout", "1m")
	if code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Env == nil || len(run.Env.Planned) != 4 || len(run.Records) != 4 || !run.Complete() || len(run.Missing()) != 0 {
		t.Fatalf("env %+v, %d records, complete %v, missing %v", run.Env, len(run.Records), run.Complete(), run.Missing())
	}
	for _, r := range run.Records {
		if r.Schema != results.SchemaVersion || r.BusBWGBs != r.AlgBWGBs/2 {
			t.Errorf("record %s: schema %d, algbw %v, busbw %v (want algbw/2 at np 2)", r.Point, r.Schema, r.AlgBWGBs, r.BusBWGBs)
		}
	}
	if code, stdout, stderr = runCLI(t, "report", dir); code != 0 {
		t.Fatalf("report: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.md")); err != nil {
		t.Error(err)
	}
	// The same run on both sides: nothing regressed (exit 0), or too few
	// samples to judge (3).
	code, stdout, stderr = runCLI(t, "compare", dir, dir, "--out", t.TempDir())
	if code != 0 && code != 3 {
		t.Fatalf("compare: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// export: a benchfmt line per sample of each point, a CSV row per record.
	code, stdout, stderr = runCLI(t, "export", "bench", dir)
	if n := strings.Count(stdout, "\nBenchmarkGather/strategy=ring/np=2/bytes="); code != 0 || n != 4*6 || stderr != "" {
		t.Errorf("export bench: exit %d, %d sample lines (want 24), stderr %q\n%s", code, n, stderr, stdout)
	}
	csvPath := filepath.Join(t.TempDir(), "out.csv")
	if code, stdout, stderr = runCLI(t, "export", "csv", filepath.Join(dir, results.FileName), "-o", csvPath); code != 0 || stdout != "" {
		t.Errorf("export csv: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	rows, err := csv.NewReader(bytes.NewReader(must(os.ReadFile(csvPath)))).ReadAll()
	if err != nil || len(rows) != 5 || !slices.Equal(rows[0], results.CSVHeader) || rows[1][0] != "collective" || rows[4][len(rows[4])-2] != "ok" {
		t.Errorf("export csv: %v, rows %q", err, rows)
	}
	for _, bad := range [][]string{{"export", "xml", dir}, {"export", "csv", filepath.Join(dir, "missing")}, {"export", "bench"}} {
		if code, _, stderr := runCLI(t, bad...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line", bad, code, stderr)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRunPeerDies kills one worker mid-run: the run must fail promptly (not at
// the operation timeout), every surviving rank's error must name the dead
// rank with its address, the operation and its sequence number, and the rows
// measured before keep their records.
func TestRunPeerDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	t.Setenv("DISTBENCH_TEST_DIE_RANK", "2")
	t.Setenv("DISTBENCH_TEST_DIE_AFTER", "2s")
	start := time.Now()
	code, stdout, stderr := runCLI(t, "run", "--np", "4", "-b", "64KiB", "-e", "256MiB", "-f", "2",
		"--iters", "20", "--warmup", "1", "--json", jsonPath, "--timeout", "2m")
	elapsed := time.Since(start)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if elapsed > 60*time.Second {
		t.Errorf("took %v to fail; the 2m operation timeout should not be what ended it", elapsed)
	}
	dead := regexp.MustCompile(`rank 2 \(127\.0\.0\.1:\d+\)`)
	opSeq := regexp.MustCompile(`ring: \w+ #\d+`)
	for _, r := range []string{"rank 0", "rank 1", "rank 3"} {
		line := lastError(stderr, r)
		if line == "" {
			t.Errorf("%s reported no error:\n%s", r, stderr)
			continue
		}
		if !dead.MatchString(line) || !opSeq.MatchString(line) {
			t.Errorf("%s's error does not name rank 2 with its address and the operation: %s", r, line)
		}
	}
	if !strings.Contains(stdout, "# incomplete") {
		t.Errorf("table not marked incomplete:\n%s", stdout)
	}
	if recs := readJSONL(t, jsonPath); len(recs) == 0 {
		t.Errorf("no records kept from before the failure")
	}
}

// A worker that stops (alive, connected, but running nothing) makes every
// other rank fail by its deadline, naming the stopped rank and its address,
// found by following the chain of waits, not just the neighbour each was
// waiting for.
func TestRunPeerStops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Setenv("DISTBENCH_TEST_STOP_RANK", "1")
	t.Setenv("DISTBENCH_TEST_STOP_AFTER", "1s")
	start := time.Now()
	code, stdout, stderr := runCLI(t, "run", "--np", "4", "-b", "4KiB", "-e", "4KiB",
		"--iters", "100000000", "--warmup", "1", "--timeout", "2s")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if elapsed := time.Since(start); elapsed > 60*time.Second {
		t.Errorf("took %v to fail", elapsed)
	}
	// The launcher ends the stopped rank once the others have failed,
	// rather than after its 10s grace for ranks writing results.
	if !strings.Contains(stderr, "rank 1 was stopped (SIGSTOP or a debugger); killed") {
		t.Errorf("the launcher does not say it killed the stopped rank 1:\n%s", stderr)
	}
	addr := regexp.MustCompile(`rank 1 \(127\.0\.0\.1:\d+\)`)
	stopped := regexp.MustCompile(`rank 1( \(127\.0\.0\.1:\d+\))? did not answer`)
	namesOp := regexp.MustCompile(`ring: (allreduce|barrier) #\d+`)
	for _, r := range []string{"rank 0", "rank 2", "rank 3"} {
		line := lastError(stderr, r)
		if line == "" {
			t.Errorf("%s reported no error:\n%s", r, stderr)
			continue
		}
		// The stop may come in a barrier of the harness around the timed
		// allreduces on a slow machine: either names its sequence number.
		if !addr.MatchString(line) || !stopped.MatchString(line) || !namesOp.MatchString(line) {
			t.Errorf("%s's error does not name the stopped rank 1 with its address and the operation: %s", r, line)
		}
	}
}

// lastError is the last error line the launcher relayed from rank (e.g.
// "rank 2") in stderr, or "".
func lastError(stderr, rank string) string {
	var line string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "["+rank+"] distbench: ") {
			line = l
		}
	}
	return line
}

// readJSONL reads the measurement records of a --json file: not its env
// records.
func readJSONL(t *testing.T, path string) []results.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []results.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r results.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if r.Kind != results.KindEnv {
			recs = append(recs, r)
		}
	}
	return recs
}

// TestRunCycles: -N repeats every size, each cycle a round of the same
// points in --json, and -S ends every row with a timestamp.
func TestRunCycles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "--np", "2", "-b", "4KiB", "-e", "8KiB", "-n", "3", "-w", "1",
		"-N", "2", "-S", "1", "--json", filepath.Join(dir, results.FileName), "--timeout", "1m")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stamp := regexp.MustCompile(`  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`)
	rows := 0
	for _, line := range strings.Split(stdout, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rows++
		if !stamp.MatchString(line) {
			t.Errorf("row without a timestamp: %q", line)
		}
		if _, err := nccltests.ParseRow(line); err != nil {
			t.Errorf("row %q: %v", line, err)
		}
	}
	if rows != 4 {
		t.Errorf("%d rows, want 2 sizes × 2 cycles:\n%s", rows, stdout)
	}
	recs := readJSONL(t, filepath.Join(dir, results.FileName))
	rounds := map[int]int{}
	for _, r := range recs {
		if r.Rounds != 2 {
			t.Errorf("%s: round %d of %d, want of 2", r.Point, r.Round, r.Rounds)
		}
		rounds[r.Round]++
	}
	if rounds[1] != 4 || rounds[2] != 4 {
		t.Errorf("records per cycle %v, want 4 in each of 2", rounds)
	}
	samePIDs(t, recs)
	if code, stdout, stderr = runCLI(t, "report", dir); code != 0 {
		t.Fatalf("report: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// samePIDs checks that every record came from the same rank processes: the
// cycles of -N ran in one job, over one mesh, as nccl-tests' do.
func samePIDs(t *testing.T, recs []results.Record) {
	t.Helper()
	for _, r := range recs {
		if len(r.RankPIDs) == 0 || !slices.Equal(r.RankPIDs, recs[0].RankPIDs) {
			t.Errorf("%s round %d: rank pids %v, the first record's %v: want one job for every cycle", r.Point, r.Round, r.RankPIDs, recs[0].RankPIDs)
			return
		}
	}
}

// TestRunCyclesUntilInterrupted: -N 0 measures over one long-lived job
// until Ctrl-C, which ends it in a line saying so, exit 130, every record
// measured kept and the run marked incomplete.
func TestRunCyclesUntilInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, results.FileName)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runCtx, interrupt := context.WithCancel(ctx)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, &stdout, &stderr, []string{"run", "--np", "2", "-b", "4KiB", "-e", "4KiB", "-n", "3", "-w", "1",
			"-N", "0", "--json", path, "--timeout", "1m"})
	}()
	// Interrupt once a third cycle has a record on disk.
	for {
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(`"round":3`)) {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("ended (exit %d) before the interrupt\n%s\n%s", code, stdout.String(), stderr.String())
		case <-ctx.Done():
			t.Fatalf("no third cycle within 3m\n%s\n%s", stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	interrupt()
	var code int
	select {
	case code = <-done:
	case <-ctx.Done():
		t.Fatal("run did not end after the interrupt")
	}
	if code != 130 || !regexp.MustCompile(`distbench: interrupted; the \d+ row\(s\) measured are kept\n$`).MatchString(stderr.String()) {
		t.Errorf("exit %d, stderr %q: want 130 and the line saying the rows are kept", code, stderr.String())
	}
	recs := readJSONL(t, path)
	if len(recs) < 3 {
		t.Fatalf("%d records kept, want every cycle's", len(recs))
	}
	samePIDs(t, recs)
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Complete() {
		t.Error("an interrupted run is marked complete")
	}
}

// TestRunNCCLJSON: run -I 1 -J over real processes writes nccl-tests' JSON
// document, read here with the field names its tools/analyze_perf_json.py
// reads: per iteration, the slowest process's time is the maximum of the
// per-process rows.
func TestRunNCCLJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "perf.json")
	code, stdout, stderr := runCLI(t, "run", "--np", "3", "-b", "4KiB", "-e", "64KiB", "-f", "16", "-n", "5", "-w", "1",
		"-I", "1", "-J", path, "--timeout", "1m")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "# Writing JSON output to "+path+"\n") {
		t.Errorf("no line naming the JSON file:\n%s", stdout)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version int `json:"version"`
		Config  struct {
			Iterations int `json:"iterations"`
			Devices    []struct {
				Rank     int    `json:"rank"`
				PID      int    `json:"pid"`
				Hostname string `json:"hostname"`
			} `json:"devices"`
		} `json:"config"`
		Results []map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 3 || doc.Config.Iterations != 5 || len(doc.Config.Devices) != 3 || len(doc.Results) != 2 {
		t.Fatalf("version %d, iterations %d, %d devices, %d results", doc.Version, doc.Config.Iterations, len(doc.Config.Devices), len(doc.Results))
	}
	for _, d := range doc.Config.Devices {
		if d.PID <= 0 || d.Hostname == "" || d.Hostname == "?" {
			t.Errorf("device %+v: want each rank's pid and host", d)
		}
	}
	for _, r := range doc.Results {
		for _, key := range []string{"out_of_place_per_iter", "in_place_per_iter"} {
			var it struct {
				AvgUs, MinUs, MaxUs, P99Us, CVPct float64
				TimesUs                           []float64   `json:"times_us"`
				PerProcess                        [][]float64 `json:"per_process_max_times_us"`
			}
			if err := json.Unmarshal(r[key], &it); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if len(it.TimesUs) != 5 || len(it.PerProcess) != 3 {
				t.Fatalf("%s: %d times, %d process rows; want 5 and 3", key, len(it.TimesUs), len(it.PerProcess))
			}
			for i, v := range it.TimesUs {
				m := 0.0
				for _, row := range it.PerProcess {
					m = max(m, row[i])
				}
				if v != m {
					t.Errorf("%s iteration %d: %v, but the slowest process took %v", key, i, v, m)
				}
			}
		}
	}
}
