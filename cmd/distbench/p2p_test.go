package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/distbench/distbench/reports/osu"
	"github.com/distbench/distbench/results"
)

func TestParseMessageSizes(t *testing.T) {
	tests := []struct {
		in      string
		lo, hi  int64 // want
		wantErr string
	}{
		{"", 0, 4194304, ""},
		{"1024", 0, 1024, ""},
		{"8:1024", 8, 1024, ""},
		{"0:1048576", 0, 1048576, ""},
		{"64:", 64, 4194304, ""},
		{":512", 0, 512, ""},
		{"4KiB:1MiB", 4096, 1 << 20, ""},
		{"1GiB", 0, 1 << 30, ""},
		{"2GiB", 0, 0, "MAX 2147483648 bytes is above the limit of 1073741824 (1GiB)"},
		{"64:8", 0, 0, "MIN 64 is larger than MAX 8"},
		{"x:8", 0, 0, `MIN "x" is not a size`},
		{"1:2:3", 0, 0, "more than one ':'"},
		{":", 0, 0, "no size"},
		{"-5", 0, 0, `MAX "-5" is not a size`},
	}
	for _, tt := range tests {
		lo, hi, err := parseMessageSizes(tt.in, 0, 1<<22)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "-m ") {
				t.Errorf("-m %q: %v, want an error containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || lo != tt.lo || hi != tt.hi {
			t.Errorf("-m %q: %d, %d, %v; want %d, %d", tt.in, lo, hi, err, tt.lo, tt.hi)
		}
	}
}

// TestP2PFlags: the points each test's flags make, OSU's defaults
// included: iterations and warm-up switch above 8KiB unless -i/-x set
// them for every size, as OSU's set_num_iterations and set_num_warmup do.
func TestP2PFlags(t *testing.T) {
	type pt struct{ bytes, iters, warmup, window int }
	tests := []struct {
		args  []string
		first pt
		last  pt
		n     int
	}{
		{[]string{"latency"}, pt{1, 10000, 100, 0}, pt{4 << 20, 1000, 10, 0}, 23},
		{[]string{"latency", "-m", "8192:16384"}, pt{8192, 10000, 100, 0}, pt{16384, 1000, 10, 0}, 2},
		{[]string{"latency", "-m", "0:1048576", "-i", "50", "-x", "0"}, pt{1, 50, 0, 0}, pt{1 << 20, 50, 0, 0}, 21},
		{[]string{"bw"}, pt{1, 100, 10, 64}, pt{4 << 20, 20, 2, 64}, 23},
		{[]string{"bibw", "-W", "8", "-m", "4K:64K", "-x", "3"}, pt{4096, 100, 3, 8}, pt{65536, 20, 3, 8}, 5},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root := newRootCmd(t.Context(), nil, nil)
			cmd, rest, err := root.Find(append([]string{"p2p"}, tt.args...))
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Fatal(err)
			}
			var f *p2pFlags
			for _, tst := range p2pTests {
				if tst.name == tt.args[0] {
					f = &p2pFlags{test: tst}
				}
			}
			fl := cmd.Flags()
			f.sizes, _ = fl.GetString("message-size")
			f.iters, _ = fl.GetInt("iterations")
			f.warmup, _ = fl.GetInt("warmup")
			f.window, _ = fl.GetInt("window-size")
			f.strategy, _ = fl.GetString("strategy")
			f.np, _ = fl.GetInt("np")
			f.launcher, _ = fl.GetString("launcher")
			f.timeout, _ = fl.GetDuration("timeout")
			f.itersSet, f.warmupSet = fl.Changed("iterations"), fl.Changed("warmup")
			spec, err := f.spec()
			if err != nil {
				t.Fatal(err)
			}
			ps := spec.Points
			if len(ps) != tt.n {
				t.Fatalf("%d points, want %d", len(ps), tt.n)
			}
			for i, want := range []pt{tt.first, tt.last} {
				p := ps[i*(len(ps)-1)]
				if got := (pt{int(p.Bytes), p.Iters, p.Warmup, p.Window}); got != want {
					t.Errorf("point %d: %+v, want %+v", i*(len(ps)-1), got, want)
				}
			}
		})
	}
}

func TestP2PBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"latency", "-m", "64:8"}, `-m "64:8": MIN 64 is larger than MAX 8 (accepted: MAX, MIN:MAX`},
		{[]string{"bw", "-m", "4GiB"}, "MAX 4294967296 bytes is above the limit of 1073741824 (1GiB)"},
		{[]string{"bw", "-m", "abc"}, `-m "abc": MAX "abc" is not a size`},
		{[]string{"latency", "-m", "0"}, `-m "0": no size to measure: 0 bytes is skipped, as OSU does`},
		{[]string{"latency", "-i", "0"}, "-i 0: must be at least 1"},
		{[]string{"latency", "-x", "-1"}, "-x -1: must be 0 or more"},
		{[]string{"bibw", "-W", "0"}, "-W 0: out of range (accepted: 1 to 65536)"},
		{[]string{"latency", "-W", "8"}, "unknown shorthand flag: 'W'"},
		{[]string{"latency", "--np", "3"}, "--np 3: OSU's point-to-point tests take exactly two processes (accepted: 2)"},
		{[]string{"bw", "--strategy", "carrier-pigeon"}, `unknown strategy "carrier-pigeon"`},
		{[]string{"latency", "--link", "fast"}, "fast"},
		{[]string{"pingpong"}, `p2p: unknown test "pingpong" (accepted: latency, bw, bibw)`},
		{nil, "p2p: name a test: latency, bw or bibw"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"p2p"}, tt.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "distbench: ") || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", stderr, tt.want)
			}
			if strings.Contains(stdout, "# Size") {
				t.Errorf("measured despite bad input:\n%s", stdout)
			}
		})
	}
}

