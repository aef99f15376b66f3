package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distbench/distbench/harness/job"
	"github.com/distbench/distbench/results"
	"github.com/distbench/distbench/stats"
)

// ncclTestsVersion is the nccl-tests release whose output this table
// reproduces, column for column: the format scripts written for it parse.
const ncclTestsVersion = "2.19.6"

// tsLayout is nccl-tests' timestamp (-S 1): strftime "%Y-%m-%d %H:%M:%S".
const tsLayout = "2006-01-02 15:04:05"

// ncclOutput holds the options of nccl-tests' that shape what run prints.
type ncclOutput struct {
	// average is -a: -1 for distbench's time (the median over iterations
	// of the slowest rank's time); 0..3 for nccl-tests' (each rank's mean
	// iteration time, then rank 0's, the average, the minimum or the
	// maximum over ranks).
	average int
	// perIter is -I: the per-iteration columns i_min, i_max, i_p99, i_cv%
	// of each iteration's slowest-rank time; perIterSkip (-K) leading
	// iterations are left out of those summaries.
	perIter     bool
	perIterSkip int
	timestamps  bool // -S: a timestamp closes every row
	args        []string
	now         func() time.Time
}

// table prints nccl-tests' table: one line per size, out-of-place columns
// then in-place columns, as the records for that size arrive; the
// preamble waits for the first record, which names every rank's host and
// pid.
type table struct {
	w        *bufio.Writer
	spec     *job.Spec
	out      ncclOutput
	modes    string
	flags    *runFlags
	pending  map[string][2]*results.Record
	order    []string // pending keys in arrival order, for a failed run's half rows
	busbw    []float64
	wire     []*results.Record // the first record with wire bytes of each size, type and op, for wireTable
	wireSeen map[string]bool   // their rows, less the cycle (-N repeats them)
	wrong    int64
	check    bool
	rows     int
	started  bool
	doc      *ncclDoc // -J, nil without
	last     *results.Record
	slow     map[int]*slowRank // by rank, see noteSlowest
	measured int               // records measured without error
}

func newTable(w io.Writer, spec *job.Spec, f *runFlags, out ncclOutput) *table {
	if out.now == nil {
		out.now = time.Now
	}
	return &table{w: bufio.NewWriter(w), spec: spec, flags: f, out: out, modes: f.inplace,
		pending: map[string][2]*results.Record{}, check: spec.Check}
}

// rowKey is what one row of the table shares: its two records differ only
// in where the result goes.
func rowKey(r *results.Record) string {
	return fmt.Sprintf("%s/%s/%d/%d", r.DType, r.Op, r.Bytes, r.Round)
}

func (t *table) add(r *results.Record) {
	if !t.started {
		t.preamble(r)
	}
	t.last = r
	key := rowKey(r)
	pair, seen := t.pending[key]
	if !seen {
		t.order = append(t.order, key)
	}
	if r.InPlace {
		pair[1] = r
	} else {
		pair[0] = r
	}
	t.pending[key] = pair
	if (t.modes == "both" && pair[0] != nil && pair[1] != nil) || t.modes != "both" {
		t.row(pair)
		delete(t.pending, key)
		t.order = slices.DeleteFunc(t.order, func(k string) bool { return k == key })
	}
}

