package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distbench/distbench/harness"
	"github.com/distbench/distbench/reports/nccltests"
)

// pastedLines are nccl-tests command lines as users paste them: the
// program and its arguments, and the engine that started it ("" for a
// plain shell), from nccl-tests' README and usage text and from issues.
var pastedLines = []struct {
	source, engine, line string
}{
	{"nccl-tests README", "", "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8"},
	{"nccl-tests README (mpirun -np 64 -N 8)", "mpirun", "./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1"},
	{"nebius/soperator#428 (srun --mpi=pmix)", "mpirun", "all_reduce_perf_mpi -b 512M -e 8G -f 2 -g 1"},
	{"NVIDIA/nccl#583 (mpirun -np 8)", "mpirun", "all_reduce_perf -b 32 -f 2 -e 8G"},
	{"NVIDIA/nccl#1706", "", "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4"},
	{"NVIDIA/nccl-tests#389 (srun --mpi=pmix)", "mpirun", "all_reduce_perf -b 512M -e 16G -f 2 -g 1"},
	{"NVIDIA/nccl-tests#107 (mpirun -np 2)", "mpirun", "/home/ih/nccl-tests/build/all_reduce_perf -b 1250M -e 1250M -g 1"},
	{"NVIDIA/nccl-tests#309 (mpirun --np 32)", "mpirun", "/home/vmware/nccl-tests/build/all_reduce_perf_mpi -b 8 -e 16g -f 2 -g 1"},
	{"FlagOpen/FlagPerf main.sh (mpirun -np 8)", "mpirun", "all_reduce_perf -t 1 -g 1 -b 2M -e 32M -d float -o sum"},
	{"nccl-tests usage: all_gather, unchecked", "", "./build/all_gather_perf -b 8 -e 128M -f 2 -g 8 -c 0"},
	{"nccl-tests usage: reduce_scatter, long check", "", "./build/reduce_scatter_perf -b 8 -e 128M -f 2 -g 8 --check 0"},
	{"nccl-tests usage: broadcast from root 1", "", "./build/broadcast_perf -b 8 -e 128M -f 2 -g 8 -r 1"},
	{"nccl-tests usage: reduce, int8 max", "", "./build/reduce_perf -b 8 -e 128M -f 2 -g 8 -o max -d int8"},
	{"nccl-tests usage: alltoall, more iterations", "", "./build/alltoall_perf -b 8 -e 128M -f 2 -g 8 -w 20 -n 100"},
	{"nccl-tests usage: sendrecv", "", "./build/sendrecv_perf -b 8 -e 128M -f 2 -g 2"},
	{"nccl-tests usage: CUDA graphs, blocking", "", "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8 -G 1 -z 1"},
	{"nccl-tests usage: steps of bytes", "", "./build/all_reduce_perf -b 1M -e 64M -f 1 -i 1M -g 8"},
	{"nccl-tests usage: every type and op", "", "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8 -d all -o all"},
	{"nccl-tests usage: max over ranks, per iteration, JSON", "", "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8 -a 3 -I 1 -K 2 -S 1 -J perf.json --timeout 60"},
	{"nccl-tests usage: NCCL's own knobs", "", "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8 -R 1 -M 1 -u 1 -m 4 -p 1 -y 1 -C 1 -x 1 -T 0"},
}

// setEngine makes the environment one engine's rank 0 of 8, as mpirun
// starts nccl-tests' programs.
func setEngine(t *testing.T, engine string) {
	if engine == "" {
		return
	}
	t.Setenv("OMPI_COMM_WORLD_SIZE", "8")
	t.Setenv("OMPI_COMM_WORLD_RANK", "0")
	t.Setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0")
	t.Setenv("MASTER_ADDR", "127.0.0.1")
	t.Setenv("MASTER_PORT", "29500")
	t.Setenv("DISTBENCH_TOKEN", "0123456789abcdef0123")
}

// pastedPlan is what a pasted line turns into, without running it: the
// run's settings, and the notes of what does not apply.
func pastedPlan(t *testing.T, argv []string) string {
	t.Helper()
	args, ok, err := asNCCLProgram(argv[0], argv[1:])
	if err != nil || !ok {
		t.Fatalf("%q: not read as an nccl-tests program: %v", argv, err)
	}
	args = joinSeparatedValues(args)
	cmd, f := newRunCmdFlags(&bytes.Buffer{}, &bytes.Buffer{})
	if err := cmd.ParseFlags(args[1:]); err != nil {
		t.Fatalf("%q: %v (exit 2)", argv, err)
	}
	var notes bytes.Buffer
	if err := f.ncclCompat(cmd.Flags(), &notes); err != nil {
		t.Fatalf("%q: %v (exit 2)", argv, err)
	}
	if f.launcher == "env" {
		n, err := harness.EngineNP(os.Getenv, f.strategy, nil, f.np, cmd.Flags().Changed("np"))
		if err != nil {
			t.Fatalf("%q: %v", argv, err)
		}
		f.np = n
	}
	spec, err := f.spec()
	if err != nil {
		t.Fatalf("%q: %v (exit 2)", argv, err)
	}
	out, err := f.output(nil)
	if err != nil {
		t.Fatalf("%q: %v (exit 2)", argv, err)
	}
	first, last := spec.Points[0], spec.Points[len(spec.Points)-1]
	dtypes, ops := map[string]bool{}, map[string]bool{}
	for _, p := range spec.Points {
		dtypes[p.DType], ops[p.Op] = true, true
	}
	step := fmt.Sprintf("×%g", f.stepFactor)
	if f.stepB != "" {
		step = "+" + f.stepB
	}
	s := fmt.Sprintf("  %s %s np=%d launcher=%s sizes=%d..%d step %s points=%d dtypes=%d ops=%d iters=%d warmup=%d checks=%d time=%q timeout=%v root=%d per-iter=%v json=%q\n",
		first.Collective, first.DType, spec.NP, f.launcher, first.Bytes, last.Bytes, step, len(spec.Points), len(dtypes), len(ops),
		spec.Iters, spec.Warmup, spec.CheckRuns, nccltests.TimeDefinition(out.average), spec.Timeout, first.Root, out.perIter, f.ncclJSON)
	for _, line := range strings.SplitAfter(notes.String(), "\n") {
		if line != "" {
			s += "  note: " + line
		}
	}
	return s
}