// osuRow is one row of OSU's table, read by its fixed columns: the size in
// the first 10 characters, the figure in the next 20.
type osuRow struct {
	size   int64
	figure float64
}

// parseOSU checks OSU's header lines and reads the rows by column.
func parseOSU(t *testing.T, out, title, column string) []osuRow {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 4 {
		t.Fatalf("output of %d lines:\n%s", len(lines), out)
	}
	if lines[0] != "" || !strings.HasPrefix(lines[1], "# distbench "+title+" (OSU ") || lines[2] != "# Datatype: uint8." {
		t.Errorf("preamble:\n%s", strings.Join(lines[:3], "\n"))
	}
	if want := "# Size    " + strings.Repeat(" ", 20-len(column)) + column; lines[3] != want {
		t.Errorf("column header %q, want %q", lines[3], want)
	}
	var rows []osuRow
	for _, l := range lines[4:] {
		if len(l) != 30 {
			t.Fatalf("row %q: %d characters, want 10 + 20", l, len(l))
		}
		size, err1 := strconv.ParseInt(strings.TrimRight(l[:10], " "), 10, 64)
		fig, err2 := strconv.ParseFloat(strings.TrimLeft(l[10:], " "), 64)
		if err1 != nil || err2 != nil || l[0] == ' ' || l[10+19] == ' ' || !strings.Contains(l[10:], ".") || len(l[10:])-strings.Index(l[10:], ".") != 3 {
			t.Fatalf("row %q: not %%-10d%%20.2f (%v, %v)", l, err1, err2)
		}
		rows = append(rows, osuRow{size, fig})
	}
	return rows
}

// TestP2PProcesses runs latency and bw at np 2 over loopback in worker
// processes, reads their tables by OSU's fixed columns, and checks that
// the figures are positive and that the records give the figures the table
// printed (how figures compare across sizes depends on the machine's load,
// and is for benchmarks); then makes a report, and a comparison, from the
// latency run's --json records.
func TestP2PProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "p2p", "latency", "-m", "0:1048576", "-i", "20", "-x", "2",
		"--json", filepath.Join(dir, results.FileName), "--timeout", "1m")
	if code != 0 {
		t.Fatalf("latency: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rows := parseOSU(t, stdout, "Latency Test", "Latency (us)")
	var sizes []int64
	for _, r := range rows {
		sizes = append(sizes, r.size)
		if !(r.figure > 0) || r.figure > 10e6 {
			t.Errorf("size %d: latency %v us", r.size, r.figure)
		}
	}
	if want := osu.Sizes(1, 1<<20); !slices.Equal(sizes, want) {
		t.Errorf("sizes %v, want %v", sizes, want)
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Records) != len(rows) || !run.Complete() {
		t.Fatalf("%d records for %d rows, complete %v", len(run.Records), len(rows), run.Complete())
	}
	for i, r := range run.Records {
		fig, _ := results.OSUFigure(&r)
		if r.Collective != "p2p-latency" || r.Wrong != 0 || len(r.SamplesUs) != 20 || strconv.FormatFloat(fig, 'f', 2, 64) != strconv.FormatFloat(rows[i].figure, 'f', 2, 64) {
			t.Errorf("record %s: wrong %d, %d samples, figure %v; the table says %v", r.Point, r.Wrong, len(r.SamplesUs), fig, rows[i].figure)
		}
	}
	if code, stdout, stderr = runCLI(t, "report", dir); code != 0 {
		t.Fatalf("report: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "p2p-latency") {
		t.Errorf("report.md (%v) does not name p2p-latency:\n%s", err, md)
	}
	code, stdout, stderr = runCLI(t, "compare", dir, dir, "--out", t.TempDir())
	if code != 0 && code != 3 {
		t.Fatalf("compare: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	code, stdout, stderr = runCLI(t, "p2p", "bw", "-m", "1:262144", "-i", "5", "-x", "1", "-W", "16", "--timeout", "1m")
	if code != 0 {
		t.Fatalf("bw: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rows = parseOSU(t, stdout, "Bandwidth Test", "Bandwidth (MB/s)")
	if len(rows) != 19 {
		t.Fatalf("%d rows, want 19 (1 … 256KiB)", len(rows))
	}
	for _, r := range rows {
		// Printed with two decimals, a busy machine's bandwidth of a
		// few bytes may round to 0.00; from 1KiB on it cannot.
		if r.figure < 0 || (r.size >= 1024 && !(r.figure > 0)) {
			t.Errorf("size %d: bandwidth %v MB/s", r.size, r.figure)
		}
	}
}