// preamble is nccl-tests' opening: what ran, with which settings, on which
// devices, then the column headers. first, the first record, names the
// ranks; nil when the run failed before measuring anything.
func (t *table) preamble(first *results.Record) {
	t.started = true
	s, f := t.spec, t.flags
	env := captureEnv()
	fmt.Fprintf(t.w, "# distbench version %s; nccl-tests %s output format\n", versionLine(), ncclTestsVersion)
	fmt.Fprintf(t.w, "# Collective test starting: %s\n", strings.Join(t.out.args, " "))
	step := fmt.Sprintf("%g(factor)", f.stepFactor)
	if f.stepB != "" {
		step = fmt.Sprintf("%d(bytes)", f.stepBytes)
	}
	validation := 0
	if s.Check {
		validation = max(f.check.n, 1)
	}
	fmt.Fprintf(t.w, "# nThread 1 nGpus 1 minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0 unalign: 0\n",
		f.lo, f.hi, step, s.Warmup, s.Iters, validation)
	if t.out.perIter {
		fmt.Fprintf(t.w, "# Per-Iteration Report: wall-clock timing per rank; i_* uses max over process rows")
		if t.out.perIterSkip > 0 {
			fmt.Fprintf(t.w, "; summary skips first %d iterations", t.out.perIterSkip)
		}
		fmt.Fprintf(t.w, " \n")
	}
	fmt.Fprintf(t.w, "# distbench: strategy %s, np %d, transport %s", s.Strategy, s.NP, s.TransportName())
	if s.Link != "" {
		fmt.Fprintf(t.w, ", link %s", s.Link)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Options)) {
		fmt.Fprintf(t.w, ", %s=%s", k, s.Options[k])
	}
	fmt.Fprintf(t.w, "\n# distbench: time is %s\n#\n", timeDefinition(t.out.average))
	fmt.Fprintf(t.w, "# Using devices\n")
	for _, d := range devices(first, s.NP, env) {
		fmt.Fprintf(t.w, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", d.Rank, d.Group, d.PID, d.Hostname, d.Device, d.DeviceHex, d.DeviceInfo)
	}
	if t.doc != nil {
		t.doc.configure(t, first, env)
	}
	t.header()
}

// timeDefinition says in words what the time column is under -a.
func timeDefinition(average int) string {
	switch average {
	case 0:
		return "rank 0's mean iteration time (-a 0, as nccl-tests)"
	case 1:
		return "the mean over ranks of each rank's mean iteration time (-a 1, as nccl-tests' default)"
	case 2:
		return "the least over ranks of each rank's mean iteration time (-a 2, as nccl-tests)"
	case 3:
		return "the most over ranks of each rank's mean iteration time (-a 3, as nccl-tests)"
	}
	return "the median over iterations of the slowest rank's time (nccl-tests -a 1 averages each rank's mean instead)"
}

// device is one rank's line of "# Using devices", and its entry in -J's
// config.devices. A CPU rank has no device: -1, and the CPU's model.
type device struct {
	Rank       int    `json:"rank"`
	Group      int    `json:"group"`
	PID        int    `json:"pid"`
	Hostname   string `json:"hostname"`
	Device     int    `json:"device"`
	DeviceHex  string `json:"device_hex"`
	DeviceInfo string `json:"device_info"`
}

func devices(first *results.Record, np int, env *results.Env) []device {
	out := make([]device, np)
	for r := range out {
		host, pid := "?", 0
		if first != nil && r < len(first.RankHosts) {
			host = first.RankHosts[r]
		}
		if first != nil && r < len(first.RankPIDs) {
			pid = first.RankPIDs[r]
		}
		info := "host memory"
		if env.CPUModel != "" && host == env.Host {
			info = env.CPUModel + ", host memory"
		}
		out[r] = device{Rank: r, PID: pid, Hostname: host, Device: -1, DeviceHex: "cpu", DeviceInfo: info}
	}
	return out
}