// TestPastedLines reads twenty nccl-tests command lines as pasted: none is
// refused (exit 2); each becomes the run nccl-tests would make (the golden
// file lists collective, ranks, sizes, steps, types, ops, iterations, the
// check and the time column) and one line for each flag that does not
// apply here.
func TestPastedLines(t *testing.T) {
	if len(pastedLines) != 20 {
		t.Fatalf("%d lines, want 20", len(pastedLines))
	}
	var got strings.Builder
	for _, pl := range pastedLines {
		t.Run(pl.source, func(t *testing.T) {
			setEngine(t, pl.engine)
			engine := ""
			if pl.engine != "" {
				engine = pl.engine + ": "
			}
			got.WriteString(fmt.Sprintf("%s%s  # %s\n", engine, pl.line, pl.source))
			got.WriteString(pastedPlan(t, strings.Fields(pl.line)))
		})
	}
	golden := filepath.Join("testdata", "pasted_lines.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestPastedLines -update)", err)
	}
	if got.String() != string(want) {
		t.Errorf("pasted lines differ from %s (go test -run TestPastedLines -update, then review the diff):\n%s", golden, got.String())
	}
}

// TestPastedLinesRun runs the pasted lines a plain shell starts, as
// programs named like nccl-tests', over real processes: each measures
// (every row checked, none wrong) and prints its notes. Sizes and
// iterations are capped by flags appended to the line (later flags win),
// so that the test stays small; the ranks are the line's own.
func TestPastedLinesRun(t *testing.T) {
	t.Chdir(t.TempDir()) // -J perf.json
	for _, pl := range pastedLines {
		if pl.engine != "" {
			continue // TestPastedLines reads them; running needs the engine
		}
		t.Run(pl.source, func(t *testing.T) {
			argv := strings.Fields(pl.line)
			args := append(argv[1:], "-b", "8", "-e", "64", "-n", "4", "-w", "1")
			if strings.Contains(pl.line, "-f 1 ") {
				args = append(args, "-i", "16")
			}
			if strings.Contains(pl.line, "-d all") {
				args = append(args, "-d", "int8") // -d all at 8 ranks is 12 types × 6 ops: one type is the point
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var out, errb bytes.Buffer
			code := runAs(ctx, &out, &errb, argv[0], args)
			if code != 0 {
				t.Fatalf("exit %d\nstderr: %s\nstdout: %s", code, errb.String(), out.String())
			}
			rows := 0
			for _, line := range strings.Split(out.String(), "\n") {
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				rows++
				wrong := [2]string{}
				if r, err := nccltests.ParseRow(line); err == nil {
					wrong = r.Wrong
				} else if f := strings.Fields(line); len(f) >= 17 { // -I: 8 columns a side
					wrong = [2]string{f[8], f[16]}
				}
				if wrong != [2]string{"0", "0"} && wrong != [2]string{"N/A", "N/A"} {
					t.Errorf("wrong elements, or not a row: %s", line)
				}
			}
			if rows == 0 {
				t.Errorf("no rows measured:\n%s", out.String())
			}
			for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
				if line != "" && !strings.Contains(line, "does not apply here") {
					t.Errorf("stderr line that is not a note: %q", line)
				}
			}
		})
	}
	// A program distbench has no counterpart of: one line, exit 2.
	var out, errb bytes.Buffer
	if code := runAs(context.Background(), &out, &errb, "/opt/nccl-tests/build/hypercube_perf", []string{"-b", "8"}); code != 2 ||
		strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), "hypercube_perf: distbench has no counterpart") {
		t.Errorf("hypercube_perf: exit %d, %q", code, errb.String())
	}
}

// TestPerfLinks holds the Makefile's perf-links list to the program names
// distbench answers to.
func TestPerfLinks(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PERF_PROGRAMS := (.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no PERF_PROGRAMS in the Makefile")
	}
	got := strings.Fields(string(m[1]))
	slices.Sort(got)
	if want := ncclProgramNames(); !slices.Equal(got, want) {
		t.Errorf("Makefile's PERF_PROGRAMS %v, want %v", got, want)
	}
}