func (t *table) header() {
	ts := func(s string) string {
		if !t.out.timestamps {
			return " "
		}
		return fmt.Sprintf(" %19s", s)
	}
	lbl := "time"
	if t.out.perIter {
		fmt.Fprintf(t.w, "#\n# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                                in-place (+ per-iteration)\n", "", "", "", "", "")
		fmt.Fprintf(t.w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s%s\n",
			"size", "count", "type", "redop", "root",
			lbl, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%",
			lbl, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%", ts("timestamp"))
		fmt.Fprintf(t.w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s%s\n",
			"(B)", "(elements)", "", "", "",
			"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)",
			"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", ts("%Y-%m-%d %H:%M:%S"))
	} else {
		fmt.Fprintf(t.w, "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", "")
		fmt.Fprintf(t.w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n", "size", "count", "type", "redop", "root",
			lbl, "algbw", "busbw", "#wrong", lbl, "algbw", "busbw", "#wrong", ts("timestamp"))
		fmt.Fprintf(t.w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n", "(B)", "(elements)", "", "", "",
			"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", ts("%Y-%m-%d %H:%M:%S"))
	}
	t.w.Flush()
}

// ncclTypeName is nccl-tests' name of a distbench dtype.
func ncclTypeName(dtype string) string {
	switch dtype {
	case "float32":
		return "float"
	case "float64":
		return "double"
	case "float16":
		return "half"
	}
	return dtype
}

// ncclCount is nccl-tests' count column: elements per rank's buffer, the
// larger buffer's count divided by np for the collectives that split it.
func ncclCount(r *results.Record) int64 {
	if tr, _ := job.TraitsOf(r.Collective); tr.Blocks && r.NP > 0 {
		return r.Count / int64(r.NP)
	}
	return r.Count
}

// figures are one side of a row: time and bandwidths by the -a rule.
type figures struct{ timeUs, algbw, busbw float64 }

func (t *table) figures(r *results.Record) figures {
	if t.out.average < 0 {
		return figures{r.TimeUs, r.AlgBWGBs, r.BusBWGBs} // distbench's, as recorded
	}
	us := r.TimeUsMean // a record without per-rank means: the slowest rank's mean
	if m := r.RankMeanUs; len(m) > 0 {
		switch t.out.average {
		case 0:
			us = m[0]
		case 1:
			us = 0
			for _, v := range m {
				us += v
			}
			us /= float64(len(m))
		case 2:
			us = slices.Min(m)
		case 3:
			us = slices.Max(m)
		}
	}
	alg := stats.AlgBW(r.Bytes, us/1e6)
	bus, _ := stats.BusBW(r.Collective, r.NP, alg)
	return figures{us, alg, bus}
}

func (t *table) row(pair [2]*results.Record) {
	first := pair[0]
	if first == nil {
		first = pair[1]
	}
	op := first.Op
	if op == "" {
		op = "none"
	}
	fmt.Fprintf(t.w, "%12d  %12d  %8s  %6s  %6d", first.Bytes, ncclCount(first), ncclTypeName(first.DType), op, first.Root)
	if key := fmt.Sprintf("%s/%s/%d", first.DType, first.Op, first.Bytes); !t.wireSeen[key] {
		for _, r := range pair {
			if r != nil && r.Error == "" && r.HasWire() {
				if t.wireSeen == nil {
					t.wireSeen = map[string]bool{}
				}
				t.wireSeen[key] = true
				t.wire = append(t.wire, r)
				break
			}
		}
	}
	var entry *ncclResult
	if t.doc != nil {
		entry = t.doc.result(first, ncclTypeName(first.DType), op)
	}
	for side, r := range pair {
		if r == nil {
			if side == 0 && t.modes == "in" {
				fmt.Fprint(t.w, "                                ")
			}
			continue
		}
		if r.Error != "" {
			fmt.Fprintf(t.w, "  %7s  %6s  %6s  %6s", "failed", "-", "-", "-")
			if t.out.perIter {
				fmt.Fprintf(t.w, "  %7s  %7s  %7s  %7s", "-", "-", "-", "-")
			}
			continue
		}
		t.measured++
		t.noteSlowest(r)
		fig := t.figures(r)
		if t.check {
			fmt.Fprintf(t.w, "  %7s  %6s  %6s  %6.6g", floatStr(fig.timeUs, 7), floatStr(fig.algbw, 6), floatStr(fig.busbw, 6), float64(max(r.Wrong, 0)))
			t.wrong += max(r.Wrong, 0)
		} else {
			fmt.Fprintf(t.w, "  %7s  %6s  %6s    N/A", floatStr(fig.timeUs, 7), floatStr(fig.algbw, 6), floatStr(fig.busbw, 6))
		}
		var it iterStats
		if t.out.perIter {
			it = computeIterStats(r.SamplesUs, t.out.perIterSkip)
			fmt.Fprintf(t.w, "  %7s  %7s  %7s  %7s", floatStr(it.min, 7), floatStr(it.max, 7), floatStr(it.p99, 7), floatStr(it.cvPct, 7))
		}
		if entry != nil {
			entry.set(side == 1, r, fig, t.check, t.out, it)
		}
		t.busbw = append(t.busbw, fig.busbw)
	}
	if t.out.timestamps {
		fmt.Fprintf(t.w, "%21s", t.out.now().Format(tsLayout))
	}
	fmt.Fprintln(t.w)
	t.rows++
	t.w.Flush()
	if t.doc != nil {
		t.doc.add(entry)
	}
}

// floatStr is nccl-tests' getFloatStr: the value in width characters with
// two decimals, or one, or none, or in exponent form when nothing fits.
func floatStr(v float64, width int) string {
	for _, prec := range []int{2, 1, 0} {
		if s := strconv.FormatFloat(v, 'f', prec, 64); len(s) <= width {
			return fmt.Sprintf("%*s", width, s)
		}
	}
	if width >= 7 {
		return fmt.Sprintf("%*.1e", width, v)
	}
	return fmt.Sprintf("%*.0e", width, v)
}

// iterStats are nccl-tests' per-iteration summaries (computeIterStats in
// src/util.cu): min, max, the upper median, nearest-rank percentiles, and
// the population standard deviation, of the iterations after skip.
type iterStats struct {
	min, max, avg, p50, p95, p99, stdev, cvPct float64
	skipped                                    int
}

func computeIterStats(timesUs []float64, skip int) iterStats {
	skip = min(max(skip, 0), max(len(timesUs)-1, 0))
	s := slices.Clone(timesUs[skip:])
	if len(s) == 0 {
		return iterStats{}
	}
	slices.Sort(s)
	n := len(s)
	pct := func(p int) float64 { return s[min(n-1, (n*p+99)/100-1)] }
	st := iterStats{min: s[0], max: s[n-1], p50: s[n/2], p95: pct(95), p99: pct(99), skipped: skip}
	for _, v := range s {
		st.avg += v
	}
	st.avg /= float64(n)
	for _, v := range s {
		st.stdev += (v - st.avg) * (v - st.avg)
	}
	st.stdev = math.Sqrt(st.stdev / float64(n))
	if st.avg > 0 {
		st.cvPct = st.stdev / st.avg * 100
	}
	return st
}

// footer closes the table as nccl-tests does, after distbench's own
// comment lines (bytes on the wire, the slowest rank). It reports whether
// the average bus bandwidth fell below NCCL_TESTS_MIN_BW's 90%, which
// fails the run there and here.
func (t *table) footer(runErr error) (bwFailed bool, docErr error) {
	if !t.started {
		t.preamble(nil)
	}
	for _, k := range t.order { // a failed run leaves half rows
		t.row(t.pending[k])
	}
	t.wireTable()
	t.slowestRank()
	status := "OK"
	if t.wrong > 0 {
		status = "FAILED"
	}
	fmt.Fprintf(t.w, "# %-20s : %d %s\n", "Out of bounds values", t.wrong, status)
	avg := 0.0
	for _, b := range t.busbw {
		avg += b
	}
	if len(t.busbw) > 0 {
		avg /= float64(len(t.busbw))
	}
	minBW, bwChecked := minBusBW()
	bwStatus := ""
	if bwChecked {
		bwStatus, bwFailed = "OK", avg < minBW*0.9
		if bwFailed {
			bwStatus = "FAILED"
		}
	}
	fmt.Fprintf(t.w, "# %-20s : %.6g %s\n", "Avg bus bandwidth", avg, bwStatus)
	fmt.Fprintf(t.w, "#\n# Collective test concluded: %s\n#\n", strings.Join(t.out.args, " "))
	if runErr != nil {
		fmt.Fprintf(t.w, "# incomplete: the run failed after %d rows\n# error: %s\n", t.rows, oneLine(runErr.Error()))
	} else {
		fmt.Fprintln(t.w)
	}
	t.w.Flush()
	if t.doc != nil {
		docErr = t.doc.finish(t.wrong, avg, minBW, bwChecked, runErr)
	}
	return bwFailed, docErr
}

func nowString() string { return time.Now().Format(tsLayout) }

// minBusBW is NCCL_TESTS_MIN_BW, the average bus bandwidth (GB/s) below
// whose 90% nccl-tests fails a run, for health checks.
func minBusBW() (float64, bool) {
	v, err := strconv.ParseFloat(os.Getenv("NCCL_TESTS_MIN_BW"), 64)
	return v, err == nil && v > 0
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// versionLine and captureEnv are variables so that golden tests fix what
// differs between machines and builds.
var (
	versionLine = buildVersion
	captureEnv  = func() *results.Env { return ptr(results.CaptureEnv()) }
)

// buildVersion is this build's version line, as --version prints it.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	return version(bi, ok)
}

func ptr[T any](v T) *T { return &v }
